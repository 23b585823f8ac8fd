import type { TestProject } from "vitest/node";

export interface TestEndpoints {
  kafkaBrokers: string[];
  neo4jUri: string;
  neo4jUser: string;
  neo4jPassword: string;
  schemaRegistryUrl: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    endpoints: TestEndpoints;
  }
}

/**
 * Real servers for integration and end-to-end specs, started once per run:
 * - KAFKA_BROKERS, NEO4J_URI and SCHEMA_REGISTRY_URL set: the user's own servers;
 * - STACK=testcontainers (and a Docker engine): Kafka, Neo4j and a schema registry in containers;
 * - otherwise the project's local stack (`npm run stack:up`), stopped again afterwards if this run
 *   started it (STACK_KEEP=1 keeps it for the next run).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const env = process.env;
  const own = ownServers(env);
  if (own) {
    project.provide("endpoints", own);
    return async () => {};
  }
  if (env.STACK === "testcontainers") {
    const { startContainers } = await import("./testcontainers.js");
    const { endpoints, stop } = await startContainers();
    project.provide("endpoints", endpoints);
    return stop;
  }
  const { stackUp, stackDown } = await import("../../stack/api.js");
  const up = await stackUp({ log: (line) => console.log(`[stack] ${line}`) });
  project.provide("endpoints", endpointsOf(up));
  return async () => {
    if (up.startedAnything && env.STACK_KEEP !== "1")
      await stackDown({ log: (line) => console.log(`[stack] ${line}`) });
  };
}

/** The user's own servers, when KAFKA_BROKERS, NEO4J_URI and SCHEMA_REGISTRY_URL are all set. */
export function ownServers(env: NodeJS.ProcessEnv): TestEndpoints | undefined {
  if (!(env.KAFKA_BROKERS && env.NEO4J_URI && env.SCHEMA_REGISTRY_URL)) return undefined;
  return {
    kafkaBrokers: env.KAFKA_BROKERS.split(","),
    neo4jUri: env.NEO4J_URI,
    neo4jUser: env.NEO4J_USER ?? "neo4j",
    neo4jPassword: env.NEO4J_PASSWORD ?? "",
    schemaRegistryUrl: env.SCHEMA_REGISTRY_URL,
  };
}

/** The endpoints of a local stack that is up. */
export function endpointsOf(up: TestEndpoints): TestEndpoints {
  return {
    kafkaBrokers: up.kafkaBrokers,
    neo4jUri: up.neo4jUri,
    neo4jUser: up.neo4jUser,
    neo4jPassword: up.neo4jPassword,
    schemaRegistryUrl: up.schemaRegistryUrl,
  };
}
