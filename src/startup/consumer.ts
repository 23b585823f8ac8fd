import type { Producer } from "kafkajs";
import { type CatchUpHold, createCatchUpHold } from "../adapters/kafka/catch-up-hold.js";
import { createProducer } from "../adapters/kafka/client.js";
import { createProjectorConsumer, type ProjectorConsumer } from "../adapters/kafka/consumer.js";
import {
  createFindingPublisher,
  type FindingPublisher,
  findingOutboxes,
  noFindingPublisher,
} from "../adapters/kafka/finding-publisher.js";
import { createLagMonitor, type LagMonitor } from "../adapters/kafka/lag-monitor.js";
import { createRecordSink } from "../adapters/kafka/record-sink.js";
import { createUpstreamProgress } from "../adapters/kafka/upstream-progress.js";
import type { PrometheusMetrics } from "../adapters/metrics/prometheus.js";
import { findingSchemaId, findingsSubject } from "../adapters/registry/findings-subject.js";
import { createSchemaRegistry } from "../adapters/registry/schema-registry.js";
import { validationRules } from "../model/validate.js";
import { type BatchDeps, processBatch } from "../pipeline/process-batch.js";
import type { Decoder, GraphWriter } from "../ports.js";
import { redactUserinfo } from "../redact.js";
import { consumedTopics, type Stream, type TopicNames } from "../topics.js";
import { SERVICE_VERSION } from "../version.js";
import type { OpenKafka } from "./connect.js";
import type { StartupContext } from "./context.js";

export interface BuiltConsumer {
  readonly producer: Producer;
  readonly consumer: ProjectorConsumer;
  readonly hold: CatchUpHold;
  readonly lag: LagMonitor;
  readonly batchDeps: BatchDeps;
  /** Publishes the findings outbox after commits; serving sweeps it once at start. */
  readonly findings: FindingPublisher;
  /** Rejects with the first error the consumer cannot go on after. */
  readonly fatal: Promise<never>;
}

/**
 * The consumer phase: the producer and record sink for what is deferred or dead-lettered, the
 * batch pipeline's dependencies, the lag monitor and catch-up hold, and the consumer over them,
 * built but not yet joined to its group (that is serving).
 */
export async function buildConsumer(
  ctx: StartupContext,
  { kafka, admin, brokers }: OpenKafka,
  names: TopicNames,
  parts: {
    readonly metrics: PrometheusMetrics;
    readonly decoder: Decoder;
    readonly graph: GraphWriter;
    readonly databases: ReadonlyMap<string, string>;
    readonly maxMessageBytes: ReadonlyMap<string, number>;
  },
): Promise<BuiltConsumer> {
  const { config, logger, clock } = ctx;
  const { metrics } = parts;
  const producer = createProducer(kafka);
  ctx.opened(() => producer.disconnect());
  await ctx.step(brokers, () => producer.connect());
  const sink = createRecordSink(producer, names, SERVICE_VERSION, {
    onDeadLetter: (topic) => metrics.recordDeadLetterPublished(topic),
    maxMessageBytes: parts.maxMessageBytes,
    logger,
  });

  if (config.terminalAgentIds.length === 0)
    logger.warn(
      {},
      "no control terminals configured (TERMINAL_AGENT_IDS): reachability is not judged, no terminal-unreachable findings",
    );
  const findings = config.findingsEnabled
    ? await buildFindingPublisher(ctx, names, parts, producer)
    : noFindingPublisher;

  let failWith: (error: unknown) => void = () => {};
  const fatal = new Promise<never>((_, reject) => {
    failWith = reject;
  });
  fatal.catch(() => {});

  const batchDeps: BatchDeps = {
    decoder: parts.decoder,
    graph: parts.graph,
    sink,
    metrics,
    clock,
    logger,
    rules: validationRules(config.tenants, config.limits),
    databases: parts.databases,
    defaultTenant: config.tenants[0]?.tenantId ?? "default",
    retry: config.retry,
    upstream: createUpstreamProgress(admin, config.kafka.group, names),
    recordFindings: config.findingsEnabled,
    findings,
  };
  // One poller of the group's lag: the catch-up hold asks it when it must decide, the gauges hear every answer.
  const lag = createLagMonitor(admin, config.kafka.group, consumedTopics(names), logger, clock);
  lag.onLag(() => metrics.recordLagPoll());
  const hold = createCatchUpHold(lag.poll, names, config.catchUpHold, logger, { clock });
  ctx.opened(async () => hold.stop());
  const consumer = createProjectorConsumer(
    kafka,
    names,
    {
      groupId: config.kafka.group,
      partitionsConsumedConcurrently: config.kafka.partitionsConsumedConcurrently,
      maxBatchRecords: config.batch.maxRecords,
      backlogBatchRecords: config.batch.backlogMaxRecords,
      fetchMaxBytesPerPartition: config.kafka.fetchMaxBytesPerPartition,
      fetchMaxBytes: config.kafka.fetchMaxBytes,
      sessionTimeoutMs: config.kafka.sessionTimeoutMs,
      isHeld: hold.isHeld,
      admitsBefore: hold.admitsBefore,
      // §3.1/§3.2 lock the agent and every agent on its escalation path, so registry batches of two
      // partitions deadlock on each other more often than not; applied one at a time, they don't.
      serialStreams: new Set<Stream>(["registry-mutation"]),
      writesPerStream: config.neo4j.maxConcurrentWrites,
      onCommitted: hold.committed,
    },
    {
      handle: (stream, records, progress) => processBatch(stream, records, batchDeps, progress),
      metrics,
      logger,
      clock,
      onFatal: (error) => failWith(error),
    },
  );
  hold.onLifted((streams) => consumer.releaseHeld(streams));
  hold.onAdvanced((stream, before) => consumer.releaseHeld([stream], before));
  hold.useLocalLag(() => consumer.lagSeen());
  return { producer, consumer, hold, lag, batchDeps, findings, fatal };
}

async function buildFindingPublisher(
  ctx: StartupContext,
  names: TopicNames,
  parts: { readonly metrics: PrometheusMetrics; readonly graph: GraphWriter },
  producer: Producer,
): Promise<FindingPublisher> {
  const { config, logger } = ctx;
  // The findings subject is ours: registered here when missing, whatever REGISTER_SCHEMAS says.
  const subject = findingsSubject(names.findings);
  const schemaId = await ctx.step(
    `schema registry at ${redactUserinfo(config.registry.url)} (subject ${subject})`,
    () => findingSchemaId(config, names.findings),
  );
  const findings = createFindingPublisher({
    graph: parts.graph,
    outboxes: findingOutboxes(config.tenants),
    producer,
    registry: createSchemaRegistry(config.registry),
    schemaId,
    topic: names.findings,
    logger,
    metrics: parts.metrics,
  });
  ctx.opened(() => findings.stop());
  return findings;
}
