/** What the timed loads of one benchmark run share. */
import type { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import type { Admin, Kafka, Producer } from "kafkajs";
import type { Driver } from "neo4j-driver";
import { ensureTopics, topicSpecs } from "../../src/adapters/kafka/admin.js";
import { registerFindingSchema } from "../../src/adapters/registry/findings-subject.js";
import { registerSchemas } from "../../src/adapters/registry/schema-registry.js";
import type { Config } from "../../src/config.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import { type Stream, type TopicNames, topicNames } from "../../src/topics.js";
import type { EventLog, WorkloadSize } from "../../workload/generate.js";
import { PARTITIONS } from "../args.js";
import type { LoadProducer } from "../lib/load-producer.js";

/** What every load of one benchmark run shares: its clients, names and the workload published before any clock starts. */
export interface BenchRun {
  readonly config: Config;
  /** Every topic and group of this run starts with it. */
  readonly prefix: string;
  /** The projector's environment for this run (child processes add their group and topics). */
  readonly baseEnv: Record<string, string>;
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly producer: Producer;
  /** The steady loads' producer, one per load (lib/load-producer.ts). */
  openLoadProducer(): LoadProducer;
  readonly registry: SchemaRegistry;
  readonly driver: Driver;
  readonly database: string;
  /** Pids of the servers, for CPU accounting. */
  readonly servers: Record<string, number | null>;
  readonly log: EventLog;
  readonly size: WorkloadSize;
  readonly events: readonly ProjectorEvent[];
  readonly counts: Record<Stream, number>;
}

/**
 * Source topics of this run's own for one load (`<prefix>-<label>.<stream>`), created with the run's
 * partitions, and their schemas registered; with `ownFindingsTopic` the findings topic too
 * (`<prefix>-<label>.governance-findings`, which the projector must then be given).
 */
export async function loadTopics(
  run: BenchRun,
  label: string,
  options: { ownFindingsTopic?: boolean } = {},
): Promise<{ names: TopicNames; ids: Awaited<ReturnType<typeof registerSchemas>> }> {
  const names = topicNames({
    ...run.config.topics,
    // Each load runs its projector in the group `<prefix>-<label>`, which names its retry and dead-letter topics.
    scope: run.config.topics.scope === undefined ? undefined : `${run.prefix}-${label}`,
    registryMutation: `${run.prefix}-${label}.registry-mutation`,
    outcomeCreated: `${run.prefix}-${label}.outcome-created`,
    escalationEdge: `${run.prefix}-${label}.escalation-edge`,
    // A steady load reads its findings back (their freshness), so they must be its own.
    ...(options.ownFindingsTopic ? { findings: `${run.prefix}-${label}.governance-findings` } : {}),
  });
  await ensureTopics(run.admin, topicSpecs(names, { partitions: PARTITIONS, replicationFactor: 1 }));
  await registerFindingSchema(run.config.registry, names.findings);
  return { names, ids: await registerSchemas(run.config.registry, names.source) };
}

/** The projector's env naming a load's source topics. */
export function sourceTopicEnv(names: TopicNames): Record<string, string> {
  return {
    TOPIC_REGISTRY_MUTATION: names.source["registry-mutation"],
    TOPIC_OUTCOME_CREATED: names.source["outcome-created"],
    TOPIC_ESCALATION_EDGE: names.source["escalation-edge"],
  };
}
