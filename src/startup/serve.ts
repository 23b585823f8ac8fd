import type { Admin } from "kafkajs";
import type { Driver } from "neo4j-driver";
import { createHealth } from "../adapters/http/health.js";
import type { ProjectorConsumer } from "../adapters/kafka/consumer.js";
import type { FindingPublisher } from "../adapters/kafka/finding-publisher.js";
import { createTopicReader } from "../adapters/kafka/read-topic.js";
import { createLagGauges } from "../adapters/metrics/lag-gauges.js";
import type { PrometheusMetrics } from "../adapters/metrics/prometheus.js";
import { createRegistryPing } from "../adapters/registry/schema-registry.js";
import { sharedDatabases } from "../config.js";
import { errorMessage } from "../errors.js";
import { advanceRegistryWatermark, NO_REGISTRY_WATERMARK } from "../model/event-time-findings.js";
import {
  createEventTimeJudge,
  type EventTimeJudge,
  judgedDatabases,
  noEventTimeJudge,
} from "../pipeline/event-time-judge.js";
import type { GraphWriter } from "../ports.js";
import { reconcileRegistry } from "../reconcile/reconcile.js";
import { scheduleReconciliation } from "../reconcile/schedule.js";
import { consumedTopics, type TopicNames } from "../topics.js";
import { SERVICE_VERSION } from "../version.js";
import type { OpenKafka } from "./connect.js";
import type { BuiltConsumer } from "./consumer.js";
import type { StartupContext } from "./context.js";
import type { Endpoints } from "./endpoints.js";

export interface RunningService {
  readonly metrics: PrometheusMetrics;
  readonly consumer: ProjectorConsumer;
  readonly metricsPort: number;
  /** The findings outbox's publisher (tests wait for its rounds with idle()). */
  readonly findings: FindingPublisher;
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
 * The serve phase: health checks, lag gauges and the reconciliation schedule; then the catch-up hold's
 * first check and the consumer joining its group, after which start-up has finished.
 */
export async function serve(
  ctx: StartupContext,
  names: TopicNames,
  parts: {
    readonly metrics: PrometheusMetrics;
    readonly endpoints: Endpoints;
    readonly driver: Driver;
    readonly graph: GraphWriter;
    readonly kafka: OpenKafka;
    readonly built: BuiltConsumer;
  },
): Promise<RunningService> {
  const { config, logger, clock } = ctx;
  const { metrics, endpoints, graph, built } = parts;
  const { kafka, brokers } = parts.kafka;
  const { consumer, hold, lag } = built;

  const health = createHealth({
    clock,
    consumer,
    pingNeo4j: () => graph.ping(),
    pingRegistry: createRegistryPing(config.registry, READY_CHECK_TIMEOUT_MS),
    setReady: (ready) => metrics.setReady(ready),
    checkTimeoutMs: READY_CHECK_TIMEOUT_MS,
    wedgedAfterMs: WEDGED_AFTER_MS,
  });
  endpoints.serveProbes(health);
  lag.onLag(createLagGauges(metrics, names, () => consumer.assignment()));
  lag.start(config.lagRefreshMs);
  ctx.opened(async () => lag.stop());

  const reconciliation = scheduleReconciliation({
    intervalMs: config.reconcileIntervalMs,
    tenants: config.tenants,
    reconcile: (route) =>
      reconcileRegistry({
        reader: createTopicReader(kafka),
        topic: names.source["registry-mutation"],
        decoder: built.batchDeps.decoder,
        graph,
        database: route.database,
        tenantId: route.tenantId,
        rules: built.batchDeps.rules,
        repair: false,
        scoped: sharedDatabases(config.tenants).has(route.database),
      }),
    setDrift: (tenant, kind, count) => metrics.setDrift(tenant, kind, count),
    logger,
  });
  ctx.opened(async () => reconciliation.stop());

  await health.check();
  health.start(READY_CHECK_MS);
  ctx.opened(async () => health.stop());

  // What an earlier run committed and did not get to publish (a crash between the two) goes out now;
  // what a commit leaves unpublished without asking, within an interval (stop() ends the sweep).
  built.findings.recorded();
  built.findings.sweepEvery(config.findingsSweepIntervalMs);
  const judge = judgeAtEventTime(ctx, names, parts);
  ctx.opened(() => judge.stop());
  await ctx.step(brokers, () => hold.start());
  ctx.opened(() => consumer.stop());
  await ctx.step(`${brokers} (joining group ${config.kafka.group})`, () => consumer.start());
  endpoints.markStarted();
  logger.info(
    {
      group: config.kafka.group,
      topics: consumedTopics(names),
      metricsPort: endpoints.metricsPort,
      version: SERVICE_VERSION,
    },
    "projector running",
  );

  return running(ctx, {
    ...parts,
    // The judge first: its round asks the lag monitor for the watermark.
    stopSchedules: [
      () => judge.stop(),
      () => lag.stop(),
      () => health.stop(),
      () => hold.stop(),
      () => reconciliation.stop(),
    ],
  });
}

/**
 * The event-time judge's rounds (pipeline/event-time-judge.ts), on the instance that owns the registry
 * topic's partition 0, against the watermark the group's lag on the registry partitions gives.
 */
function judgeAtEventTime(
  ctx: StartupContext,
  names: TopicNames,
  parts: { readonly metrics: PrometheusMetrics; readonly graph: GraphWriter; readonly built: BuiltConsumer },
): EventTimeJudge {
  const { config, logger, clock } = ctx;
  const { metrics, graph, built } = parts;
  if (!config.findingsEnabled) return noEventTimeJudge;
  const registry = names.source["registry-mutation"];
  let registryWatermark = NO_REGISTRY_WATERMARK;
  const judge = createEventTimeJudge({
    graph,
    databases: judgedDatabases(config.tenants),
    async watermark() {
      const at = clock.now();
      const lags = (await built.lag.poll()).filter((lag) => lag.topic === registry);
      const ends = new Map(lags.map((lag) => [lag.partition, lag.end]));
      const committed = new Map(lags.map((lag) => [lag.partition, lag.end - lag.lag]));
      registryWatermark = advanceRegistryWatermark(
        registryWatermark,
        { at, ends },
        committed,
        config.findingsJudge.allowedLatenessMs,
      );
      return registryWatermark.watermark;
    },
    judges: () => built.consumer.assignment().get(registry)?.includes(0) === true,
    maxWaitMs: config.findingsJudge.maxWaitMs,
    historyRetentionMs: config.findingsJudge.historyRetentionMs,
    terminals: new Set(config.terminalAgentIds),
    clock,
    logger,
    waiting: (database, oldest) => metrics.setOldestUnjudged(database, oldest),
    recorded(found) {
      for (const { tenant, kind } of found) metrics.recordFinding(tenant, kind);
      built.findings.recorded();
    },
  });
  judge.every(config.findingsJudge.intervalMs);
  return judge;
}

/** The started service: stop() winds it down in order; a fatal consumer error stops it and rejects `done`. */
function running(
  ctx: StartupContext,
  parts: {
    readonly metrics: PrometheusMetrics;
    readonly endpoints: Endpoints;
    readonly driver: Driver;
    readonly kafka: { readonly admin: Admin };
    readonly built: BuiltConsumer;
    readonly stopSchedules: readonly (() => void | Promise<void>)[];
  },
): RunningService {
  const { logger } = ctx;
  const { metrics, endpoints, driver, built, stopSchedules } = parts;
  const { consumer, producer } = built;
  const { admin } = parts.kafka;
  let stopping: Promise<void> | undefined;
  let resolveDone: () => void = () => {};
  let failed = false;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    built.fatal.catch(async (error) => {
      failed = true;
      await stop("fatal error").catch(() => {});
      reject(error);
    });
  });

  async function stop(reason = "stop requested"): Promise<void> {
    stopping ??= (async () => {
      logger.info({ reason }, "stopping: no new fetches, committing what was applied, leaving the group");
      await Promise.all(stopSchedules.map((stopSchedule) => stopSchedule()));
      await consumer.stop().catch((error) => logger.warn({ error: errorMessage(error) }, "consumer stop failed"));
      await built.findings.stop();
      await producer.disconnect().catch(() => {});
      await admin.disconnect().catch(() => {});
      await driver.close().catch(() => {});
      await endpoints.close();
      // The process's tally, for an operator reading a scale-in's log (and the bench's records applied twice).
      logger.info({ records: await metrics.recordsByFate() }, "stopped");
      // After a fatal error `done` rejects (the process exits 1), whoever finished the stop.
      if (!failed) resolveDone();
    })();
    return stopping;
  }

  return { metrics, consumer, metricsPort: endpoints.metricsPort, findings: built.findings, done, stop };
}
