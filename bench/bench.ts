/**
 * `npm run bench`: the projector's benchmark. Generates a seeded workload, publishes it Avro-encoded
 * through the registry to six-partition topics before any clock starts, then measures, on the same
 * data in one run:
 *   - the ceiling: the projector's own batched statements sent straight to Neo4j (best of a sweep);
 *   - the baseline: one record per transaction with the spec's per-record Cypher (on a sample);
 *   - the projector as 1, 2 and 3 `agent-graph-projector run` child processes in one group, from the
 *     first fetch to zero lag: records/s overall and per topic, batch latency, peak RSS, transactions;
 *   - a soak at a steady produce rate: RSS and lag every 10 s, and their trend;
 *   - freshness under a steady load at fractions of the measured capacity: p50/p99/max of (commit
 *     time − event time), from the service's histogram and from the records' own times;
 *   - the peer, Neo4j's own Kafka Connect sink carrying the same §3 statements (bench/peer), taking
 *     turns with the projector, and both systems' graphs against the reference model (correctness).
 * Results go to bench/results/<timestamp>.json and bench/results/latest.svg (bench/README.md).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Message } from "kafkajs";
import neo4j from "neo4j-driver";
import { ensureTopics, fetchLag, partitionLag, topicSpecs } from "../src/adapters/kafka/admin.js";
import { createKafka, createProducer, sendBatchAtLeastOnce } from "../src/adapters/kafka/client.js";
import { publishEvents, streamOf, toMessage } from "../src/adapters/kafka/event-publisher.js";
import { createGraphWriter, migrate } from "../src/adapters/neo4j/graph-writer.js";
import { createSchemaRegistry, registerSchemas } from "../src/adapters/registry/schema-registry.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import type { EscalationEdge, OutcomeCreated, ProjectorEvent } from "../src/model/events.js";
import { STREAMS } from "../src/model/schemas.js";
import { noopMetrics, type Stream } from "../src/ports.js";
import { consumedTopics, type TopicNames, topicNames } from "../src/topics.js";
import { type EventLog, generateEventLog, prng, type WorkloadSize } from "../workload/generate.js";
import { type CpuSeconds, cpuMeter, pidListeningOn, portOf } from "./lib/cpu.js";
import {
  type DirectResult,
  directCounters,
  graphFingerprint,
  loadDirect,
  runBaseline,
  wipeGraph,
} from "./lib/direct.js";
import {
  CohortTracker,
  freshnessRates,
  histogramMaxBound,
  recordsDue,
  type Settled,
  sampleDelta,
  weightedQuantile,
} from "./lib/freshness.js";
import { type ProjectorProcess, startProjector } from "./lib/projector.js";
import { histogramQuantile, quantile, type Sample, slope, sumSamples, total } from "./lib/prom.js";
import { renderChart } from "./lib/svg.js";
import { type CorrectnessRow, runCorrectness } from "./peer/correctness.js";
import { buildPeerForStack, loadPeerEnv } from "./peer/peer.js";
import { type PeerRunResult, type PeerSetup, runPeer } from "./peer/run.js";
import { apicurioApiUrl } from "./peer/worker.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const { values: flags } = parseArgs({
  options: {
    agents: { type: "string" },
    outcomes: { type: "string" },
    escalations: { type: "string" },
    quick: { type: "boolean", default: false },
    seed: { type: "string", default: "7" },
    "soak-minutes": { type: "string" },
    "soak-rate": { type: "string", default: "500" },
    instances: { type: "string", default: "1,2,3" },
    repeat: { type: "string", default: "1" },
    "baseline-sample": { type: "string", default: "5000" },
    "skip-ceiling": { type: "boolean", default: false },
    "ceiling-config": { type: "string" },
    "skip-baseline": { type: "boolean", default: false },
    "keep-graph": { type: "boolean", default: false },
    "keep-topics": { type: "boolean", default: false },
    "skip-warmup": { type: "boolean", default: false },
    "skip-peer": { type: "boolean", default: false },
    "peer-config": { type: "string" },
    "skip-correctness": { type: "boolean", default: false },
    "skip-freshness": { type: "boolean", default: false },
    "freshness-seconds": { type: "string" },
    "freshness-warmup": { type: "string" },
    "freshness-rates": { type: "string", default: "0.5,0.9" },
    "freshness-rps": { type: "string" },
    "freshness-capacity": { type: "string" },
    env: { type: "string", multiple: true, default: [] },
    label: { type: "string", default: "" },
    out: { type: "string" },
  },
});

const quick = flags.quick === true;
const num = (value: string | undefined, fallback: number) => (value === undefined ? fallback : Number(value));
const AGENTS = num(flags.agents, quick ? 200 : 2000);
const OUTCOMES = num(flags.outcomes, quick ? 10_000 : 200_000);
const ESCALATIONS = num(flags.escalations, quick ? 2_500 : 50_000);
const SOAK_MINUTES = num(flags["soak-minutes"], quick ? 0 : 10);
const SOAK_RATE = num(flags["soak-rate"], 500);
const FRESHNESS_SECONDS = num(flags["freshness-seconds"], quick ? 30 : 180);
const FRESHNESS_WARMUP = num(flags["freshness-warmup"], quick ? 10 : 15);
const numbers = (value: string | undefined) =>
  (value ?? "")
    .split(",")
    .filter((v) => v.trim() !== "")
    .map(Number)
    .filter((n) => n > 0);
const SEED = Number(flags.seed);
const INSTANCES = String(flags.instances)
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
const REPEAT = Math.max(1, Number(flags.repeat));
const PARTITIONS = 6;
const EXTRA_ENV = Object.fromEntries(
  (flags.env as string[]).map((pair) => {
    const at = pair.indexOf("=");
    return [pair.slice(0, at), pair.slice(at + 1)];
  }),
);

const say = (line: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** 10% of the escalation-edge records are redelivered duplicates: n originals plus n/9 copies. */
function workloadSize(agents: number, outcomes: number, escalations: number): WorkloadSize {
  return {
    agents,
    toolsPerAgent: 5,
    workflowsPerAgent: 3,
    escalationTargetsPerAgent: 2,
    editsPerAgent: 1,
    outcomes,
    escalations: Math.round(escalations * 0.9),
    duplicateRatio: 1 / 9,
    undeclaredRatio: 0.1,
    tenantId: "default",
  };
}

const eventsOf = (log: EventLog): ProjectorEvent[] => [...log.registry, ...log.outcomes, ...log.escalations];

interface RunResult {
  readonly instances: number;
  readonly seconds: number;
  readonly records: number;
  readonly recordsPerSecond: number;
  readonly perTopic: Record<string, { records: number; seconds: number; recordsPerSecond: number }>;
  readonly batchP50Ms: number | null;
  readonly batchP99Ms: number | null;
  readonly batchP50MsByStream: Record<string, number | null>;
  readonly batchP99MsByStream: Record<string, number | null>;
  readonly transactions: number;
  readonly transactionRetries: number;
  readonly deferred: number;
  readonly deadLettered: number;
  readonly rebalances: number;
  readonly peakRssMiB: number[];
  readonly fingerprint: Record<string, number>;
  readonly errors: string[];
  /** CPU seconds per process from the first join to zero lag (bench/lib/cpu.ts). */
  readonly cpuSeconds: CpuSeconds;
}

/** Seconds (or, with a scale, other units) rounded for the results file; null stays null. */
const nullable = (value: number | null, scale = 1) => (value === null ? null : round(value * scale, 3));

interface FreshnessQuantiles {
  readonly p50: number | null;
  readonly p99: number | null;
}

type HistogramFreshness = FreshnessQuantiles & { observations: number; maxAtMost: number | null };
type RecordFreshness = FreshnessQuantiles & { records: number; max: number | null };

/** One steady-load run: freshness in seconds, from the service's histogram and from the records' own times. */
interface FreshnessResult {
  readonly rate: number;
  readonly fractionOfCapacity: number | null;
  readonly capacity: number | null;
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly published: number;
  readonly achievedRate: number;
  readonly drainSeconds: number;
  /** Records no commit had covered when the drain gave up (2 min), counted at that time (a lower bound): 0 unless overloaded. */
  readonly unsettledAtEnd: number;
  readonly offsetPollErrors: number;
  /** agp_freshness_seconds over the measured window (scrape after − scrape before); max is a bucket bound. */
  readonly histogram: Record<"outcome-created" | "escalation-edge", HistogramFreshness>;
  /** Committed offset seen (polled every 200 ms) − the time each record was stamped and published. */
  readonly records: Record<"all" | "outcome-created" | "escalation-edge", RecordFreshness>;
  readonly deferred: number;
  readonly transactionRetries: number;
  readonly batchP50Ms: number | null;
  readonly batchP99Ms: number | null;
  readonly peakRssMiB: number;
  readonly cpuSeconds: CpuSeconds;
  readonly loadAverageAtEnd: number[];
  readonly errors: string[];
}

async function main(): Promise<void> {
  const started = new Date();
  const runId = started.toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
  const { useLocalStackUnlessConfigured } = await import("../stack/api.js");
  const usedLocalStack = await useLocalStackUnlessConfigured(process.env, say);
  const prefix = `bench-${runId}`;
  const baseEnv: Record<string, string> = {
    KAFKA_BROKERS: process.env.KAFKA_BROKERS as string,
    SCHEMA_REGISTRY_URL: process.env.SCHEMA_REGISTRY_URL as string,
    NEO4J_URI: process.env.NEO4J_URI as string,
    NEO4J_USER: process.env.NEO4J_USER ?? "neo4j",
    NEO4J_PASSWORD: process.env.NEO4J_PASSWORD ?? "",
    TOPIC_REGISTRY_MUTATION: `${prefix}.registry-mutation`,
    TOPIC_OUTCOME_CREATED: `${prefix}.outcome-created`,
    TOPIC_ESCALATION_EDGE: `${prefix}.escalation-edge`,
    TOPIC_PARTITIONS: String(PARTITIONS),
    LOG_LEVEL: "info",
    // As deployed: the Helm chart's and the image's V8 limits (--env overrides them).
    NODE_OPTIONS: "--max-old-space-size=384 --max-semi-space-size=16",
    ...EXTRA_ENV,
  };
  const config = loadConfig(baseEnv);
  const database = config.neo4j.database;
  const logger = createLogger("warn");
  const kafka = createKafka(config.kafka, logger);
  const admin = kafka.admin();
  await admin.connect();
  // Every topic and group of this run is named after it; a broker that keeps thousands of old
  // partitions spends a fifth of a core on them while idle, on the cores every later run measures.
  atExit.push(async () => {
    if (flags["keep-topics"]) return;
    const topics = (await admin.listTopics()).filter((topic) => topic.startsWith(prefix));
    for (let i = 0; i < topics.length; i += 100) await admin.deleteTopics({ topics: topics.slice(i, i + 100) });
    const { groups } = await admin.listGroups();
    const ours = groups.map((group) => group.groupId).filter((id) => id.startsWith(prefix));
    if (ours.length > 0) await admin.deleteGroups(ours).catch(() => {});
    say(`deleted this run's ${topics.length} topics and ${ours.length} consumer groups (--keep-topics keeps them)`);
  });
  const driver = neo4j.driver(config.neo4j.uri, neo4j.auth.basic(config.neo4j.user, config.neo4j.password ?? ""), {
    maxConnectionPoolSize: 20,
  });
  const graph = createGraphWriter(
    driver,
    {
      ...noopMetrics,
      recordTransactionRetry: () => {
        directCounters.retries += 1;
      },
    },
    300_000,
  );
  await migrate(driver, [database]);
  const registry = createSchemaRegistry(config.registry);
  const servers = {
    neo4j: pidListeningOn(portOf(config.neo4j.uri, 7687)),
    kafka: pidListeningOn(portOf(config.kafka.brokers[0] ?? "", 9092)),
    registry: pidListeningOn(portOf(config.registry.url, 8081)),
  };

  // ---- the peer: Neo4j's Kafka Connect sink, built (or found cached) before any clock starts ----
  let peerSetup: PeerSetup | undefined;
  if (!flags["skip-peer"]) {
    const { loadConfig: loadStackConfig } = await import("../stack/config.js");
    const stack = loadStackConfig(process.env);
    const peerEnv = loadPeerEnv(process.env);
    const artifacts = await buildPeerForStack(process.env, say);
    say(`peer: Neo4j Connector for Apache Kafka ${artifacts.connectorVersion} in Kafka Connect (standalone)`);
    peerSetup = {
      artifacts,
      java: stack.java,
      workDir: path.join(stack.home, "bench-peer-worker"),
      restPort: peerEnv.PEER_CONNECT_PORT,
      heap: peerEnv.PEER_CONNECT_HEAP,
      kafkaBrokers: config.kafka.brokers.join(","),
      registryApiUrl: apicurioApiUrl(config.registry.url),
      neo4j: {
        uri: config.neo4j.uri,
        user: config.neo4j.user,
        password: config.neo4j.password ?? "",
        database,
      },
      marker: `-Dagentgraph.peer=${runId}`,
      servers,
      say,
    };
  }

  // ---- workload, published before any clock starts -------------------------------------------
  const size = workloadSize(AGENTS, OUTCOMES, ESCALATIONS);
  let t = performance.now();
  const log = generateEventLog(SEED, size);
  const events = eventsOf(log);
  say(
    `workload (seed ${SEED}): ${log.registry.length} registry, ${log.outcomes.length} outcome-created, ` +
      `${log.escalations.length} escalation-edge = ${events.length} records, generated in ${round((performance.now() - t) / 1000)} s`,
  );
  const names = topicNames(config.topics);
  await ensureTopics(admin, topicSpecs(names, { partitions: PARTITIONS, replicationFactor: 1 }));
  const schemaIds = await registerSchemas(config.registry, names.source);
  const producer = createProducer(kafka);
  await producer.connect();
  t = performance.now();
  await publishEvents(producer, registry, schemaIds, names, events, () => {}, 5000);
  say(`published to ${prefix}.* (${PARTITIONS} partitions each) in ${round((performance.now() - t) / 1000)} s`);
  const counts: Record<Stream, number> = {
    "registry-mutation": log.registry.length,
    "outcome-created": log.outcomes.length,
    "escalation-edge": log.escalations.length,
  };

  // ---- ceiling ------------------------------------------------------------------------------
  let ceiling: { sweep: DirectResult[]; best: DirectResult[]; recordsPerSecond: number } | undefined;
  let bestConfig: DirectResult | undefined;
  if (!flags["skip-ceiling"]) {
    const sampleLog = generateEventLog(
      SEED + 1,
      workloadSize(AGENTS, Math.round(OUTCOMES / 4), Math.round(ESCALATIONS / 4)),
    );
    const configs: [number, number][] = quick
      ? [
          [1000, 2],
          [2000, 4],
          [5000, 4],
        ]
      : [
          [500, 4],
          [1000, 2],
          [1000, 4],
          [2000, 2],
          [2000, 4],
          [2000, 6],
          [5000, 2],
          [5000, 4],
        ];
    // --ceiling-config BATCHxCONCURRENCY skips the sweep (for quick comparisons, not for reporting).
    const fixed = /^(\d+)x(\d+)$/.exec(flags["ceiling-config"] ?? "");
    const sweep: DirectResult[] = [];
    for (const [batch, concurrency] of fixed ? [[Number(fixed[1]), Number(fixed[2])] as [number, number]] : configs) {
      await wipeGraph(driver, database);
      const result = await loadDirect(graph, database, sampleLog, batch, concurrency);
      say(
        `ceiling sweep: batch ${batch} × ${concurrency}: ${Math.round(result.recordsPerSecond)} rec/s, retries ${result.retries}`,
      );
      sweep.push(result);
    }
    bestConfig = [...sweep].sort((a, b) => b.recordsPerSecond - a.recordsPerSecond)[0] as DirectResult;
    ceiling = { sweep, best: [], recordsPerSecond: 0 };
  }

  // ---- baseline -----------------------------------------------------------------------------
  let baseline: { records: number; seconds: number; recordsPerSecond: number } | undefined;
  if (!flags["skip-baseline"]) {
    const sample = Number(flags["baseline-sample"]);
    const share = OUTCOMES / (OUTCOMES + ESCALATIONS);
    const sampleLog = generateEventLog(
      SEED + 2,
      workloadSize(AGENTS, Math.round(sample * share), Math.round(sample * (1 - share))),
    );
    await wipeGraph(driver, database);
    baseline = await runBaseline(driver, graph, database, sampleLog);
    say(
      `baseline (one record per transaction, ${baseline.records} records): ${Math.round(baseline.recordsPerSecond)} rec/s`,
    );
  }

  // ---- peer sweep: batch size × tasks on the ceiling sweep's quarter-size log --------------------
  const peerSweep: PeerRunResult[] = [];
  let peerBest: { batchSize: number; tasks: number } | undefined;
  const peerRuns: (PeerRunResult & { fingerprint: Record<string, number> })[] = [];
  if (peerSetup) {
    const sweepLog = generateEventLog(
      SEED + 1,
      workloadSize(AGENTS, Math.round(OUTCOMES / 4), Math.round(ESCALATIONS / 4)),
    );
    const sweepNames = topicNames({
      ...config.topics,
      registryMutation: `${prefix}-peersweep.registry-mutation`,
      outcomeCreated: `${prefix}-peersweep.outcome-created`,
      escalationEdge: `${prefix}-peersweep.escalation-edge`,
    });
    await ensureTopics(admin, topicSpecs(sweepNames, { partitions: PARTITIONS, replicationFactor: 1 }));
    const sweepIds = await registerSchemas(config.registry, sweepNames.source);
    await publishEvents(producer, registry, sweepIds, sweepNames, eventsOf(sweepLog), () => {}, 5000);
    const sweepCounts: Record<Stream, number> = {
      "registry-mutation": sweepLog.registry.length,
      "outcome-created": sweepLog.outcomes.length,
      "escalation-edge": sweepLog.escalations.length,
    };
    const fixedPeer = /^(\d+)x(\d+)$/.exec(flags["peer-config"] ?? "");
    const peerConfigs: [number, number][] = fixedPeer
      ? [[Number(fixedPeer[1]), Number(fixedPeer[2])]]
      : quick
        ? [
            [1000, 1],
            [5000, 1],
          ]
        : [
            [1000, 1],
            [2000, 1],
            [5000, 1],
            [2000, 2],
            [5000, 2],
          ];
    for (const [batchSize, tasks] of peerConfigs) {
      await wipeGraph(driver, database);
      const result = await runPeer(peerSetup, {
        name: `${prefix}-peersweep-${batchSize}x${tasks}`,
        label: `peer sweep ${batchSize} × ${tasks}`,
        topics: sweepNames.source,
        counts: sweepCounts,
        batchSize,
        tasks,
        admin,
      });
      say(
        `peer sweep: batch ${batchSize} × ${tasks} task(s): ${result.recordsPerSecond} rec/s, peak RSS ${result.peakRssMiB} MiB`,
      );
      peerSweep.push(result);
    }
    const best = [...peerSweep].sort((a, b) => b.recordsPerSecond - a.recordsPerSecond)[0] as PeerRunResult;
    peerBest = { batchSize: best.batchSize, tasks: best.tasks };
  }
  let peerRunNo = 0;
  const peerRun = async () => {
    if (!peerSetup || !peerBest) return;
    peerRunNo += 1;
    await wipeGraph(driver, database);
    const result = await runPeer(peerSetup, {
      name: `${prefix}-peer-r${peerRunNo}`,
      label: `peer r${peerRunNo}`,
      topics: names.source,
      counts,
      batchSize: peerBest.batchSize,
      tasks: peerBest.tasks,
      admin,
    });
    const fingerprint = await graphFingerprint(driver, database);
    say(
      `peer (batch ${result.batchSize} × ${result.tasks}): ${result.recordsPerSecond} rec/s over ${result.seconds} s; ` +
        `peak RSS ${result.peakRssMiB} MiB; CPU ${JSON.stringify(result.cpuSeconds)} s; graph ${JSON.stringify(fingerprint)}`,
    );
    peerRuns.push({ ...result, fingerprint });
  };

  // ---- ceiling and one projector, taking turns; then 2 and 3 projectors -----------------------
  // Neo4j runs faster or slower as a long-lived store warms up and is checkpointed, so the full
  // ceiling loads and the single-instance runs alternate rather than one set following the other.
  let ceilingFingerprint: Record<string, number> | undefined;
  const runs: RunResult[] = [];
  let runNo = 0;
  const projectorRun = async (instances: number) => {
    runNo += 1;
    await wipeGraph(driver, database);
    const result = await runProjectors(instances, `r${runNo}x${instances}`);
    if (ceilingFingerprint && JSON.stringify(result.fingerprint) !== JSON.stringify(ceilingFingerprint)) {
      say(`WARNING: graph after the projector differs from the ceiling's: ${JSON.stringify(result.fingerprint)}`);
    }
    runs.push(result);
  };
  if (!flags["skip-warmup"] && INSTANCES.length > 0) {
    // The broker's fetch path and the projector's own code are cold until a first run; the sweep
    // above has warmed Neo4j the same way for the ceiling. This run is reported but not counted.
    await wipeGraph(driver, database);
    const warmup = await runProjectors(1, "warmup");
    say(`warm-up run done (${warmup.seconds} s), not counted`);
  }
  for (let r = 0; r < REPEAT; r++) {
    if (ceiling && bestConfig) {
      await wipeGraph(driver, database);
      const meter = cpuMeter(servers);
      const loaded = await loadDirect(graph, database, log, bestConfig.batch, bestConfig.concurrency);
      const result = { ...loaded, cpuSeconds: meter.since() };
      say(
        `ceiling (full log, batch ${result.batch} × ${result.concurrency}): ${Math.round(result.recordsPerSecond)} rec/s, deferred ${result.deferred}, retries ${result.retries}; stages ${JSON.stringify(result.stageSeconds)} s; CPU ${JSON.stringify(result.cpuSeconds)} s`,
      );
      ceiling.best.push(result);
      ceilingFingerprint ??= await graphFingerprint(driver, database);
    }
    if (INSTANCES.includes(1)) await projectorRun(1);
    await peerRun();
  }
  if (ceiling) ceiling.recordsPerSecond = median(ceiling.best.map((b) => b.recordsPerSecond));
  for (const instances of INSTANCES) if (instances !== 1) await projectorRun(instances);

  /**
   * Lag every 200 ms, cheaply enough not to slow the run it measures: the source topics' high
   * watermarks are fixed (the workload was published before), so a poll is one committed-offsets
   * request; the retry topics, which can grow, are checked in full every 2 s and before declaring
   * zero lag. Polling everything each time cost the broker and this process ~3 CPU-s per run.
   */
  async function lagWatcher(group: string, runNames: TopicNames) {
    const sources = new Set(Object.values(runNames.source));
    const watermarks = new Map<string, { high: number; low: number }>();
    for (const topic of sources)
      for (const p of await admin.fetchTopicOffsets(topic))
        watermarks.set(`${topic}/${p.partition}`, { high: Number(p.high), low: Number(p.low) });
    let retryLags: { topic: string; partition: number; lag: number }[] = [];
    let retryCheckedAt = 0;
    return {
      async poll() {
        const committed = await admin.fetchOffsets({ groupId: group, topics: [...sources] });
        const sourceLags = committed.flatMap(({ topic, partitions }) =>
          partitions.map((p) => {
            const { high, low } = watermarks.get(`${topic}/${p.partition}`) ?? { high: 0, low: 0 };
            return { topic, partition: p.partition, lag: partitionLag(p.offset, high, low) };
          }),
        );
        const sourcesDone = sourceLags.every((l) => l.lag === 0);
        if (sourcesDone || Date.now() - retryCheckedAt > 2_000) {
          retryLags = (await fetchLag(admin, group, consumedTopics(runNames))).filter((l) => !sources.has(l.topic));
          retryCheckedAt = Date.now();
        }
        return [...sourceLags, ...retryLags];
      },
    };
  }

  async function runProjectors(instances: number, label: string): Promise<RunResult> {
    const runNames: TopicNames = topicNames({
      ...config.topics,
      retrySuffix: `.retry-${label}`,
      dlqSuffix: `.dlq-${label}`,
    });
    await ensureTopics(
      admin,
      topicSpecs(runNames, { partitions: PARTITIONS, replicationFactor: 1 }).filter(
        (spec) => !Object.values(runNames.source).includes(spec.topic),
      ),
    );
    const group = `${prefix}-${label}`;
    const env = {
      ...baseEnv,
      CONSUMER_GROUP: group,
      RETRY_TOPIC_SUFFIX: `.retry-${label}`,
      DLQ_TOPIC_SUFFIX: `.dlq-${label}`,
    };
    const children: ProjectorProcess[] = [];
    for (let n = 0; n < instances; n++) children.push(startProjector(env, `${label}-${n}`));
    const t0 = await Promise.race(children.map((child) => child.joinedAt));
    const meter = cpuMeter({
      ...servers,
      ...Object.fromEntries(children.map((child, n) => [`projector${children.length > 1 ? n + 1 : ""}`, child.pid])),
    });
    const lastBusy: Record<string, number> = Object.fromEntries(STREAMS.map((s) => [s, t0]));
    const topicsOf = (stream: Stream) => [runNames.source[stream], runNames.retry[stream]];
    let end = 0;
    let lastReport = 0;
    const rssPeak = children.map(() => 0);
    const watch = await lagWatcher(group, runNames);
    for (;;) {
      const lags = await watch.poll();
      const now = Date.now();
      children.forEach((child, n) => {
        rssPeak[n] = Math.max(rssPeak[n] as number, child.rssKiB()?.hwm ?? 0);
      });
      let behind = 0;
      for (const stream of STREAMS) {
        const lag = lags.filter((l) => topicsOf(stream).includes(l.topic)).reduce((s, l) => s + l.lag, 0);
        if (lag > 0) lastBusy[stream] = now;
        behind += lag;
      }
      if (now - lastReport > 10_000) {
        say(`  ${label}: ${behind} record(s) behind after ${round((now - t0) / 1000)} s`);
        lastReport = now;
      }
      if (behind === 0) {
        end = now;
        break;
      }
      if (children.some((child) => child.errors.some((e) => /fatal/.test(e))))
        throw new Error(children.flatMap((c) => c.errors).join("\n"));
      await sleep(200);
    }
    const cpuSeconds = meter.since();
    const scraped = await Promise.all(children.map((child) => child.scrape()));
    const samples: Sample[] = sumSamples(scraped);
    children.forEach((child, n) => {
      rssPeak[n] = Math.max(rssPeak[n] as number, child.rssKiB()?.hwm ?? 0);
    });
    await Promise.all(children.map((child) => child.stop()));
    const seconds = (end - t0) / 1000;
    const records = events.length;
    const perTopic = Object.fromEntries(
      STREAMS.map((stream) => {
        const s = ((lastBusy[stream] as number) - t0) / 1000 + 0.2;
        return [
          stream,
          { records: counts[stream], seconds: round(s, 2), recordsPerSecond: Math.round(counts[stream] / s) },
        ];
      }),
    );
    const ms = (v: number | null) => (v === null ? null : round(v * 1000, 1));
    const byStream = (q: number) =>
      Object.fromEntries(
        STREAMS.map((stream) => [stream, ms(histogramQuantile(samples, "agp_batch_duration_seconds", q, { stream }))]),
      );
    const result: RunResult = {
      instances,
      seconds: round(seconds, 2),
      records,
      recordsPerSecond: Math.round(records / seconds),
      perTopic,
      batchP50Ms: ms(histogramQuantile(samples, "agp_batch_duration_seconds", 0.5)),
      batchP99Ms: ms(histogramQuantile(samples, "agp_batch_duration_seconds", 0.99)),
      batchP50MsByStream: byStream(0.5),
      batchP99MsByStream: byStream(0.99),
      transactions: total(samples, "agp_batch_duration_seconds_count"),
      transactionRetries: total(samples, "agp_transaction_retries_total"),
      deferred: total(samples, "agp_records_total", { result: "deferred" }),
      deadLettered: total(samples, "agp_records_total", { result: "dead-lettered" }),
      rebalances: total(samples, "agp_rebalances_total"),
      peakRssMiB: rssPeak.map((kib) => round(kib / 1024)),
      fingerprint: await graphFingerprint(driver, database),
      errors: children.flatMap((child) => child.errors).slice(0, 10),
      cpuSeconds,
    };
    say(
      `projector ×${instances}: ${result.recordsPerSecond} rec/s over ${result.seconds} s; batch p50 ${result.batchP50Ms} ms, ` +
        `p99 ${result.batchP99Ms} ms; ${result.transactions} tx, ${result.transactionRetries} retries, ` +
        `${result.deferred} deferred; peak RSS ${result.peakRssMiB.join("/")} MiB; CPU ${JSON.stringify(cpuSeconds)} s`,
    );
    return result;
  }

  // ---- correctness: both systems' graphs against the reference model, in three deliveries -------
  let correctness: { workload: Record<string, number>; rows: CorrectnessRow[] } | undefined;
  if (!flags["skip-correctness"]) {
    const correctnessLog = generateEventLog(
      SEED + 5,
      workloadSize(Math.max(20, Math.round(AGENTS / 4)), Math.round(OUTCOMES / 10), Math.round(ESCALATIONS / 10)),
    );
    const rows = await runCorrectness(
      {
        admin,
        producer,
        registry,
        driver,
        graph,
        database,
        config,
        baseEnv,
        prefix,
        partitions: PARTITIONS,
        peer: peerSetup && peerBest ? { setup: peerSetup, ...peerBest } : undefined,
        say,
      },
      correctnessLog,
    );
    correctness = {
      workload: {
        registry: correctnessLog.registry.length,
        outcomes: correctnessLog.outcomes.length,
        escalations: correctnessLog.escalations.length,
      },
      rows,
    };
  }

  // ---- soak ----------------------------------------------------------------------------------
  let soak: Record<string, unknown> | undefined;
  let soakPoints: { minute: number; rssMiB: number; lag: number }[] = [];
  if (SOAK_MINUTES > 0) {
    ({ soak, soakPoints } = await runSoak());
  }

  async function runSoak() {
    const soakNames = topicNames({
      ...config.topics,
      registryMutation: `${prefix}-soak.registry-mutation`,
      outcomeCreated: `${prefix}-soak.outcome-created`,
      escalationEdge: `${prefix}-soak.escalation-edge`,
    });
    await ensureTopics(admin, topicSpecs(soakNames, { partitions: PARTITIONS, replicationFactor: 1 }));
    const soakIds = await registerSchemas(config.registry, soakNames.source);
    await publishEvents(producer, registry, soakIds, soakNames, log.registry, () => {}, 5000);
    const seconds = SOAK_MINUTES * 60;
    const outcomeRate = Math.max(1, Math.round(SOAK_RATE * 0.8));
    const escalationRate = Math.max(1, SOAK_RATE - outcomeRate);
    const soakLog = generateEventLog(SEED + 3, { ...size, outcomes: outcomeRate * seconds, escalations: 0 });
    const random = prng(SEED + 4);
    const group = `${prefix}-soak`;
    const child = startProjector(
      {
        ...baseEnv,
        CONSUMER_GROUP: group,
        TOPIC_REGISTRY_MUTATION: soakNames.source["registry-mutation"],
        TOPIC_OUTCOME_CREATED: soakNames.source["outcome-created"],
        TOPIC_ESCALATION_EDGE: soakNames.source["escalation-edge"],
      },
      "soak",
    );
    await child.joinedAt;
    say(
      `soak: ${SOAK_MINUTES} min at ${SOAK_RATE} records/s (${outcomeRate} outcomes + ${escalationRate} escalations)`,
    );
    const points: { minute: number; rssMiB: number; lag: number }[] = [];
    const soakStart = Date.now();
    const recent: EscalationEdge[] = [];
    let nextSample = soakStart;
    for (let second = 0; second < seconds; second++) {
      const batch: ProjectorEvent[] = soakLog.outcomes.slice(second * outcomeRate, (second + 1) * outcomeRate);
      // Escalations between outcomes published 2 to 30 seconds earlier; 10% are redelivered copies.
      const low = Math.max(0, second - 30) * outcomeRate;
      const high = Math.max(0, second - 2) * outcomeRate;
      if (high - low > 1) {
        for (let n = 0; n < escalationRate; n++) {
          if (recent.length > 0 && random() < 0.1) {
            batch.push({ ...(recent[Math.floor(random() * recent.length)] as EscalationEdge) });
            continue;
          }
          const source = soakLog.outcomes[low + Math.floor(random() * (high - low))] as OutcomeCreated;
          const target = soakLog.outcomes[low + Math.floor(random() * (high - low))] as OutcomeCreated;
          if (source.outcome_id === target.outcome_id) continue;
          const edge: EscalationEdge = {
            kind: "escalation-edge",
            event_id: `soak-${second}-${n}`,
            tenant_id: "default",
            source_outcome_id: source.outcome_id,
            target_outcome_id: target.outcome_id,
            observed_at: source.created_at + 1000,
          };
          batch.push(edge);
          recent.push(edge);
          if (recent.length > 2000) recent.shift();
        }
      }
      await publishEvents(producer, registry, soakIds, soakNames, batch, () => {}, 5000);
      if (Date.now() >= nextSample) {
        const lags = await fetchLag(admin, group, consumedTopics(soakNames));
        const rss = child.rssKiB();
        points.push({
          minute: round((Date.now() - soakStart) / 60_000, 3),
          rssMiB: round((rss?.rss ?? 0) / 1024),
          lag: lags.reduce((s, l) => s + l.lag, 0),
        });
        nextSample += 10_000;
        const last = points.at(-1);
        if (points.length % 6 === 1) say(`  soak ${last?.minute} min: RSS ${last?.rssMiB} MiB, lag ${last?.lag}`);
      }
      const wait = soakStart + (second + 1) * 1000 - Date.now();
      if (wait > 0) await sleep(wait);
    }
    const drainStart = Date.now();
    for (;;) {
      const lags = await fetchLag(admin, group, consumedTopics(soakNames));
      if (lags.every((l) => l.lag === 0) || Date.now() - drainStart > 120_000) break;
      await sleep(250);
    }
    const drainSeconds = (Date.now() - drainStart) / 1000;
    const peak = child.rssKiB();
    await child.stop();
    const warm = points.filter((p) => p.minute >= 1);
    const rssSlope = slope(warm.map((p) => ({ x: p.minute, y: p.rssMiB })));
    const lagSlope = slope(warm.map((p) => ({ x: p.minute, y: p.lag })));
    const third = Math.max(1, Math.floor(warm.length / 3));
    const avg = (list: typeof warm) => list.reduce((s, p) => s + p.rssMiB, 0) / Math.max(1, list.length);
    const result = {
      minutes: SOAK_MINUTES,
      rate: SOAK_RATE,
      samples: points.length,
      rssSlopeMiBPerMinute: round(rssSlope, 2),
      rssFirstThirdMiB: round(avg(warm.slice(0, third))),
      rssLastThirdMiB: round(avg(warm.slice(-third))),
      rssPeakMiB: round((peak?.hwm ?? 0) / 1024),
      lagSlopePerMinute: round(lagSlope, 1),
      lagMax: Math.max(0, ...points.map((p) => p.lag)),
      drainSeconds: round(drainSeconds, 1),
      rssFlat: Math.abs(rssSlope) < 1,
      lagFlat: Math.abs(lagSlope) < SOAK_RATE * 0.05,
      errors: child.errors.slice(0, 10),
    };
    say(
      `soak: RSS slope ${result.rssSlopeMiBPerMinute} MiB/min (${result.rssFlat ? "flat" : "NOT flat"}), ` +
        `lag slope ${result.lagSlopePerMinute}/min (max ${result.lagMax}), drained in ${result.drainSeconds} s`,
    );
    return { soak: result, soakPoints: points };
  }

  // ---- freshness under a steady load ----------------------------------------------------------
  // Records published at a fixed rate (fractions of this run's single-instance capacity, or
  // --freshness-rps), each stamped with the time it is published as its event time; freshness read
  // twice: the service's own agp_freshness_seconds histogram (graph commit − event time), and from
  // outside, the consumer group's committed offsets polled every 200 ms (commit seen − event time).
  const freshnessCapacity =
    flags["freshness-capacity"] !== undefined
      ? Number(flags["freshness-capacity"])
      : runs.some((r) => r.instances === 1)
        ? median(runs.filter((r) => r.instances === 1).map((r) => r.recordsPerSecond))
        : null;
  const freshness: FreshnessResult[] = [];
  if (!flags["skip-freshness"] && FRESHNESS_SECONDS > 0) {
    const plan = freshnessRates(freshnessCapacity, numbers(flags["freshness-rates"]), numbers(flags["freshness-rps"]));
    if (plan.length === 0)
      say(
        "freshness: skipped (no single-instance run to take the capacity from; give --freshness-rps or --freshness-capacity)",
      );
    for (const [n, { rate, fractionOfCapacity }] of plan.entries())
      freshness.push(await runFreshness(n + 1, rate, fractionOfCapacity));
  }

  async function runFreshness(
    runNo: number,
    rate: number,
    fractionOfCapacity: number | null,
  ): Promise<FreshnessResult> {
    const label = `fresh${runNo}`;
    const freshNames = topicNames({
      ...config.topics,
      registryMutation: `${prefix}-${label}.registry-mutation`,
      outcomeCreated: `${prefix}-${label}.outcome-created`,
      escalationEdge: `${prefix}-${label}.escalation-edge`,
    });
    await ensureTopics(admin, topicSpecs(freshNames, { partitions: PARTITIONS, replicationFactor: 1 }));
    const freshIds = await registerSchemas(config.registry, freshNames.source);
    await wipeGraph(driver, database);
    await publishEvents(producer, registry, freshIds, freshNames, log.registry, () => {}, 5000);
    const pool = generateEventLog(SEED + 5 + runNo, { ...size, outcomes: 20_000, escalations: 0 }).outcomes;
    const random = prng(SEED + 20 + runNo);
    const group = `${prefix}-${label}`;
    const child = startProjector(
      {
        ...baseEnv,
        CONSUMER_GROUP: group,
        TOPIC_REGISTRY_MUTATION: freshNames.source["registry-mutation"],
        TOPIC_OUTCOME_CREATED: freshNames.source["outcome-created"],
        TOPIC_ESCALATION_EDGE: freshNames.source["escalation-edge"],
        RETRY_TOPIC_SUFFIX: `.retry-${label}`,
        DLQ_TOPIC_SUFFIX: `.dlq-${label}`,
      },
      label,
    );
    await child.joinedAt;
    for (const started = Date.now(); Date.now() - started < 120_000; ) {
      const lags = await fetchLag(admin, group, [freshNames.source["registry-mutation"]]);
      if (lags.length > 0 && lags.every((l) => l.lag === 0)) break;
      await sleep(250);
    }
    const warmupSeconds = FRESHNESS_WARMUP;
    const escalationShare = 0.2;
    say(
      `freshness ${runNo}: ${rate} records/s${fractionOfCapacity !== null ? ` (${fractionOfCapacity} of ${freshnessCapacity} measured)` : ""}, ` +
        `${warmupSeconds} s warm-up then ${FRESHNESS_SECONDS} s measured; load average ${os
          .loadavg()
          .map((l) => round(l, 2))
          .join(" ")}`,
    );
    const tracker = new CohortTracker();
    const measured = [freshNames.source["outcome-created"], freshNames.source["escalation-edge"]];
    // Outcomes published in the last 30 s, oldest first: [head, eligibleEnd) were published 2-30 s ago.
    const recent: { id: string; at: number }[] = [];
    let head = 0;
    let eligibleEnd = 0;
    const redelivery: EscalationEdge[] = [];
    let k = 0;
    let published = 0;
    let before: Sample[] = [];
    let meter: ReturnType<typeof cpuMeter> | undefined;
    const loadStart = Date.now();
    const measureFrom = loadStart + warmupSeconds * 1000;
    const measureUntil = measureFrom + FRESHNESS_SECONDS * 1000;
    let measuring = false;
    let polling = true;
    let pollErrors = 0;
    const poller = (async () => {
      while (polling) {
        try {
          const committed = await admin.fetchOffsets({ groupId: group, topics: measured });
          const map = new Map<string, number>();
          for (const { topic, partitions } of committed)
            for (const p of partitions) map.set(`${topic}/${p.partition}`, Number(p.offset));
          tracker.settle(map, Date.now());
        } catch {
          pollErrors += 1; // the next poll settles what this one missed, later
        }
        await sleep(200);
      }
    })();
    let lastReport = loadStart;
    for (let tick = 0; ; tick++) {
      const tickStart = loadStart + tick * 100;
      if (tickStart >= measureUntil) break;
      if (!measuring && tickStart >= measureFrom) {
        before = await child.scrape();
        meter = cpuMeter({ ...servers, projector: child.pid });
        measuring = true;
      }
      const elapsed = Date.now() - loadStart;
      // Records due by now minus those already sent: a slow send is caught up by the next tick.
      const due = recordsDue(rate, Math.min(elapsed, measureUntil - loadStart)) - k;
      const now = Date.now();
      const batch: ProjectorEvent[] = [];
      // Escalations between outcomes published 2 to 30 s earlier (10% redelivered copies), once
      // there is such a history; the rest outcomes, stamped with the time they are published.
      while (head < recent.length && (recent[head] as { at: number }).at < now - 30_000) head++;
      eligibleEnd = Math.max(eligibleEnd, head);
      while (eligibleEnd < recent.length && (recent[eligibleEnd] as { at: number }).at <= now - 2_000) eligibleEnd++;
      if (head > 100_000) {
        recent.splice(0, head);
        eligibleEnd -= head;
        head = 0;
      }
      const eligible = eligibleEnd - head;
      for (let i = 0; i < due; i++) {
        if (eligible > 1 && random() < escalationShare) {
          if (redelivery.length > 0 && random() < 0.1) {
            batch.push({ ...(redelivery[Math.floor(random() * redelivery.length)] as EscalationEdge) });
            continue;
          }
          const source = recent[head + Math.floor(random() * eligible)] as { id: string };
          const target = recent[head + Math.floor(random() * eligible)] as { id: string };
          if (source.id !== target.id) {
            const edge: EscalationEdge = {
              kind: "escalation-edge",
              event_id: `${label}-e${k}-${i}`,
              tenant_id: "default",
              source_outcome_id: source.id,
              target_outcome_id: target.id,
              observed_at: now,
            };
            batch.push(edge);
            redelivery.push(edge);
            if (redelivery.length > 2000) redelivery.shift();
            continue;
          }
        }
        const base = pool[(k + i) % pool.length] as OutcomeCreated;
        const id = `${base.outcome_id}-${label}-${k + i}`;
        batch.push({ ...base, outcome_id: id, event_id: `${base.event_id}-${label}-${k + i}`, created_at: now });
        recent.push({ id, at: now });
      }
      k += due;
      if (batch.length > 0) {
        const byTopic = new Map<string, Message[]>();
        for (const event of batch) {
          const topic = freshNames.source[streamOf(event)];
          const messages = byTopic.get(topic) ?? [];
          messages.push(await toMessage(registry, freshIds, event));
          byTopic.set(topic, messages);
        }
        const metadata = await sendBatchAtLeastOnce(producer, {
          topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
        });
        if (measuring) {
          published += batch.length;
          for (const m of metadata) tracker.add(m.topicName, m.partition, Number(m.baseOffset), now);
        }
      }
      if (Date.now() - lastReport > 15_000) {
        lastReport = Date.now();
        say(`  ${label}: ${k} published, ${tracker.unsettledCohorts()} produce request(s) not yet committed`);
      }
      const wait = loadStart + (tick + 1) * 100 - Date.now();
      if (wait > 0) await sleep(wait);
    }
    const publishedSeconds = (Date.now() - measureFrom) / 1000;
    for (const topic of measured)
      for (const p of await admin.fetchTopicOffsets(topic)) tracker.close(topic, p.partition, Number(p.high));
    const drainStart = Date.now();
    while (tracker.unsettledCohorts() > 0 && Date.now() - drainStart < 120_000) await sleep(250);
    const drainSeconds = (Date.now() - drainStart) / 1000;
    polling = false;
    await poller;
    const unsettledAtEnd = tracker.settleRemaining(Date.now());
    const cpuSeconds = meter?.since() ?? {};
    const window = sampleDelta(await child.scrape(), before);
    const peak = child.rssKiB();
    await child.stop();
    const fromHistogram = (stream: Stream) => ({
      observations: total(window, "agp_freshness_seconds_count", { stream }),
      p50: nullable(histogramQuantile(window, "agp_freshness_seconds", 0.5, { stream })),
      p99: nullable(histogramQuantile(window, "agp_freshness_seconds", 0.99, { stream })),
      maxAtMost: histogramMaxBound(window, "agp_freshness_seconds", { stream }),
    });
    const fromRecords = (values: readonly Settled[]) => ({
      records: values.reduce((s, v) => s + v.count, 0),
      p50: nullable(weightedQuantile(values, 0.5)),
      p99: nullable(weightedQuantile(values, 0.99)),
      max: nullable(weightedQuantile(values, 1)),
    });
    const outcomesSettled = tracker.settled.get(freshNames.source["outcome-created"]) ?? [];
    const escalationsSettled = tracker.settled.get(freshNames.source["escalation-edge"]) ?? [];
    const result: FreshnessResult = {
      rate,
      fractionOfCapacity,
      capacity: freshnessCapacity,
      warmupSeconds,
      seconds: FRESHNESS_SECONDS,
      published,
      achievedRate: Math.round(published / publishedSeconds),
      drainSeconds: round(drainSeconds, 1),
      unsettledAtEnd,
      offsetPollErrors: pollErrors,
      histogram: {
        "outcome-created": fromHistogram("outcome-created"),
        "escalation-edge": fromHistogram("escalation-edge"),
      },
      records: {
        all: fromRecords([...outcomesSettled, ...escalationsSettled]),
        "outcome-created": fromRecords(outcomesSettled),
        "escalation-edge": fromRecords(escalationsSettled),
      },
      deferred: total(window, "agp_records_total", { result: "deferred" }),
      transactionRetries: total(window, "agp_transaction_retries_total"),
      batchP50Ms: nullable(histogramQuantile(window, "agp_batch_duration_seconds", 0.5), 1000),
      batchP99Ms: nullable(histogramQuantile(window, "agp_batch_duration_seconds", 0.99), 1000),
      peakRssMiB: round((peak?.hwm ?? 0) / 1024),
      cpuSeconds,
      loadAverageAtEnd: os.loadavg().map((l) => round(l, 2)),
      errors: child.errors.slice(0, 10),
    };
    const h = result.histogram["outcome-created"];
    const r = result.records.all;
    say(
      `freshness ${runNo} at ${rate} records/s (achieved ${result.achievedRate}): records p50 ${r.p50} s, p99 ${r.p99} s, max ${r.max} s; ` +
        `histogram (outcomes) p50 ${h.p50} s, p99 ${h.p99} s, max ≤ ${h.maxAtMost} s; drained in ${result.drainSeconds} s, ` +
        `${result.deferred} deferred; CPU ${JSON.stringify(cpuSeconds)} s`,
    );
    return result;
  }

  // ---- report --------------------------------------------------------------------------------
  await producer.disconnect();
  const single = runs.filter((r) => r.instances === 1);
  const projectorRate = median(single.map((r) => r.recordsPerSecond));
  const byInstances = Object.fromEntries(
    INSTANCES.map((n) => [n, median(runs.filter((r) => r.instances === n).map((r) => r.recordsPerSecond))]),
  );
  const versions = await driver.executeQuery("CALL dbms.components() YIELD name, versions, edition RETURN *");
  const neo4jVersion = versions.records.map((r) => `${r.get("name")} ${r.get("versions")[0]} ${r.get("edition")}`)[0];
  const kafkaPom = fs.readFileSync(path.join(ROOT, "stack/kafka/pom.xml"), "utf8");
  const summary = {
    projectorRecordsPerSecond: projectorRate,
    ceilingRecordsPerSecond: ceiling ? Math.round(ceiling.recordsPerSecond) : null,
    baselineRecordsPerSecond: baseline ? Math.round(baseline.recordsPerSecond) : null,
    projectorOverCeiling: ceiling ? round(projectorRate / ceiling.recordsPerSecond, 3) : null,
    projectorOverBaseline: baseline ? round(projectorRate / baseline.recordsPerSecond, 1) : null,
    scaleOut: Object.fromEntries(
      Object.entries(byInstances).map(([n, rate]) => [
        n,
        { recordsPerSecond: rate, vsOne: round(rate / projectorRate, 2) },
      ]),
    ),
    peakRssMiB: Math.max(...single.flatMap((r) => r.peakRssMiB)),
    peerRecordsPerSecond: peerRuns.length > 0 ? median(peerRuns.map((r) => r.recordsPerSecond)) : null,
    projectorOverPeer:
      peerRuns.length > 0 ? round(projectorRate / median(peerRuns.map((r) => r.recordsPerSecond)), 2) : null,
    /** Each turn's projector run over the peer run that followed it: the ratios to read on a noisy machine. */
    projectorOverPeerPerTurn: peerRuns.map((peer, i) => {
      const projector = single[i];
      return projector ? round(projector.recordsPerSecond / peer.recordsPerSecond, 2) : null;
    }),
    peerPeakRssMiB: peerRuns.length > 0 ? Math.max(...peerRuns.map((r) => r.peakRssMiB)) : null,
    freshness: freshness.map((f) => ({
      rate: f.rate,
      achievedRate: f.achievedRate,
      fractionOfCapacity: f.fractionOfCapacity,
      records: f.records.all,
      histogramOutcomes: f.histogram["outcome-created"],
      histogramEscalations: f.histogram["escalation-edge"],
    })),
  };
  const result = {
    startedAt: started.toISOString(),
    label: flags.label,
    flags: {
      ...flags,
      agents: AGENTS,
      outcomes: OUTCOMES,
      escalations: ESCALATIONS,
      soakMinutes: SOAK_MINUTES,
      freshnessSeconds: FRESHNESS_SECONDS,
      freshnessWarmup: FRESHNESS_WARMUP,
    },
    machine: {
      cores: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      memoryGiB: round(os.totalmem() / 1024 ** 3),
      loadAverageAtEnd: os.loadavg().map((l) => round(l, 2)),
      os: `${os.type()} ${os.release()}`,
      node: process.version,
      neo4j: neo4jVersion,
      kafka:
        usedLocalStack || process.env.STACK_HOME
          ? `Apache Kafka ${/<kafka.version>(.*?)</.exec(kafkaPom)?.[1]} (KRaft, 1 node)`
          : "external",
      stack: "local stack (stack/README.md): Kafka, Apicurio Registry and Neo4j on the same machine",
    },
    projectorEnv: EXTRA_ENV,
    workload: { seed: SEED, size, records: counts, total: events.length },
    summary,
    ceiling: ceiling && {
      recordsPerSecond: Math.round(ceiling.recordsPerSecond),
      sweep: ceiling.sweep.map(compact),
      best: ceiling.best.map(compact),
    },
    baseline,
    runs,
    peer: peerSetup && {
      connector: peerSetup.artifacts.connectorVersion,
      connect: `Apache Kafka Connect ${/<kafka.version>(.*?)</.exec(kafkaPom)?.[1]} (standalone), Apicurio AvroConverter 2.6 (Confluent wire format)`,
      heap: peerSetup.heap,
      best: peerBest,
      sweep: peerSweep,
      runs: peerRuns,
    },
    correctness,
    soak,
    soakPoints,
    freshness,
  };
  const outDir = flags.out ?? path.join(ROOT, "bench/results", quick ? "tmp" : "");
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `${runId}.json`);
  fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  const svg = renderChart({
    title: `agent-graph-projector: ${events.length.toLocaleString("en-US")} records, ${os.cpus().length} cores shared with Kafka and Neo4j`,
    subtitle: `projector/ceiling ${summary.projectorOverCeiling ?? "–"}, projector/baseline ${summary.projectorOverBaseline ?? "–"}×${summary.projectorOverPeer !== null ? `, projector/connector ${summary.projectorOverPeer}×` : ""}, peak RSS ${summary.peakRssMiB} MiB${soak ? `, soak RSS slope ${soak.rssSlopeMiBPerMinute} MiB/min` : ""}`,
    bars: [
      ...(baseline ? [{ label: "baseline (1 record/tx)", value: baseline.recordsPerSecond }] : []),
      ...INSTANCES.map((n) => ({ label: `projector ×${n}`, value: byInstances[n] as number, highlight: true })),
      ...(summary.peerRecordsPerSecond !== null && peerBest
        ? [{ label: `Neo4j connector (${peerBest.batchSize}×${peerBest.tasks})`, value: summary.peerRecordsPerSecond }]
        : []),
      ...(ceiling ? [{ label: "ceiling (no Kafka)", value: ceiling.recordsPerSecond }] : []),
    ],
    soak: soakPoints,
    freshness: freshness.map((f) => ({
      label: `${f.achievedRate.toLocaleString("en-US")} rec/s${f.fractionOfCapacity !== null ? ` (${f.fractionOfCapacity}× capacity)` : ""}`,
      records: f.records.all,
      histogram: f.histogram["outcome-created"],
    })),
  });
  fs.writeFileSync(path.join(outDir, quick ? "latest-quick.svg" : "latest.svg"), svg);
  say(`results: ${path.relative(ROOT, file)}`);
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  // A graph of a few hundred thousand nodes left behind would make the test suites' one-transaction
  // wipe run out of Neo4j's transaction memory on this stack.
  if (!flags["keep-graph"]) await wipeGraph(driver, database);
  for (const cleanup of atExit.splice(0)) await cleanup();
  await admin.disconnect();
  await driver.close();
}

function compact(result: DirectResult) {
  const { batchLatencyMs, ...rest } = result;
  return {
    ...rest,
    seconds: round(rest.seconds, 2),
    recordsPerSecond: Math.round(rest.recordsPerSecond),
    batchP50Ms: round(quantile(batchLatencyMs, 0.5) ?? 0),
    batchP99Ms: round(quantile(batchLatencyMs, 0.99) ?? 0),
  };
}

function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}

/** Clean-ups that also run when the bench fails half-way. */
const atExit: (() => Promise<void>)[] = [];

main().then(
  () => process.exit(0),
  async (error) => {
    say(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    for (const cleanup of atExit) await cleanup().catch(() => {});
    process.exit(1);
  },
);
