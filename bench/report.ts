/** The results file (bench/results/<run>.json), its summary on stdout and the chart (latest.svg). */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  AGENTS,
  COMPARE_ENV,
  ESCALATIONS,
  EXTRA_ENV,
  FRESHNESS_SECONDS,
  FRESHNESS_WARMUP,
  flags,
  INSTANCES,
  median,
  OUTCOMES,
  quick,
  ROOT,
  round,
  SEED,
  SOAK_MINUTES,
  say,
} from "./args.js";
import { accountingRows, accountingTable } from "./lib/accounting.js";
import { chartFromResults } from "./lib/chart.js";
import type { GraphCounts } from "./lib/correctness.js";
import type { CpuSeconds } from "./lib/cpu.js";
import type { DirectResult } from "./lib/direct.js";
import type { LongTransaction } from "./lib/long-transactions.js";
import { quantile } from "./lib/prom.js";
import { renderChart } from "./lib/svg.js";
import { dependencyOrderSummary } from "./loads/dependency-order.js";
import type { BenchRun } from "./loads/run.js";
import type { CorrectnessRow } from "./peer/correctness.js";
import type { PeerRunResult, PeerSetup } from "./peer/run.js";
import type { DependencyOrderRun, FreshnessResult, RunResult } from "./results.js";

export interface ReportInput {
  readonly started: Date;
  readonly runId: string;
  readonly usedLocalStack: boolean;
  readonly run: BenchRun;
  readonly ceiling: { sweep: DirectResult[]; best: DirectResult[]; recordsPerSecond: number } | undefined;
  readonly baseline: { records: number; seconds: number; recordsPerSecond: number } | undefined;
  readonly runs: RunResult[];
  /** Single-instance runs with --compare-env, one per turn. */
  readonly comparedRuns: RunResult[];
  readonly peerSetup: PeerSetup | undefined;
  readonly peerBest: { batchSize: number; tasks: number } | undefined;
  readonly peerSweep: PeerRunResult[];
  readonly peerRuns: (PeerRunResult & { fingerprint: Record<string, number> })[];
  /** The like-for-like comparison (bench/loads/dependency-order.ts) and the reference model's counts. */
  readonly dependencyOrder: DependencyOrderRun[];
  readonly reference: GraphCounts;
  readonly correctness: { workload: Record<string, number>; rows: CorrectnessRow[] } | undefined;
  readonly soak: Record<string, unknown> | undefined;
  readonly soakPoints: { minute: number; rssMiB: number; lag: number }[];
  readonly freshness: FreshnessResult[];
  /** The backlog runs right before each steady load and after the last (the capacity checks). */
  readonly capacityChecks: RunResult[];
  /** Neo4j transactions seen running over 10 s during the whole run (bench/lib/long-transactions.ts). */
  readonly longTransactions: { transactions: LongTransaction[]; polls: number; failedPolls: number };
}

export async function writeReport(input: ReportInput): Promise<void> {
  const { started, runId, usedLocalStack, run, ceiling, baseline, runs, peerSetup, peerBest, peerSweep, peerRuns } =
    input;
  const { correctness, soak, soakPoints, freshness, capacityChecks, longTransactions, comparedRuns } = input;
  const { driver, size, counts, events } = run;
  const single = runs.filter((r) => r.instances === 1);
  const projectorRate = median(single.map((r) => r.recordsPerSecond));
  const byInstances = Object.fromEntries(
    INSTANCES.map((n) => [n, median(runs.filter((r) => r.instances === n).map((r) => r.recordsPerSecond))]),
  );
  const { dependencyOrder, reference } = input;
  // Each turn ran every instance count once (bench.ts), so a run's turn is its place in `runs`.
  const accounting = accountingRows(
    runs,
    runs.map((_, i) => Math.floor(i / Math.max(1, INSTANCES.length))),
  );
  const versions = await driver.executeQuery("CALL dbms.components() YIELD name, versions, edition RETURN *");
  const neo4jVersion = versions.records.map((r) => `${r.get("name")} ${r.get("versions")[0]} ${r.get("edition")}`)[0];
  const kafkaPom = fs.readFileSync(path.join(ROOT, "stack/kafka/pom.xml"), "utf8");
  // A run is only comparable with one on the same page cache (the stack's STACK_NEO4J_PAGECACHE).
  const pageCache = await driver.executeQuery(
    "SHOW SETTINGS YIELD name, value WHERE name = 'server.memory.pagecache.size' RETURN value",
    {},
    { database: "system" },
  );
  const neo4jPageCache = pageCache.records[0]?.get("value") as string | undefined;
  const summary = {
    projectorRecordsPerSecond: projectorRate,
    ceilingRecordsPerSecond: ceiling ? Math.round(ceiling.recordsPerSecond) : null,
    baselineRecordsPerSecond: baseline ? Math.round(baseline.recordsPerSecond) : null,
    projectorOverCeiling: ceiling ? round(projectorRate / ceiling.recordsPerSecond, 3) : null,
    projectorOverBaseline: baseline ? round(projectorRate / baseline.recordsPerSecond, 1) : null,
    /**
     * Per instance count, medians over its runs: records/s, and CPU seconds per record, total (the
     * projector processes, Neo4j and Kafka) and Neo4j's, with their ratio to one instance's (issue 55).
     */
    scaleOut: Object.fromEntries(
      Object.entries(byInstances).map(([n, rate]) => {
        const row = accounting.find((r) => r.instances === Number(n));
        const perRecord = (v: number | null | undefined) => (v === null || v === undefined ? null : round(v / 1e6, 8));
        return [
          n,
          {
            recordsPerSecond: rate,
            vsOne: round(rate / projectorRate, 2),
            cpuSecondsPerRecord: {
              total: perRecord(row?.cpuMicrosecondsPerRecord.total),
              neo4j: perRecord(row?.cpuMicrosecondsPerRecord.neo4j),
              projectors: perRecord(row?.cpuMicrosecondsPerRecord.projectors),
              kafka: perRecord(row?.cpuMicrosecondsPerRecord.kafka),
            },
            cpuVsOne: row?.vsOne ?? null,
          },
        ];
      }),
    ),
    peakRssMiB: Math.max(...single.flatMap((r) => r.peakRssMiB)),
    compared:
      comparedRuns.length > 0
        ? {
            env: COMPARE_ENV,
            recordsPerSecond: median(comparedRuns.map((r) => r.recordsPerSecond)),
            /** Each turn's compared run over that turn's default run. */
            overDefaultPerTurn: comparedRuns.map((compared, i) => {
              const projector = single[i];
              return projector ? round(compared.recordsPerSecond / projector.recordsPerSecond, 3) : null;
            }),
            cpuSecondsPerTurn: comparedRuns.map((r) => r.cpuSeconds),
            defaultCpuSecondsPerTurn: single.map((r) => r.cpuSeconds),
          }
        : null,
    peerRecordsPerSecond: peerRuns.length > 0 ? median(peerRuns.map((r) => r.recordsPerSecond)) : null,
    projectorOverPeer:
      peerRuns.length > 0 ? round(projectorRate / median(peerRuns.map((r) => r.recordsPerSecond)), 2) : null,
    /** Each turn's projector run over the same turn's peer run: the ratios to read on a noisy machine. */
    projectorOverPeerPerTurn: peerRuns.map((peer, i) => {
      const projector = single[i];
      return projector ? round(projector.recordsPerSecond / peer.recordsPerSecond, 2) : null;
    }),
    peerPeakRssMiB: peerRuns.length > 0 ? Math.max(...peerRuns.map((r) => r.peakRssMiB)) : null,
    /** CPU seconds of the system's own process per record, median over the turns above. */
    projectorCpuSecondsPerRecord: cpuPerRecord(single, "projector"),
    peerCpuSecondsPerRecord: cpuPerRecord(peerRuns, "connect"),
    /** The graph the last turn of each left (the peer's escalations mostly find nothing to MATCH here). */
    projectorGraph: single[single.length - 1]?.fingerprint ?? null,
    peerGraph: peerRuns[peerRuns.length - 1]?.fingerprint ?? null,
    /** The log published in dependency order: both systems build the whole graph. */
    dependencyOrder: dependencyOrder.length > 0 ? dependencyOrderSummary(dependencyOrder, reference) : null,
    longTransactions: longTransactions.transactions.length,
    longTransactionPolls: { answered: longTransactions.polls, failed: longTransactions.failedPolls },
    freshness: freshness.map((f) => ({
      rate: f.rate,
      achievedRate: f.achievedRate,
      fractionOfCapacity: f.fractionOfCapacity,
      capacity: f.capacity,
      capacityFrom: f.capacityFrom ?? null,
      capacityAfter: f.capacityAfter ?? null,
      achievedOfCapacity: f.achievedOfCapacity ?? null,
      records: f.records.all,
      recordsOutcomes: f.records["outcome-created"],
      recordsEscalations: f.records["escalation-edge"],
      histogramOutcomes: f.histogram["outcome-created"],
      histogramEscalations: f.histogram["escalation-edge"],
      oldestUnappliedMaxSeconds: f.oldestUnappliedMaxSeconds,
      findings: f.findings ?? null,
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
      neo4jPageCache,
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
    /** The accounting table the bench prints, per instance count (bench/lib/accounting.ts). */
    accounting,
    runs,
    comparedRuns,
    peer: peerSetup && {
      connector: peerSetup.artifacts.connectorVersion,
      connect: `Apache Kafka Connect ${/<kafka.version>(.*?)</.exec(kafkaPom)?.[1]} (standalone), Apicurio AvroConverter 2.6 (Confluent wire format)`,
      heap: peerSetup.heap,
      best: peerBest,
      sweep: peerSweep,
      runs: peerRuns,
    },
    dependencyOrder:
      dependencyOrder.length > 0 ? { peerConfig: peerBest ?? null, reference, runs: dependencyOrder } : null,
    correctness,
    soak,
    soakPoints,
    freshness,
    capacityChecks,
    longTransactions: longTransactions.transactions,
  };
  const outDir = flags.out ?? path.join(ROOT, "bench/results", quick ? "tmp" : "");
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `${runId}.json`);
  fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  const svg = renderChart(chartFromResults(result));
  fs.writeFileSync(path.join(outDir, quick ? "latest-quick.svg" : "latest.svg"), svg);
  say(`results: ${path.relative(ROOT, file)}`);
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  if (accounting.length > 0)
    say(`accounting per instance count (medians over the runs):\n${accountingTable(accounting)}`);
}

function cpuPerRecord(runs: readonly { records: number; cpuSeconds: CpuSeconds }[], name: string): number | null {
  const values = runs.flatMap((r) => {
    const cpu = r.cpuSeconds[name];
    return cpu == null ? [] : [cpu / r.records];
  });
  return values.length > 0 ? round(median(values), 6) : null;
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
