import { randomUUID } from "node:crypto";
import { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import { type Admin, Kafka, logLevel } from "kafkajs";
import neo4j, { type Driver } from "neo4j-driver";
import { inject } from "vitest";
import { ensureTopics, findingsTopicSpec, replicationFor, topicSpecs } from "../../src/adapters/kafka/admin.js";
import { createProducer, sendBatchAtLeastOnce } from "../../src/adapters/kafka/client.js";
import { publishEvents, streamOf, toMessage } from "../../src/adapters/kafka/event-publisher.js";
import { fetchLag } from "../../src/adapters/kafka/group-admin.js";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { createRecordSink } from "../../src/adapters/kafka/record-sink.js";
import { dumpGraph } from "../../src/adapters/neo4j/dump.js";
import { createGraphWriter } from "../../src/adapters/neo4j/graph-writer.js";
import { migrate } from "../../src/adapters/neo4j/migrate.js";
import { registerFindingSchema } from "../../src/adapters/registry/findings-subject.js";
import { registerSchemas } from "../../src/adapters/registry/schema-registry.js";
import { type Config, loadConfig } from "../../src/config.js";
import { errorMessage, neo4jCode } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import type { CanonicalGraph } from "../../src/model/graph.js";
import { noopMetrics, type RecordSink } from "../../src/ports.js";
import { type RunningService, startService } from "../../src/service.js";
import { consumedTopics, HEADER, type Stream, type TopicNames, topicNames } from "../../src/topics.js";

/** The environment a spec's projector runs with: its own topics and group, the shared servers. */
export function testEnv(prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  const endpoints = inject("endpoints");
  const id = `${prefix}-${randomUUID().slice(0, 8)}`;
  return {
    KAFKA_BROKERS: endpoints.kafkaBrokers.join(","),
    NEO4J_URI: endpoints.neo4jUri,
    NEO4J_USER: endpoints.neo4jUser,
    NEO4J_PASSWORD: endpoints.neo4jPassword,
    SCHEMA_REGISTRY_URL: endpoints.schemaRegistryUrl,
    CONSUMER_GROUP: `group-${id}`,
    TOPIC_REGISTRY_MUTATION: `${id}.registry-mutation`,
    TOPIC_OUTCOME_CREATED: `${id}.outcome-created`,
    TOPIC_ESCALATION_EDGE: `${id}.escalation-edge`,
    TOPIC_GOVERNANCE_FINDINGS: `${id}.governance-findings`,
    TOPIC_PARTITIONS: "3",
    METRICS_PORT: "0",
    METRICS_HOST: "127.0.0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn",
    LAG_REFRESH_MS: "1000",
    RETRY_BACKOFF_MS: "100",
    RETRY_BACKOFF_MAX_MS: "1000",
    // The generated workloads' control terminals (workload/generate.ts); the service has none by default.
    TERMINAL_AGENT_IDS: "os-agt-001,os-agt-004",
    ...extra,
  };
}

/** A record of a dead-letter topic, headers as text. */
export interface DeadLetter {
  readonly key: string | null;
  readonly value: Buffer | null;
  readonly partition: number;
  readonly headers: Record<string, string>;
}

/** Kafka, registry and Neo4j clients for one spec, with the helpers specs share. */
export class Harness {
  readonly config: Config;
  readonly names: TopicNames;
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly registry: SchemaRegistry;
  readonly driver: Driver;
  readonly graph = (): ReturnType<typeof createGraphWriter> => createGraphWriter(this.driver, noopMetrics, 60_000);
  private schemaIds: Record<Stream, number> | undefined;
  private readonly producer;
  private services: RunningService[] = [];

  constructor(readonly env: Record<string, string>) {
    this.config = loadConfig(env);
    this.names = topicNames(this.config.topics);
    this.kafka = new Kafka({
      clientId: "test-harness",
      brokers: [...this.config.kafka.brokers],
      logLevel: logLevel.NOTHING,
    });
    this.admin = this.kafka.admin();
    this.producer = createProducer(this.kafka);
    this.registry = new SchemaRegistry({ host: this.config.registry.url });
    this.driver = neo4j.driver(
      this.config.neo4j.uri,
      neo4j.auth.basic(this.config.neo4j.user, this.config.neo4j.password ?? ""),
    );
  }

  /**
   * A spec's clients over fresh topics. The harness plays the producers' part and registers the reader
   * schemas under the new subjects, unless `registerSchemas` is false (a spec that sets the subjects
   * up itself, then hands the ids to useSchemaIds). The findings schema is registered either way, as
   * `schemas` does before a service that may not register runs.
   */
  static async create(
    prefix: string,
    extra: Record<string, string> = {},
    options: { registerSchemas?: boolean } = {},
  ): Promise<Harness> {
    const harness = new Harness(testEnv(prefix, extra));
    await harness.admin.connect();
    await harness.producer.connect();
    const layout = {
      partitions: harness.config.topics.partitions,
      ...(await replicationFor(harness.admin, harness.config.topics.replicationFactor)),
    };
    await ensureTopics(
      harness.admin,
      // The cluster's default replication (one copy on the local single broker, three on a cluster).
      [...topicSpecs(harness.names, layout), findingsTopicSpec(harness.names, layout)],
    );
    if (options.registerSchemas !== false)
      harness.schemaIds = await registerSchemas(harness.config.registry, harness.names.source);
    // The findings subject is the operator's (set up by `schemas`), whoever owns the source subjects.
    await registerFindingSchema(harness.config.registry, harness.names.findings);
    return harness;
  }

  /**
   * A spec's Neo4j alone, over an empty graph with the one-tenant constraints as the service creates
   * them (a spec before may have switched the database to the shared-database ones); closeGraph ends it.
   */
  static async forGraph(prefix: string): Promise<Harness> {
    const harness = new Harness(testEnv(prefix));
    await harness.clearGraph();
    await migrate(harness.driver, [harness.config.neo4j.database]);
    return harness;
  }

  async closeGraph(): Promise<void> {
    await this.clearGraph();
    await this.driver.close();
  }

  /** Registers a schema version under a source topic's subject as a producer would: its level untouched. */
  async registerVersion(stream: Stream, schema: object): Promise<number> {
    const subject = encodeURIComponent(`${this.names.source[stream]}-value`);
    const response = await fetch(`${this.config.registry.url}/subjects/${subject}/versions`, {
      method: "POST",
      headers: { "content-type": "application/vnd.schemaregistry.v1+json" },
      body: JSON.stringify({ schema: JSON.stringify(schema) }),
    });
    const body = (await response.json()) as { id?: number; message?: string };
    if (!response.ok || typeof body.id !== "number")
      throw new Error(`registering under ${subject}: HTTP ${response.status} ${body.message ?? ""}`);
    return body.id;
  }

  useSchemaIds(ids: Record<Stream, number>): void {
    this.schemaIds = ids;
  }

  async publish(events: readonly ProjectorEvent[]): Promise<void> {
    if (!this.schemaIds) throw new Error("harness not created with Harness.create");
    await publishEvents(this.producer, this.registry, this.schemaIds, this.names, events);
  }

  /**
   * Publishes late copies of events the way the projector's retry topics and `dlq redrive` carry
   * them: on the stream's retry topic, naming a source record, due at once.
   */
  async publishLate(events: readonly ProjectorEvent[]): Promise<void> {
    if (!this.schemaIds) throw new Error("harness not created with Harness.create");
    const schemaIds = this.schemaIds;
    for (const event of events) {
      const stream = streamOf(event);
      const message = await toMessage(this.registry, schemaIds, event);
      await this.producer.send({
        topic: this.names.retry[stream],
        acks: -1,
        messages: [
          {
            ...message,
            headers: {
              ...(message.headers ?? {}),
              [HEADER.sourceTopic]: this.names.source[stream],
              [HEADER.sourcePartition]: "0",
              [HEADER.sourceOffset]: "0",
            },
          },
        ],
      });
    }
  }

  async sendRaw(
    topic: string,
    messages: {
      key: string | null;
      value: Buffer | null;
      headers?: Record<string, string>;
      partition?: number;
      /** The record's own time (ms, as a string); the broker's clock when absent. */
      timestamp?: string;
    }[],
  ): Promise<void> {
    await sendBatchAtLeastOnce(this.producer, { topicMessages: [{ topic, messages }] });
  }

  /** An event as a producer would frame it, with the schema ids this harness registered. */
  async encode(event: ProjectorEvent): Promise<{ key: string | null; value: Buffer | null }> {
    if (!this.schemaIds) throw new Error("harness not created with Harness.create");
    return (await toMessage(this.registry, this.schemaIds, event)) as { key: string | null; value: Buffer | null };
  }

  /** The retry and dead-letter topics of this spec, as the service hands records to them. */
  sink(): RecordSink {
    return createRecordSink(this.producer, this.names, "test");
  }

  /** Everything on the three dead-letter topics so far. */
  async deadLetters(): Promise<DeadLetter[]> {
    const out: DeadLetter[] = [];
    await readTopicsToEnd(this.kafka, Object.values(this.names.deadLetter), ({ partition, key, value, headers }) => {
      const text: Record<string, string> = {};
      for (const [name, header] of Object.entries(headers)) text[name] = String(header);
      out.push({ key: key?.toString() ?? null, value, partition, headers: text });
    });
    return out;
  }

  async startProjector(extraEnv: Record<string, string> = {}): Promise<RunningService> {
    const config = loadConfig({ ...this.env, ...extraEnv });
    const service = await startService(config, createLogger(config.logLevel));
    this.services.push(service);
    return service;
  }

  /** Waits until the group has committed every record of the source and retry topics. */
  async waitForCaughtUp(timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      try {
        const lags = await fetchLag(this.admin, this.config.kafka.group, consumedTopics(this.names));
        const behind = lags.filter((entry) => entry.lag > 0);
        if (behind.length === 0) return;
        last = JSON.stringify(behind);
      } catch (error) {
        // Leadership moves (a new topic's partitions, a restarted broker): refresh metadata and ask again.
        last = String(error);
        await this.admin.fetchTopicMetadata({ topics: consumedTopics(this.names) }).catch(() => {});
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`projector did not catch up within ${timeoutMs} ms; lag: ${last}`);
  }

  async dump(): Promise<CanonicalGraph> {
    return dumpGraph(this.graph(), this.config.neo4j.database);
  }

  /**
   * One DETACH DELETE (retried on transient errors, as a projector may still be writing); a graph the
   * bench left behind (hundreds of thousands of nodes) is more than the stack's 256 MiB of transaction
   * memory for it, and is deleted in batches, relationships first.
   */
  async clearGraph(): Promise<void> {
    const database = this.config.neo4j.database;
    try {
      await this.driver.executeQuery("MATCH (n) DETACH DELETE n", {}, { database });
      return;
    } catch (error) {
      if (!/MemoryPoolOutOfMemory|memory\.transaction/i.test(`${neo4jCode(error)} ${errorMessage(error)}`)) throw error;
    }
    const session = this.driver.session({ database });
    try {
      await session.run("MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS");
      await session.run("MATCH (n) CALL (n) { DELETE n } IN TRANSACTIONS OF 10000 ROWS");
    } finally {
      await session.close();
    }
  }

  async stopProjectors(): Promise<void> {
    for (const service of this.services) await service.stop("test done");
    this.services = [];
  }

  async close(): Promise<void> {
    await this.stopProjectors();
    await this.producer.disconnect();
    await this.admin.disconnect();
    await this.driver.close();
  }
}
