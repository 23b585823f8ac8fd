import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type HealthChecks, startHttpServer } from "./adapters/http/server.js";
import { ensureTopics, fetchLag, sourceReplication, topicConfigNumbers, topicSpecs } from "./adapters/kafka/admin.js";
import { createCatchUpHold } from "./adapters/kafka/catch-up-hold.js";
import { createKafka, createProducer } from "./adapters/kafka/client.js";
import { createProjectorConsumer, type ProjectorConsumer } from "./adapters/kafka/consumer.js";
import { createTopicReader } from "./adapters/kafka/read-topic.js";
import { createRecordSink } from "./adapters/kafka/record-sink.js";
import { createUpstreamProgress } from "./adapters/kafka/upstream-progress.js";
import { createPrometheusMetrics, type PrometheusMetrics } from "./adapters/metrics/prometheus.js";
import { createDriver, createGraphWriter, migrate } from "./adapters/neo4j/graph-writer.js";
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
import { STREAMS } from "./model/schemas.js";
import { validationRules } from "./model/validate.js";
import type { BatchDeps } from "./pipeline/process-batch.js";
import { type Clock, type Stream, systemClock } from "./ports.js";
import { DRIFT_KINDS } from "./reconcile/drift.js";
import { reconcileRegistry } from "./reconcile/reconcile.js";
import { StartupError, untilDeadline } from "./startup.js";
import { consumedTopics, roleOfTopic, topicNames } from "./topics.js";
import { SERVICE_VERSION } from "./version.js";

export interface RunningService {
  readonly metrics: PrometheusMetrics;
  readonly consumer: ProjectorConsumer;
  readonly metricsPort: number;
  /** Resolves when the service stopped, by stop() or by a fatal error (then it rejects). */
  readonly done: Promise<void>;
  stop(reason?: string): Promise<void>;
}

/** Liveness fails when the consumer has neither fetched nor applied anything for this long. */
const WEDGED_AFTER_MS = 5 * 60_000;
/** How often readiness is checked (Neo4j `RETURN 1`, the registry's `/subjects`), and each check's bound. */
const READY_CHECK_MS = 5_000;
const READY_CHECK_TIMEOUT_MS = 3_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The composition root: configuration in, a running projector out. Every adapter is created here and
 * handed to what needs it; nothing else reaches for a global.
 */
export async function startService(
  config: Config,
  logger: AppLogger,
  clock: Clock = systemClock,
): Promise<RunningService> {
  // What start-up has opened so far, closed in reverse order if a later step fails, so that a failed
  // start leaves nothing behind that keeps the process alive.
  const opened: (() => Promise<unknown>)[] = [];
  try {
    return await startOrFail(config, logger, clock, opened);
  } catch (error) {
    for (const close of opened.reverse()) await close().catch(() => {});
    if (error instanceof StartupError) throw error;
    throw new StartupError(errorMessage(error), { cause: error });
  }
}

async function startOrFail(
  config: Config,
  logger: AppLogger,
  clock: Clock,
  opened: (() => Promise<unknown>)[],
): Promise<RunningService> {
  const deadlineAt = clock.now() + config.startupTimeoutMs;
  const metrics = createPrometheusMetrics({ version: SERVICE_VERSION, retryMaxAgeMs: config.retry.maxAgeMs });
  const names = topicNames(config.topics);
  const databases = new Map(config.tenants.map((route) => [route.tenantId, route.database]));

  // The HTTP server first: a port already taken is found before anything else is connected, and
  // /metrics answers while the rest starts. Readiness stays false until the consumer has joined.
  let probes: HealthChecks | undefined;
  const server: Server = await startHttpServer(
    metrics.registry,
    {
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
  const graph = createGraphWriter(driver, metrics, config.neo4j.txTimeoutMs, config.neo4j.maxConcurrentWrites);
  await untilDeadline(
    `Neo4j at ${config.neo4j.uri}`,
    deadlineAt,
    () => migrate(driver, databases.values(), sharedDatabases(config.tenants)),
    clock,
  );
  logger.info({ databases: [...new Set(databases.values())] }, "constraints in place");

  await untilDeadline(
    `schema registry at ${config.registry.url}`,
    deadlineAt,
    () => checkRegistry(config.registry),
    clock,
  );
  if (config.registerSchemas) {
    const ids = await untilDeadline(
      "registering the reader schemas (REGISTER_SCHEMAS)",
      deadlineAt,
      () => registerSchemas(config.registry, names.source),
      clock,
    );
    logger.info({ schemaIds: ids }, "reader schemas registered");
  }
  const registry = createSchemaRegistry(config.registry);
  const decoder = createAvroDecoder(registry, { missTtlMs: config.registry.missTtlMs, now: () => clock.now() });

  const kafka = createKafka(config.kafka, logger);
  const admin = kafka.admin();
  opened.push(() => admin.disconnect());
  const brokers = `Kafka at ${config.kafka.brokers.join(",")}`;
  const existing = await untilDeadline(
    brokers,
    deadlineAt,
    async () => {
      await admin.connect();
      return new Set(await admin.listTopics());
    },
    clock,
  );
  const missingSources = Object.values(names.source).filter((topic) => !existing.has(topic));
  if (missingSources.length > 0) {
    throw new StartupError(
      `source topic(s) ${missingSources.join(", ")} do not exist; create them with "agent-graph-projector topics"`,
    );
  }
  // Retry and dead-letter topics are as durable as their source: same replication factor and
  // min.insync.replicas (the records in them are past the source offsets we commit).
  const replication = await untilDeadline(brokers, deadlineAt, () => sourceReplication(admin, names, STREAMS), clock);
  const ownTopics = topicSpecs(
    names,
    {
      partitions: config.topics.partitions,
      replicationFactor: config.topics.replicationFactor ?? 1,
      retryMaxAgeMs: config.retry.maxAgeMs,
    },
    replication,
  ).filter((spec) => roleOfTopic(names, spec.topic)?.role !== "source");
  const created = await untilDeadline(brokers, deadlineAt, () => ensureTopics(admin, ownTopics), clock);
  if (created.length > 0) logger.info({ topics: created }, "created retry and dead-letter topics");
  // The largest record batch the retry and dead-letter topics accept; the sink splits its sends below it.
  // A broker may not yet host a topic created a moment ago (UNKNOWN_TOPIC_OR_PARTITION): ask again.
  const ownLimits = await untilDeadline(
    brokers,
    deadlineAt,
    () =>
      topicConfigNumbers(
        admin,
        [...Object.values(names.retry), ...Object.values(names.deadLetter)],
        "max.message.bytes",
      ),
    clock,
  );
  const maxMessageBytes = Math.min(...ownLimits.values());

  const producer = createProducer(kafka);
  opened.push(() => producer.disconnect());
  await untilDeadline(brokers, deadlineAt, () => producer.connect(), clock);
  const sink = createRecordSink(
    producer,
    names,
    SERVICE_VERSION,
    (topic) => metrics.recordDeadLetterPublished(topic),
    Number.isFinite(maxMessageBytes) ? maxMessageBytes : undefined,
  );

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
  const hold = createCatchUpHold(admin, config.kafka.group, names, config.catchUpHoldRecords, logger);
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
    { ...batchDeps, metrics, onFatal: (error) => failWith(error) },
  );
  hold.onLifted((streams) => consumer.releaseHeld(streams));
  hold.useLocalLag(() => consumer.lagSeen());

  // Readiness is checked on a timer, not per request: probes and scrapes never queue queries on Neo4j.
  let readiness = { neo4j: false, registry: false };
  const pingRegistry = createRegistryPing(config.registry, READY_CHECK_TIMEOUT_MS);
  let checking = false;
  const checkReadiness = async () => {
    if (checking) return;
    checking = true;
    try {
      const [neo4jOk, registryOk] = await Promise.all([
        withTimeout(graph.ping(), READY_CHECK_TIMEOUT_MS).then(
          () => true,
          () => false,
        ),
        pingRegistry(),
      ]);
      readiness = { neo4j: neo4jOk, registry: registryOk };
      metrics.setReady(consumer.isJoined() && neo4jOk && registryOk);
    } finally {
      checking = false;
    }
  };
  probes = {
    live() {
      const idleMs = clock.now() - consumer.lastProgressAt();
      return { ok: idleMs < WEDGED_AFTER_MS, detail: { consumerIdleSeconds: Math.round(idleMs / 1000) } };
    },
    async ready() {
      const joined = consumer.isJoined();
      const { neo4j, registry } = readiness;
      return { ok: joined && neo4j && registry, detail: { joined, neo4j, registry } };
    },
  };

  const lagTopics = consumedTopics(names);
  const reported = new Set<string>();
  const refreshLag = async () => {
    try {
      const owned = consumer.assignment();
      const lags = await fetchLag(admin, config.kafka.group, lagTopics);
      const seen = new Set<string>();
      for (const { topic, partition, lag } of lags) {
        if (!(owned.get(topic) ?? []).includes(partition)) continue;
        metrics.setLag(topic, partition, lag);
        seen.add(`${topic}\u0000${partition}`);
        if (lag === 0 && roleOfTopic(names, topic)?.role === "retry")
          metrics.setOldestDeferred(topic, partition, undefined);
      }
      for (const key of reported) {
        if (seen.has(key)) continue;
        const [topic, partition] = key.split("\u0000");
        metrics.dropLag(topic as string, Number(partition));
        metrics.setOldestDeferred(topic as string, Number(partition), undefined);
      }
      reported.clear();
      for (const key of seen) reported.add(key);
    } catch (error) {
      // Usually a leadership change the admin client's metadata has not caught up with yet.
      logger.debug({ error: errorMessage(error) }, "lag refresh failed; refreshing metadata");
      await admin.fetchTopicMetadata({ topics: lagTopics }).catch(() => {});
    }
  };
  const lagTimer = setInterval(refreshLag, config.lagRefreshMs);

  // §5's scheduled reconciliation, when enabled: report drift as a gauge; repairs stay a human decision.
  const reconcileTimer =
    config.reconcileIntervalMs > 0
      ? setInterval(async () => {
          for (const route of config.tenants) {
            try {
              const result = await reconcileRegistry({
                reader: createTopicReader(kafka),
                topic: names.source["registry-mutation"],
                decoder,
                graph,
                database: route.database,
                tenantId: route.tenantId,
                rules: batchDeps.rules,
                repair: false,
                scoped: sharedDatabases(config.tenants).has(route.database),
              });
              const counts = new Map<string, number>();
              for (const item of result.drift) counts.set(item.kind, (counts.get(item.kind) ?? 0) + 1);
              for (const kind of DRIFT_KINDS) metrics.setDrift(route.tenantId, kind, counts.get(kind) ?? 0);
              logger.info(
                { tenant: route.tenantId, agents: result.agents, drift: result.drift.length },
                "reconciliation done",
              );
            } catch (error) {
              logger.warn({ tenant: route.tenantId, error: errorMessage(error) }, "reconciliation failed");
            }
          }
        }, config.reconcileIntervalMs)
      : undefined;

  await checkReadiness();
  const readinessTimer = setInterval(checkReadiness, READY_CHECK_MS);
  opened.push(async () => clearInterval(readinessTimer));

  await untilDeadline(brokers, deadlineAt, () => hold.start(), clock);
  opened.push(() => consumer.stop());
  await untilDeadline(`${brokers} (joining group ${config.kafka.group})`, deadlineAt, () => consumer.start(), clock);
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
      clearInterval(lagTimer);
      clearInterval(readinessTimer);
      hold.stop();
      if (reconcileTimer) clearInterval(reconcileTimer);
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
