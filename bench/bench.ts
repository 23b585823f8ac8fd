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
 *     turns with the projector, and both systems' graphs against the reference model (correctness);
 *   - both again on the log published in dependency order, where the peer builds the whole graph too
 *     (loads/dependency-order.ts): records/s, CPU seconds per record, peak RSS and the graph each left.
 * Results go to bench/results/<timestamp>.json and bench/results/latest.svg (bench/README.md).
 */
import path from "node:path";
import type { Producer } from "kafkajs";
import neo4j from "neo4j-driver";
import { ensureTopics, topicSpecs } from "../src/adapters/kafka/admin.js";
import { createKafka, createProducer } from "../src/adapters/kafka/client.js";
import { publishEvents } from "../src/adapters/kafka/event-publisher.js";
import { createGraphWriter } from "../src/adapters/neo4j/graph-writer.js";
import { registerFindingSchema } from "../src/adapters/registry/findings-subject.js";
import { createSchemaRegistry, registerSchemas } from "../src/adapters/registry/schema-registry.js";
import { type Config, loadConfig } from "../src/config.js";
import { errorMessage } from "../src/errors.js";
import { createLogger } from "../src/logger.js";
import { noopMetrics } from "../src/ports.js";
import { type Stream, topicNames } from "../src/topics.js";
import { referenceGraph } from "../test/support/reference-model.js";
import { generateEventLog } from "../workload/generate.js";
import {
  AGENTS,
  COMPARE_ENV,
  ESCALATIONS,
  EXTRA_ENV,
  eventsOf,
  FRESHNESS_SCALE,
  FRESHNESS_SECONDS,
  flags,
  INSTANCES,
  median,
  numbers,
  OUTCOMES,
  PARTITIONS,
  REPEAT,
  round,
  SEED,
  SOAK_MINUTES,
  say,
  workloadSize,
} from "./args.js";
import { stopRunningChildren } from "./lib/child.js";
import { countsByType } from "./lib/correctness.js";
import { cpuMeter, pidListeningOn, portOf } from "./lib/cpu.js";
import {
  type DirectResult,
  directCounters,
  graphFingerprint,
  loadDirect,
  runBaseline,
  wipeGraph,
} from "./lib/direct.js";
import { achievedOfCapacity, freshnessRates } from "./lib/freshness.js";
import { javaLoadProducer, kafkajsLoadProducer, type LoadProducer } from "./lib/load-producer.js";
import { watchLongTransactions } from "./lib/long-transactions.js";
import { prepareProjector } from "./lib/projector.js";
import { ceilingSweep } from "./loads/ceiling.js";
import { runDependencyOrder } from "./loads/dependency-order.js";
import { runFreshness } from "./loads/freshness.js";
import { peerSweepRun } from "./loads/peer-sweep.js";
import { runProjectors } from "./loads/projectors.js";
import type { BenchRun } from "./loads/run.js";
import { runSoak } from "./loads/soak.js";
import { type CorrectnessRow, runCorrectness } from "./peer/correctness.js";
import { buildPeerForStack, loadPeerEnv } from "./peer/peer.js";
import { type PeerRunResult, type PeerSetup, runPeer } from "./peer/run.js";
import { apicurioApiUrl } from "./peer/worker.js";
import { writeReport } from "./report.js";
import type { CapacitySource, DependencyOrderRun, FreshnessResult, RunResult } from "./results.js";

async function main(): Promise<void> {
  const started = new Date();
  const runId = started.toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
  const { useLocalStackUnlessConfigured, stackKafkaClient } = await import("../stack/api.js");
  const usedLocalStack = await useLocalStackUnlessConfigured(process.env, say);
  if (process.env.BENCH_PROJECTOR_FROM_SOURCE !== "1")
    say(
      `compiling the projector${process.env.BENCH_PROJECTOR_DIR ? ` of ${process.env.BENCH_PROJECTOR_DIR}` : ""} as the image does`,
    );
  const removeBuild = await prepareProjector();
  atExit.push(async () => removeBuild());
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
  const longTransactions = watchLongTransactions(driver, {
    onFirstSeen: (tx) =>
      say(
        `Neo4j: a transaction has run ${Math.round(tx.elapsedMs / 1000)} s (${tx.status}, ${tx.activeLockCount ?? "?"} locks): ${tx.statement.slice(0, 100)}`,
      ),
    onPollError: (error) =>
      say(`Neo4j: SHOW TRANSACTIONS failed (${errorMessage(error)}); the results count failed polls`),
  });
  atExit.push(async () => {
    await longTransactions.stop();
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
  // Whatever the database held (another tenant's graph, the suites' constraints) goes first.
  await wipeGraph(driver, database);
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
  await registerFindingSchema(config.registry, names.findings);
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
  const openLoadProducer = chooseLoadProducer(config, producer, stackKafkaClient());
  const run: BenchRun = {
    config,
    prefix,
    baseEnv,
    kafka,
    admin,
    producer,
    openLoadProducer,
    registry,
    driver,
    database,
    servers,
    log,
    size,
    events,
    counts,
  };

  // ---- ceiling ------------------------------------------------------------------------------
  let ceiling: { sweep: DirectResult[]; best: DirectResult[]; recordsPerSecond: number } | undefined;
  let bestConfig: DirectResult | undefined;
  if (!flags["skip-ceiling"]) {
    const swept = await ceilingSweep(run, graph);
    bestConfig = swept.bestConfig;
    ceiling = { sweep: swept.sweep, best: [], recordsPerSecond: 0 };
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
  let peerSweep: PeerRunResult[] = [];
  let peerBest: { batchSize: number; tasks: number } | undefined;
  const peerRuns: (PeerRunResult & { fingerprint: Record<string, number> })[] = [];
  if (peerSetup) ({ peerSweep, peerBest } = await peerSweepRun(run, peerSetup));
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
  /** `instances` projectors on the log from an empty graph, the graph they leave checked against the ceiling's. */
  const runOnEmptyGraph = async (instances: number, label: string): Promise<RunResult> => {
    await wipeGraph(driver, database);
    const result = await runProjectors(run, instances, label);
    if (ceilingFingerprint && JSON.stringify(result.fingerprint) !== JSON.stringify(ceilingFingerprint)) {
      say(`WARNING: graph after the projector differs from the ceiling's: ${JSON.stringify(result.fingerprint)}`);
    }
    return result;
  };
  const projectorRun = async (instances: number) => {
    runNo += 1;
    runs.push(await runOnEmptyGraph(instances, `r${runNo}x${instances}`));
  };
  // --compare-env: one more single-instance run per turn with that configuration (its graph may
  // differ by design, e.g. FINDINGS_ENABLED=false records no :Finding, so it is not checked against
  // the ceiling's).
  const comparing = Object.keys(COMPARE_ENV).length > 0;
  const comparedRuns: RunResult[] = [];
  const comparedRun = async () => {
    runNo += 1;
    await wipeGraph(driver, database);
    comparedRuns.push(await runProjectors(run, 1, `r${runNo}x1-compared`, COMPARE_ENV));
  };
  if (!flags["skip-warmup"] && INSTANCES.length > 0) {
    // The broker's fetch path and the projector's own code are cold until a first run; the sweep
    // above has warmed Neo4j the same way for the ceiling. This run is reported but not counted.
    await wipeGraph(driver, database);
    const warmup = await runProjectors(run, 1, "warmup");
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
    // The peer, like a compared configuration, goes first every other turn, so neither side always
    // meets the store the ceiling or the other has just written, warmed and left to be checkpointed.
    if (r % 2 === 1) await peerRun();
    // Every instance count runs in every turn, in the opposite order every other turn (1, 2, 3 then
    // 3, 2, 1), so that the host's drift falls on each count alike and the CPU per record of N
    // instances is read against one instance's measured minutes apart (issue 55).
    for (const instances of r % 2 === 0 ? INSTANCES : [...INSTANCES].reverse()) {
      if (instances !== 1) {
        await projectorRun(instances);
        continue;
      }
      if (comparing && r % 2 === 1) await comparedRun();
      await projectorRun(1);
      if (comparing && r % 2 === 0) await comparedRun();
    }
    if (r % 2 === 0) await peerRun();
  }
  if (ceiling) ceiling.recordsPerSecond = median(ceiling.best.map((b) => b.recordsPerSecond));

  // ---- like for like: the log published in dependency order, both systems building all of it ----
  let dependencyOrder: DependencyOrderRun[] = [];
  const reference = referenceGraph(events);
  if (!flags["skip-dependency-order"] && INSTANCES.includes(1))
    dependencyOrder = await runDependencyOrder(
      run,
      graph,
      reference,
      peerSetup && peerBest ? { setup: peerSetup, ...peerBest } : undefined,
    );

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
    ({ soak, soakPoints } = await runSoak(run));
  }

  // ---- freshness under a steady load ----------------------------------------------------------
  // Records published at a fixed rate (fractions of the backlog capacity, or --freshness-rps), each
  // stamped with the time it is published as its event time; freshness read twice: the service's own
  // agp_freshness_seconds histogram (graph commit − event time), and from outside, the consumer
  // group's committed offsets polled every 200 ms (commit seen − event time).
  //
  // The capacity a fraction is taken of is measured again right before each load, and once more
  // after the last (capacity checks: one single-instance backlog run on the log each): the host's
  // speed moves by a fifth within minutes, and the runs above end half an hour before the loads.
  const fractions = numbers(flags["freshness-rates"]);
  const explicitRates = numbers(flags["freshness-rps"]);
  const givenCapacity = flags["freshness-capacity"] !== undefined ? Number(flags["freshness-capacity"]) : null;
  const capacityChecks: RunResult[] = [];
  const freshness: FreshnessResult[] = [];
  if (!flags["skip-freshness"] && FRESHNESS_SECONDS > 0) {
    const checking = explicitRates.length === 0 && givenCapacity === null && !flags["skip-capacity-checks"];
    const checkCapacity = async (): Promise<number> => {
      const check = await runOnEmptyGraph(1, `cap${capacityChecks.length + 1}`);
      capacityChecks.push(check);
      say(`capacity check ${capacityChecks.length}: ${check.recordsPerSecond} rec/s`);
      return check.recordsPerSecond;
    };
    if (checking && fractions.length > 0) {
      let before = await checkCapacity();
      for (const [n, fraction] of fractions.entries()) {
        const [planned] = freshnessRates(before, [fraction], []);
        if (!planned) {
          say(`freshness: the rest skipped (capacity check ${capacityChecks.length} measured no capacity)`);
          break;
        }
        const load = await runFreshness(
          run,
          n + 1,
          planned.rate,
          planned.fractionOfCapacity,
          before,
          "check-before",
          FRESHNESS_SCALE,
        );
        const after = await checkCapacity();
        freshness.push({
          ...load,
          capacityAfter: after,
          achievedOfCapacity: achievedOfCapacity(load.achievedRate, before, after),
        });
        before = after;
      }
    } else {
      const single = runs.filter((r) => r.instances === 1);
      const capacity = givenCapacity ?? (single.length > 0 ? median(single.map((r) => r.recordsPerSecond)) : null);
      const from: CapacitySource | undefined =
        givenCapacity !== null ? "given" : capacity !== null ? "single-instance-runs" : undefined;
      const plan = freshnessRates(capacity, fractions, explicitRates);
      if (plan.length === 0)
        say(
          "freshness: skipped (no capacity to take fractions of: give --freshness-rps or --freshness-capacity, or leave the capacity checks on)",
        );
      for (const [n, { rate, fractionOfCapacity }] of plan.entries())
        freshness.push(await runFreshness(run, n + 1, rate, fractionOfCapacity, capacity, from, FRESHNESS_SCALE));
    }
  }

  // ---- report --------------------------------------------------------------------------------
  await producer.disconnect();
  await writeReport({
    started,
    runId,
    usedLocalStack,
    run,
    ceiling,
    baseline,
    runs,
    comparedRuns,
    peerSetup,
    peerBest,
    peerSweep,
    peerRuns,
    dependencyOrder,
    reference: countsByType(reference),
    correctness,
    soak,
    soakPoints,
    freshness,
    capacityChecks,
    longTransactions: await longTransactions.stop(),
  });
  // A graph of a few hundred thousand nodes left behind would make the test suites' one-transaction
  // wipe run out of Neo4j's transaction memory on this stack.
  if (!flags["keep-graph"]) await wipeGraph(driver, database);
  for (const cleanup of atExit.splice(0)) await cleanup();
  await admin.disconnect();
  await driver.close();
}
/**
 * The steady loads' producer: Kafka's Java client where the local stack's jars are at hand and the
 * brokers are plaintext, kafkajs otherwise, or as `--load-producer` says. With the Java client the
 * bench and its producer take about half the CPU per record that kafkajs did (bench/HISTORY.md,
 * twentieth round), on the cores the projector and Neo4j share.
 */
function chooseLoadProducer(
  config: Config,
  producer: Producer,
  stackClient: { java: string; classpath: string } | undefined,
): () => LoadProducer {
  const java = !config.kafka.ssl && !config.kafka.sasl ? stackClient : undefined;
  const choice = flags["load-producer"] ?? (java ? "java" : "kafkajs");
  if (choice === "kafkajs") return () => kafkajsLoadProducer(producer);
  if (choice !== "java") throw new Error(`--load-producer ${choice}: java or kafkajs`);
  if (!java)
    throw new Error(
      "--load-producer java needs plaintext brokers and the local stack's Kafka jars (npm run stack:up fetches them)",
    );
  return () => javaLoadProducer(java.java, java.classpath, config.kafka.brokers.join(","));
}

/** Clean-ups that also run when the bench fails half-way. */
const atExit: (() => Promise<void>)[] = [];

main().then(
  () => process.exit(0),
  async (error) => {
    say(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await stopRunningChildren();
    for (const cleanup of atExit) await cleanup().catch(() => {});
    process.exit(1);
  },
);
