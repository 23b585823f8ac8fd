import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createHealth } from "./adapters/http/health.js";
import { type HealthChecks, startHttpServer } from "./adapters/http/server.js";
import {
  ensureTopics,
  requireOwnTopics,
  requireSourceTopics,
  sourceReplication,
  topicConfigNumbers,
  topicSpecs,
} from "./adapters/kafka/admin.js";
import { createCatchUpHold } from "./adapters/kafka/catch-up-hold.js";
import { createKafka, createProducer } from "./adapters/kafka/client.js";
import { createProjectorConsumer, type ProjectorConsumer } from "./adapters/kafka/consumer.js";
import { createLagMonitor } from "./adapters/kafka/lag-monitor.js";
import { createTopicReader } from "./adapters/kafka/read-topic.js";
import { createRecordSink } from "./adapters/kafka/record-sink.js";
import { raiseHandOffLimits } from "./adapters/kafka/topic-limits.js";
import { createUpstreamProgress } from "./adapters/kafka/upstream-progress.js";
import { createLagGauges } from "./adapters/metrics/lag-gauges.js";
import { createPrometheusMetrics, type PrometheusMetrics } from "./adapters/metrics/prometheus.js";
import { createDriver, createGraphWriter } from "./adapters/neo4j/graph-writer.js";
import { migrate, verifyMigrated } from "./adapters/neo4j/migrate.js";
import {
  checkRegistry,
  createAvroDecoder,
  createRegistryPing,
  createSchemaRegistry,
  registerSchemas,
} from "./adapters/registry/schema-registry.js";
import { type Config, sharedDatabases } from "./config.js";
import { errorMessage } from "./errors.js";
import type { AppLogger } from "./logger.js";
import { validationRules } from "./model/validate.js";
import { type BatchDeps, processBatch } from "./pipeline/process-batch.js";
import { type Clock, systemClock, systemSleep } from "./ports.js";
import { reconcileRegistry } from "./reconcile/reconcile.js";
import { scheduleReconciliation } from "./reconcile/schedule.js";
import { StartupError, StartupStopped, untilDeadline } from "./startup.js";
import { consumedTopics, ownTopicNames, roleOfTopic, STREAMS, type Stream, topicNames } from "./topics.js";
import { SERVICE_VERSION } from "./version.js";

export interface RunningService {
  readonly metrics: PrometheusMetrics;
  readonly consumer: ProjectorConsumer;
  readonly metricsPort: number;
  /** Resolves when the service stopped, by stop() or by a fatal error (then it rejects). */
  readonly done: Promise<void>;
  stop(reason?: string): Promise<void>;
}

/** Liveness fails when a partition with records waiting has not committed (or paused on purpose) for this long. */
const WEDGED_AFTER_MS = 5 * 60_000;
/** How often readiness is checked (Neo4j `RETURN 1`, the registry's `/subjects`), and each check's bound. */
const READY_CHECK_MS = 5_000;
const READY_CHECK_TIMEOUT_MS = 3_000;

/**
 * The composition root: configuration in, a running projector out. Every adapter is created here and
 * handed to what needs it; nothing else reaches for a global.
 */
export async function startService(
  config: Config,
  logger: AppLogger,
  clock: Clock = systemClock,
  stopStartup?: AbortSignal,
): Promise<RunningService> {
  // What start-up has opened so far, closed in reverse order if a later step fails, so that a failed
  // start leaves nothing behind that keeps the process alive.
  const opened: (() => Promise<unknown>)[] = [];
  try {
    return await startOrFail(config, logger, clock, opened, stopStartup);
  } catch (error) {
    for (const close of opened.reverse()) await close().catch(() => {});
    if (error instanceof StartupError || error instanceof StartupStopped) throw error;
    throw new StartupError(errorMessage(error), { cause: error });
  }
}

async function startOrFail(
  config: Config,
  logger: AppLogger,
  clock: Clock,
  opened: (() => Promise<unknown>)[],
  stopStartup: AbortSignal | undefined,
): Promise<RunningService> {
  const deadlineAt = clock.now() + config.startupTimeoutMs;
  /** One start-up step, tried until the deadline (startup.ts); a stop request ends it at once. */
  const step = <T>(what: string, attempt: () => Promise<T>): Promise<T> =>
    untilDeadline(what, deadlineAt, attempt, clock, systemSleep, stopStartup);
  const names = topicNames(config.topics);
  const metrics = createPrometheusMetrics({
    version: SERVICE_VERSION,
    retryMaxAgeMs: config.retry.maxAgeMs,
    topics: { consumed: consumedTopics(names), deadLetter: Object.values(names.deadLetter) },
  });
  const databases = new Map(config.tenants.map((route) => [route.tenantId, route.database]));

  // The HTTP server first: a port already taken is found before anything else is connected, and
  // /metrics answers while the rest starts. Readiness stays false until the consumer has joined.
  let probes: Omit<HealthChecks, "started"> | undefined;
  let started = false;
  const server: Server = await startHttpServer(
    metrics.registry,
    {
      started: () => started,
      live: () => probes?.live() ?? { ok: true, detail: { starting: true } },
      ready: async () => (probes ? probes.ready() : { ok: false, detail: { starting: true } }),
    },
    config.metrics.host,
    config.metrics.port,
  ).catch((error: NodeJS.ErrnoException) => {
    throw new StartupError(
      error.code === "EADDRINUSE"
        ? `metrics port ${config.metrics.host}:${config.metrics.port} is already in use (METRICS_PORT)`
        : `metrics server on ${config.metrics.host}:${config.metrics.port}: ${error.message}`,
    );
  });
  opened.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const metricsPort = (server.address() as AddressInfo).port;

  const driver = createDriver(config.neo4j);
  opened.push(() => driver.close());
  const graph = createGraphWriter(driver, metrics, config.neo4j.txTimeoutMs, config.neo4j.maxConcurrentWrites, {
    clock,
  });
  await step(`Neo4j at ${config.neo4j.uri}`, () =>
    (config.migrateOnStart ? migrate : verifyMigrated)(driver, databases.values(), sharedDatabases(config.tenants)),
  );
  logger.info({ databases: [...new Set(databases.values())] }, "constraints in place");

  await step(`schema registry at ${config.registry.url}`, () => checkRegistry(config.registry));
  if (config.registerSchemas) {
    const ids = await step("registering the reader schemas (REGISTER_SCHEMAS)", () =>
      registerSchemas(config.registry, names.source),
    );
    logger.info({ schemaIds: ids }, "reader schemas registered");
  }
  const registry = createSchemaRegistry(config.registry);
  const decoder = createAvroDecoder(registry, { missTtlMs: config.registry.missTtlMs, now: () => clock.now() });

  const kafka = createKafka(config.kafka, logger);
  const admin = kafka.admin();
  opened.push(() => admin.disconnect());
  const brokers = `Kafka at ${config.kafka.brokers.join(",")}`;
  await step(brokers, async () => {
    await admin.connect();
    // Confirming that a topic is missing may take 5 s, or half of what start-up has left.
    await requireSourceTopics(admin, names, Math.min(5_000, (deadlineAt - clock.now()) / 2));
  });
  // Retry and dead-letter topics are as durable as their source: same replication factor and
  // min.insync.replicas (the records in them are past the source offsets we commit).
  const replication = await step(brokers, () => sourceReplication(admin, names, STREAMS));
  if (config.createTopicsOnStart) {
    const ownTopics = topicSpecs(
      names,
      {
        partitions: config.topics.partitions,
        replicationFactor: config.topics.replicationFactor ?? 1,
        retryMaxAgeMs: config.retry.maxAgeMs,
      },
      replication,
    ).filter((spec) => roleOfTopic(names, spec.topic)?.role !== "source");
    const created = await step(brokers, () => ensureTopics(admin, ownTopics));
    if (created.length > 0) logger.info({ topics: created }, "created retry and dead-letter topics");
  } else {
    await step(brokers, () => requireOwnTopics(admin, names, Math.min(5_000, (deadlineAt - clock.now()) / 2)));
  }
  // The largest record batch each retry and dead-letter topic accepts, raised first where it is below
  // its source topic's (only where the service may manage its topics); the sink splits its sends below
  // it. A broker may not yet host a topic created a moment ago (UNKNOWN_TOPIC_OR_PARTITION): ask again.
  const maxMessageBytes = await step(brokers, () =>
    config.createTopicsOnStart
      ? raiseHandOffLimits(admin, names, replication, logger)
      : topicConfigNumbers(admin, ownTopicNames(names), "max.message.bytes"),
  );

  const producer = createProducer(kafka);
  opened.push(() => producer.disconnect());
  await step(brokers, () => producer.connect());
  const sink = createRecordSink(producer, names, SERVICE_VERSION, {
    onDeadLetter: (topic) => metrics.recordDeadLetterPublished(topic),
    maxMessageBytes,
    logger,
  });

  let failWith: (error: unknown) => void = () => {};
  const fatal = new Promise<never>((_, reject) => {
    failWith = reject;
  });
  fatal.catch(() => {});

  const batchDeps: BatchDeps = {
    decoder,
    graph,
    sink,
    metrics,
    clock,
    logger,
    rules: validationRules(config.tenants, config.limits),
    databases,
    defaultTenant: config.tenants[0]?.tenantId ?? "default",
    retry: config.retry,
    upstream: createUpstreamProgress(admin, config.kafka.group, names),
  };
  // One poller of the group's lag: the catch-up hold asks it when it must decide, the gauges hear every answer.
  const lagTopics = consumedTopics(names);
  const lag = createLagMonitor(admin, config.kafka.group, lagTopics, logger, clock);
  const hold = createCatchUpHold(lag.poll, names, config.catchUpHoldRecords, logger, { clock });
  opened.push(async () => hold.stop());
  const consumer = createProjectorConsumer(
    kafka,
    names,
    {
      groupId: config.kafka.group,
      partitionsConsumedConcurrently: config.kafka.partitionsConsumedConcurrently,
      maxBatchRecords: config.batch.maxRecords,
      fetchMaxBytesPerPartition: config.kafka.fetchMaxBytesPerPartition,
      fetchMaxBytes: config.kafka.fetchMaxBytes,
      isHeld: hold.isHeld,
      // §3.1/§3.2 lock the agent and every agent on its escalation path, so registry batches of two
      // partitions deadlock on each other more often than not; applied one at a time, they don't.
      serialStreams: new Set<Stream>(["registry-mutation"]),
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
  hold.useLocalLag(() => consumer.lagSeen());

  const health = createHealth({
    clock,
    consumer,
    pingNeo4j: () => graph.ping(),
    pingRegistry: createRegistryPing(config.registry, READY_CHECK_TIMEOUT_MS),
    setReady: (ready) => metrics.setReady(ready),
    checkTimeoutMs: READY_CHECK_TIMEOUT_MS,
    wedgedAfterMs: WEDGED_AFTER_MS,
  });
  probes = health;
  lag.onLag(createLagGauges(metrics, names, () => consumer.assignment()));
  lag.start(config.lagRefreshMs);
  opened.push(async () => lag.stop());

  const reconciliation = scheduleReconciliation({
    intervalMs: config.reconcileIntervalMs,
    tenants: config.tenants,
    reconcile: (route) =>
      reconcileRegistry({
        reader: createTopicReader(kafka),
        topic: names.source["registry-mutation"],
        decoder,
        graph,
        database: route.database,
        tenantId: route.tenantId,
        rules: batchDeps.rules,
        repair: false,
        scoped: sharedDatabases(config.tenants).has(route.database),
      }),
    setDrift: (tenant, kind, count) => metrics.setDrift(tenant, kind, count),
    logger,
  });
  opened.push(async () => reconciliation.stop());

  await health.check();
  health.start(READY_CHECK_MS);
  opened.push(async () => health.stop());

  await step(brokers, () => hold.start());
  opened.push(() => consumer.stop());
  await step(`${brokers} (joining group ${config.kafka.group})`, () => consumer.start());
  started = true;
  logger.info(
    { group: config.kafka.group, topics: lagTopics, metricsPort, version: SERVICE_VERSION },
    "projector running",
  );

  let stopping: Promise<void> | undefined;
  let resolveDone: () => void = () => {};
  let failed = false;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    fatal.catch(async (error) => {
      failed = true;
      await stop("fatal error").catch(() => {});
      reject(error);
    });
  });

  async function stop(reason = "stop requested"): Promise<void> {
    stopping ??= (async () => {
      logger.info({ reason }, "stopping: no new fetches, committing what was applied, leaving the group");
      lag.stop();
      health.stop();
      hold.stop();
      reconciliation.stop();
      await consumer.stop().catch((error) => logger.warn({ error: errorMessage(error) }, "consumer stop failed"));
      await producer.disconnect().catch(() => {});
      await admin.disconnect().catch(() => {});
      await driver.close().catch(() => {});
      await new Promise<void>((resolve) => server.close(() => resolve()));
      logger.info({}, "stopped");
      // After a fatal error `done` rejects (the process exits 1), whoever finished the stop.
      if (!failed) resolveDone();
    })();
    return stopping;
  }

  return { metrics, consumer, metricsPort, done, stop };
}
