import type { StackConfig } from "./config.js";
import { HOST } from "./lib/ports.js";
import { stackTlsPaths } from "./lib/tls.js";
import { registryHttpsUrl } from "./servers/registry.js";

/**
 * The secured stack's endpoints (STACK_SECURE=1), beside the plain ones: Kafka over SASL_SSL with
 * SCRAM-SHA-512, Neo4j Bolt with TLS on its usual port, the registry over HTTPS. Every server presents
 * a certificate signed by the stack's own CA (`caFile`), generated at the first secured start.
 *
 * Environment for the projector: KAFKA_BROKERS, KAFKA_SSL_CA_FILE, KAFKA_SASL_MECHANISM=scram-sha-512,
 * KAFKA_SASL_USERNAME/PASSWORD, NEO4J_URI with NEO4J_TRUSTED_CA_FILE, SCHEMA_REGISTRY_URL with
 * SCHEMA_REGISTRY_CA_FILE (see secureProjectorEnv).
 */
export interface SecureEndpoints {
  caFile: string;
  kafkaBrokers: string[];
  kafkaScramUser: string;
  kafkaScramPassword: string;
  neo4jUri: string;
  schemaRegistryUrl: string;
}

export function secureEndpoints(cfg: StackConfig): SecureEndpoints {
  return {
    caFile: stackTlsPaths(cfg).caCert,
    kafkaBrokers: [`${HOST}:${cfg.kafkaSaslSslPort}`],
    kafkaScramUser: cfg.kafkaScram.user,
    kafkaScramPassword: cfg.kafkaScram.password,
    neo4jUri: `bolt://${HOST}:${cfg.neo4jBoltPort}`,
    schemaRegistryUrl: registryHttpsUrl(cfg),
  };
}

/** The projector's environment for the secured endpoints (Neo4j credentials as the plain stack's). */
export function secureProjectorEnv(cfg: StackConfig): Record<string, string> {
  const e = secureEndpoints(cfg);
  return {
    KAFKA_BROKERS: e.kafkaBrokers.join(","),
    KAFKA_SSL_CA_FILE: e.caFile,
    KAFKA_SASL_MECHANISM: "scram-sha-512",
    KAFKA_SASL_USERNAME: e.kafkaScramUser,
    KAFKA_SASL_PASSWORD: e.kafkaScramPassword,
    NEO4J_URI: e.neo4jUri,
    NEO4J_TRUSTED_CA_FILE: e.caFile,
    NEO4J_USER: cfg.neo4jUser,
    NEO4J_PASSWORD: cfg.neo4jPassword,
    SCHEMA_REGISTRY_URL: e.schemaRegistryUrl,
    SCHEMA_REGISTRY_CA_FILE: e.caFile,
  };
}
