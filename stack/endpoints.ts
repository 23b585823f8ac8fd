import { SERVER_NAMES, type ServerName, type StackConfig } from "./config.js";
import { kafkaEndpoints } from "./servers/kafka.js";
import { neo4jUri } from "./servers/neo4j.js";
import { registryUrl } from "./servers/registry.js";

export interface StackEndpoints {
  kafkaBrokers: string[];
  neo4jUri: string;
  neo4jUser: string;
  neo4jPassword: string;
  schemaRegistryUrl: string;
}

export function endpointsOf(cfg: StackConfig): StackEndpoints {
  return {
    kafkaBrokers: kafkaEndpoints(cfg),
    neo4jUri: neo4jUri(cfg),
    neo4jUser: cfg.neo4jUser,
    neo4jPassword: cfg.neo4jPassword,
    schemaRegistryUrl: registryUrl(cfg),
  };
}

/** The env lines a shell or the projector reads; only for the selected servers. */
export function envLines(e: StackEndpoints, services: readonly ServerName[] = SERVER_NAMES): string[] {
  const lines: string[] = [];
  if (services.includes("kafka")) lines.push(`KAFKA_BROKERS=${e.kafkaBrokers.join(",")}`);
  if (services.includes("registry")) lines.push(`SCHEMA_REGISTRY_URL=${e.schemaRegistryUrl}`);
  if (services.includes("neo4j")) {
    lines.push(`NEO4J_URI=${e.neo4jUri}`, `NEO4J_USER=${e.neo4jUser}`, `NEO4J_PASSWORD=${e.neo4jPassword}`);
  }
  return lines;
}
