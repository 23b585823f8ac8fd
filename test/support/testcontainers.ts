import { GenericContainer, Network, type StartedTestContainer, Wait } from "testcontainers";
import type { TestEndpoints } from "./global-setup.js";

const PASSWORD = "projector-test-pw";

/**
 * The same three servers in containers, for machines with a Docker engine (STACK=testcontainers):
 * Apache Kafka 4.1 in KRaft mode, Neo4j 5.26 Community and Confluent's schema registry.
 */
export async function startContainers(): Promise<{ endpoints: TestEndpoints; stop: () => Promise<void> }> {
  const network = await new Network().start();
  const kafka = await new GenericContainer("apache/kafka:4.1.1")
    .withNetwork(network)
    .withNetworkAliases("kafka")
    .withExposedPorts({ container: 9092, host: 39092 })
    .withEnvironment({
      KAFKA_NODE_ID: "1",
      KAFKA_PROCESS_ROLES: "broker,controller",
      KAFKA_LISTENERS: "PLAINTEXT://:9092,INTERNAL://:29092,CONTROLLER://:9093",
      KAFKA_ADVERTISED_LISTENERS: "PLAINTEXT://127.0.0.1:39092,INTERNAL://kafka:29092",
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
      KAFKA_INTER_BROKER_LISTENER_NAME: "INTERNAL",
      KAFKA_CONTROLLER_LISTENER_NAMES: "CONTROLLER",
      KAFKA_CONTROLLER_QUORUM_VOTERS: "1@kafka:9093",
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: "1",
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: "0",
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: "false",
      // As the local stack: retention and compaction within seconds (the rebuild test waits for both).
      KAFKA_LOG_RETENTION_CHECK_INTERVAL_MS: "5000",
      KAFKA_LOG_CLEANER_BACKOFF_MS: "1000",
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .start();
  const registry = await new GenericContainer("confluentinc/cp-schema-registry:7.7.1")
    .withNetwork(network)
    .withExposedPorts(8081)
    .withEnvironment({
      SCHEMA_REGISTRY_HOST_NAME: "schema-registry",
      SCHEMA_REGISTRY_LISTENERS: "http://0.0.0.0:8081",
      SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS: "PLAINTEXT://kafka:29092",
    })
    .withWaitStrategy(Wait.forHttp("/subjects", 8081))
    .start();
  const neo4j = await new GenericContainer("neo4j:5.26-community")
    .withExposedPorts(7687)
    .withEnvironment({ NEO4J_AUTH: `neo4j/${PASSWORD}`, NEO4J_server_memory_heap_max__size: "1G" })
    .withWaitStrategy(Wait.forLogMessage(/Started\./))
    .start();
  const containers: StartedTestContainer[] = [neo4j, registry, kafka];
  return {
    endpoints: {
      kafkaBrokers: ["127.0.0.1:39092"],
      neo4jUri: `bolt://${neo4j.getHost()}:${neo4j.getMappedPort(7687)}`,
      neo4jUser: "neo4j",
      neo4jPassword: PASSWORD,
      schemaRegistryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8081)}`,
    },
    async stop() {
      for (const container of containers) await container.stop();
      await network.stop();
    },
  };
}
