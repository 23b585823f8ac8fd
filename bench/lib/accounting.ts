/**
 * The accounting of a projector run (issue 55): CPU seconds per record of each process, and what the
 * instances did besides applying records — transactions and rows per transaction per stream,
 * deferrals and retry-topic round trips, catch-up hold pauses, deadlock retries, fetches and lag
 * polls — from the instances' own /metrics, added up, so that one instance and N can be set side by
 * side. A counter the build does not export (an older build) reads null.
 */
import { STREAMS, type Stream } from "../../src/topics.js";
import { median, round } from "../args.js";
import type { CpuSeconds } from "./cpu.js";
import { type Sample, total } from "./prom.js";

export interface RunAccounting {
  /** CPU seconds per record: total = the projector processes + Neo4j + Kafka; each of them apart. */
  readonly cpuSecondsPerRecord: {
    readonly total: number | null;
    readonly projectors: number | null;
    readonly neo4j: number | null;
    readonly kafka: number | null;
  };
  /** Each projector process's CPU seconds over the run. */
  readonly projectorCpuSeconds: (number | null)[];
  /**
   * Per instance, when it joined after the first one (seconds) and the CPU seconds it spent from the
   * first join to its own (the end of its start-up, inside the measured window). Not in results
   * before it existed.
   */
  readonly joins?: readonly { readonly afterSeconds: number; readonly cpuSeconds: number | null }[];
  readonly perStream: Record<Stream, { readonly transactions: number; readonly rowsPerTransaction: number | null }>;
  readonly deferred: number;
  /** Records consumed from the retry topics: each is one round trip through Kafka. */
  readonly retryRecordsConsumed: number;
  readonly deadlockRetries: number;
  readonly catchUpHoldPauses: number | null;
  readonly fetches: number | null;
  readonly fetchesPerThousandRecords: number | null;
  readonly lagPolls: number | null;
  readonly rebalances: number;
}

const has = (samples: readonly Sample[], name: string) => samples.some((s) => s.name === name);
const perRecord = (seconds: number | null, records: number) =>
  seconds === null || records === 0 ? null : round(seconds / records, 8);

/** CPU seconds of the projector children (named `projector`, `projector1`, …) added up. */
export function projectorCpu(cpu: CpuSeconds): { each: (number | null)[]; sum: number | null } {
  const each = Object.entries(cpu)
    .filter(([name]) => /^projector\d*$/.test(name))
    .map(([, seconds]) => seconds);
  return { each, sum: each.some((s) => s === null) ? null : each.reduce<number>((a, b) => a + (b as number), 0) };
}

/** `samples`: the instances' metrics added up; `retryTopics`: the run's retry topic names. */
export function runAccounting(
  samples: readonly Sample[],
  cpu: CpuSeconds,
  records: number,
  retryTopics: readonly string[],
  joins: NonNullable<RunAccounting["joins"]> = [],
): RunAccounting {
  const projectors = projectorCpu(cpu);
  const neo4j = cpu.neo4j ?? null;
  const kafka = cpu.kafka ?? null;
  const sum = projectors.sum === null || neo4j === null || kafka === null ? null : projectors.sum + neo4j + kafka;
  const counter = (name: string, filter: Record<string, string> = {}) =>
    has(samples, name) ? total(samples, name, filter) : null;
  const fetches = counter("agp_fetches_total");
  return {
    cpuSecondsPerRecord: {
      total: perRecord(sum, records),
      projectors: perRecord(projectors.sum, records),
      neo4j: perRecord(neo4j, records),
      kafka: perRecord(kafka, records),
    },
    projectorCpuSeconds: projectors.each,
    joins,
    perStream: Object.fromEntries(
      STREAMS.map((stream) => {
        const transactions = total(samples, "agp_batch_size_records_count", { stream });
        const rows = total(samples, "agp_batch_size_records_sum", { stream });
        return [stream, { transactions, rowsPerTransaction: transactions > 0 ? round(rows / transactions) : null }];
      }),
    ) as RunAccounting["perStream"],
    deferred: total(samples, "agp_records_total", { result: "deferred" }),
    retryRecordsConsumed: retryTopics.reduce(
      (sum, topic) => sum + total(samples, "agp_records_consumed_total", { topic }),
      0,
    ),
    deadlockRetries: total(samples, "agp_transaction_retries_total", { reason: "DeadlockDetected" }),
    catchUpHoldPauses: counter("agp_partition_pauses_total", { reason: "catch-up-hold" }),
    fetches,
    fetchesPerThousandRecords: fetches === null || records === 0 ? null : round((fetches * 1000) / records, 2),
    lagPolls: counter("agp_lag_polls_total"),
    rebalances: total(samples, "agp_rebalances_total"),
  };
}

/** The runs of each instance count, their medians: one row of the accounting table per count. */
export interface AccountingRow {
  readonly instances: number;
  readonly runs: number;
  readonly recordsPerSecond: number;
  readonly cpuMicrosecondsPerRecord: {
    total: number | null;
    projectors: number | null;
    neo4j: number | null;
    kafka: number | null;
  };
  /** Over the single-instance median (null without single-instance runs). */
  readonly vsOne: { total: number | null; neo4j: number | null };
  /**
   * Each turn's run over the same turn's single-instance run, in turn order: the ratios to read on a
   * host whose speed drifts between turns (runs minutes apart are compared, not medians of different hours).
   */
  readonly vsOnePerTurn: { total: number[]; neo4j: number[] };
  readonly projectorCpuSecondsPerInstance: number | null;
  /** The last instance's join after the first (s), and the start-up CPU-s all instances spent in the window. */
  readonly lastJoinAfterSeconds: number | null;
  readonly startupCpuSecondsInWindow: number | null;
  readonly transactions: Record<Stream, number | null>;
  readonly rowsPerTransaction: Record<Stream, number | null>;
  readonly deferred: number | null;
  readonly retryRecordsConsumed: number | null;
  readonly deadlockRetries: number | null;
  readonly catchUpHoldPauses: number | null;
  readonly fetchesPerThousandRecords: number | null;
  readonly lagPolls: number | null;
  readonly rebalances: number | null;
}

const med = (values: readonly (number | null | undefined)[]): number | null => {
  const known = values.filter((v): v is number => typeof v === "number");
  return known.length > 0 ? median(known) : null;
};
const micro = (v: number | null) => (v === null ? null : round(v * 1e6, 1));
const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : round(a / b, 3));

export function accountingRows(
  runs: readonly { instances: number; recordsPerSecond: number; accounting?: RunAccounting }[],
  /** The turn of each run (same order as `runs`); without it there are no per-turn ratios. */
  turns: readonly number[] = [],
): AccountingRow[] {
  const perTurn = (instances: number, key: "total" | "neo4j") =>
    [...new Set(turns)].flatMap((turn) => {
      const inTurn = (n: number) =>
        runs.find((r, i) => turns[i] === turn && r.instances === n)?.accounting?.cpuSecondsPerRecord[key] ?? null;
      const value = ratio(inTurn(instances), inTurn(1));
      return value === null ? [] : [value];
    });
  const counts = [...new Set(runs.map((r) => r.instances))].sort((a, b) => a - b);
  const rows = counts.map((instances) => {
    const of = runs.filter((r) => r.instances === instances && r.accounting);
    const a = of.map((r) => r.accounting as RunAccounting);
    const cpu = (key: keyof RunAccounting["cpuSecondsPerRecord"]) => med(a.map((x) => x.cpuSecondsPerRecord[key]));
    const byStream = (f: (x: RunAccounting, s: Stream) => number | null) =>
      Object.fromEntries(STREAMS.map((s) => [s, med(a.map((x) => f(x, s)))])) as Record<Stream, number | null>;
    return {
      instances,
      runs: of.length,
      recordsPerSecond: med(of.map((r) => r.recordsPerSecond)) ?? 0,
      perRecord: { total: cpu("total"), projectors: cpu("projectors"), neo4j: cpu("neo4j"), kafka: cpu("kafka") },
      projectorCpuSecondsPerInstance: med(
        a.map((x) => {
          const known = x.projectorCpuSeconds.filter((s): s is number => s !== null);
          return known.length > 0 ? round(known.reduce((s, v) => s + v, 0) / known.length, 2) : null;
        }),
      ),
      lastJoinAfterSeconds: med(
        a.map((x) => ((x.joins ?? []).length > 0 ? Math.max(...(x.joins ?? []).map((j) => j.afterSeconds)) : null)),
      ),
      startupCpuSecondsInWindow: med(
        a.map((x) =>
          (x.joins ?? []).length > 0 && (x.joins ?? []).every((j) => j.cpuSeconds !== null)
            ? round(
                (x.joins ?? []).reduce((sum, j) => sum + (j.cpuSeconds as number), 0),
                2,
              )
            : null,
        ),
      ),
      transactions: byStream((x, s) => x.perStream[s].transactions),
      rowsPerTransaction: byStream((x, s) => x.perStream[s].rowsPerTransaction),
      deferred: med(a.map((x) => x.deferred)),
      retryRecordsConsumed: med(a.map((x) => x.retryRecordsConsumed)),
      deadlockRetries: med(a.map((x) => x.deadlockRetries)),
      catchUpHoldPauses: med(a.map((x) => x.catchUpHoldPauses)),
      fetchesPerThousandRecords: med(a.map((x) => x.fetchesPerThousandRecords)),
      lagPolls: med(a.map((x) => x.lagPolls)),
      rebalances: med(a.map((x) => x.rebalances)),
    };
  });
  const one = rows.find((r) => r.instances === 1);
  return rows.map(({ perRecord, ...row }) => ({
    ...row,
    cpuMicrosecondsPerRecord: {
      total: micro(perRecord.total),
      projectors: micro(perRecord.projectors),
      neo4j: micro(perRecord.neo4j),
      kafka: micro(perRecord.kafka),
    },
    vsOne: {
      total: ratio(perRecord.total, one?.perRecord.total ?? null),
      neo4j: ratio(perRecord.neo4j, one?.perRecord.neo4j ?? null),
    },
    vsOnePerTurn: { total: perTurn(row.instances, "total"), neo4j: perTurn(row.instances, "neo4j") },
  }));
}

const cell = (v: number | null | undefined) => (v === null || v === undefined ? "–" : String(v));

/** The accounting table as text, one column per instance count (what the bench prints). */
export function accountingTable(rows: readonly AccountingRow[]): string {
  const lines: [string, (r: AccountingRow) => string][] = [
    ["runs (medians over them)", (r) => cell(r.runs)],
    ["records/s", (r) => cell(r.recordsPerSecond)],
    ["CPU µs/record, total", (r) => cell(r.cpuMicrosecondsPerRecord.total)],
    ["  projector processes", (r) => cell(r.cpuMicrosecondsPerRecord.projectors)],
    ["  Neo4j", (r) => cell(r.cpuMicrosecondsPerRecord.neo4j)],
    ["  Kafka", (r) => cell(r.cpuMicrosecondsPerRecord.kafka)],
    ["total / one instance's", (r) => cell(r.vsOne.total)],
    ["Neo4j / one instance's", (r) => cell(r.vsOne.neo4j)],
    ["  total, per turn", (r) => r.vsOnePerTurn.total.join(" ") || "–"],
    ["  Neo4j, per turn", (r) => r.vsOnePerTurn.neo4j.join(" ") || "–"],
    ["projector CPU-s per instance", (r) => cell(r.projectorCpuSecondsPerInstance)],
    ["last join after the first (s)", (r) => cell(r.lastJoinAfterSeconds)],
    ["start-up CPU-s in the window", (r) => cell(r.startupCpuSecondsInWindow)],
    ...STREAMS.flatMap((s): [string, (r: AccountingRow) => string][] => [
      [`${s}: transactions`, (r) => cell(r.transactions[s])],
      [`${s}: rows/transaction`, (r) => cell(r.rowsPerTransaction[s])],
    ]),
    ["deferred records", (r) => cell(r.deferred)],
    ["retry-topic records consumed", (r) => cell(r.retryRecordsConsumed)],
    ["deadlock retries", (r) => cell(r.deadlockRetries)],
    ["catch-up hold pauses", (r) => cell(r.catchUpHoldPauses)],
    ["fetches per 1,000 records", (r) => cell(r.fetchesPerThousandRecords)],
    ["lag polls", (r) => cell(r.lagPolls)],
    ["rebalances (joins)", (r) => cell(r.rebalances)],
  ];
  const header = ["", ...rows.map((r) => `×${r.instances}`)];
  const body = lines.map(([name, f]) => [name, ...rows.map(f)]);
  const widths = header.map((_, i) => Math.max(...[header, ...body].map((line) => (line[i] as string).length)));
  return [header, ...body]
    .map((line) =>
      line.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join("  "),
    )
    .join("\n");
}
