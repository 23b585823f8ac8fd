export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How much bigger than the CI size the suite runs (FAULTS_SCALE=4: four times the records and faults). */
export const SCALE = Math.max(1, Number(process.env.FAULTS_SCALE ?? 1) || 1);

/** Server restarts need the project's own local stack; with servers of the user's own they are skipped. */
export const CAN_RESTART_SERVERS =
  !(process.env.KAFKA_BROKERS && process.env.NEO4J_URI && process.env.SCHEMA_REGISTRY_URL) &&
  process.env.STACK !== "testcontainers";
