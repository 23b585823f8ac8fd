/**
 * The chart's input from a results file (bench/report.ts writes both; bench/chart.ts redraws the chart
 * of any results file), so that a chart can be drawn again without running the loads again.
 */
import type { FreshnessResult } from "../results.js";
import type { ChartInput, FreshnessRow } from "./svg.js";

/** What the chart reads of a results file; older files have the same fields. */
export interface ChartedResults {
  readonly machine: { readonly cores: number };
  readonly workload: { readonly total: number };
  readonly summary: {
    readonly projectorOverCeiling: number | null;
    readonly projectorOverBaseline: number | null;
    readonly projectorOverPeer: number | null;
    readonly peakRssMiB: number;
    readonly peerRecordsPerSecond: number | null;
    readonly scaleOut: Record<
      string,
      {
        readonly recordsPerSecond: number;
        /** Not in results before it existed. */
        readonly cpuSecondsPerRecord?: { readonly total: number | null; readonly neo4j: number | null };
      }
    >;
  };
  readonly baseline?: { readonly recordsPerSecond: number } | null;
  readonly ceiling?: { readonly recordsPerSecond: number } | null;
  readonly peer?: { readonly best?: { readonly batchSize: number; readonly tasks: number } | null } | null;
  readonly soak?: { readonly rssSlopeMiBPerMinute?: unknown } | null;
  readonly soakPoints?: readonly { minute: number; rssMiB: number; lag: number }[];
  readonly freshness?: readonly FreshnessResult[];
}

const STREAMS = [
  ["outcome-created", "outcomes"],
  ["escalation-edge", "escalations"],
] as const;

const num = (n: number) => n.toLocaleString("en-US");

/** What the capacity was: checked right before the load (and after it), or measured earlier. */
function capacityNote(f: FreshnessResult): string {
  const capacity = num(f.capacity as number);
  if (f.capacityFrom !== "check-before") return `${capacity} rec/s measured`;
  const after = f.capacityAfter ? `, ${num(f.capacityAfter)} after` : "";
  return `${capacity} rec/s just before${after}`;
}

/** One steady-load rate, each stream's figures from the records' own times and from the histogram. */
export function freshnessRow(f: FreshnessResult): FreshnessRow {
  const rate = `${num(f.achievedRate)} rec/s`;
  return {
    label:
      f.fractionOfCapacity !== null
        ? `${f.fractionOfCapacity}× capacity${f.capacity ? ` (${capacityNote(f)})` : ""}: ${rate}`
        : rate,
    streams: STREAMS.map(([stream, name]) => ({
      stream: name,
      records: f.records[stream],
      histogram: f.histogram[stream],
    })),
  };
}

/** CPU per record beside a projector bar: all processes (projectors, Neo4j, Kafka), then Neo4j's. */
const cpuNote = (total: number, neo4j: number | null) =>
  `(${Math.round(total * 1e6)} CPU-µs/rec${neo4j !== null ? `, Neo4j ${Math.round(neo4j * 1e6)}` : ""})`;

export function chartFromResults(result: ChartedResults): ChartInput {
  const { summary } = result;
  const instances = Object.keys(summary.scaleOut).sort((a, b) => Number(a) - Number(b));
  const peerBest = result.peer?.best;
  const slope = result.soak?.rssSlopeMiBPerMinute;
  return {
    title: `agent-graph-projector: ${num(result.workload.total)} records, ${result.machine.cores} cores shared with Kafka and Neo4j`,
    subtitle:
      `projector/ceiling ${summary.projectorOverCeiling ?? "–"}, projector/baseline ${summary.projectorOverBaseline ?? "–"}×` +
      `${summary.projectorOverPeer !== null ? `, projector/connector ${summary.projectorOverPeer}×` : ""}, peak RSS ${summary.peakRssMiB} MiB` +
      `${slope !== undefined ? `, soak RSS slope ${slope} MiB/min` : ""}`,
    bars: [
      ...(result.baseline ? [{ label: "baseline (1 record/tx)", value: result.baseline.recordsPerSecond }] : []),
      ...instances.map((n) => {
        const { recordsPerSecond, cpuSecondsPerRecord: cpu } = summary.scaleOut[
          n
        ] as ChartedResults["summary"]["scaleOut"][string];
        return {
          label: `projector ×${n}`,
          value: recordsPerSecond,
          ...(cpu?.total != null ? { note: cpuNote(cpu.total, cpu.neo4j) } : {}),
          highlight: true,
        };
      }),
      ...(summary.peerRecordsPerSecond !== null && peerBest
        ? [{ label: `Neo4j connector (${peerBest.batchSize}×${peerBest.tasks})`, value: summary.peerRecordsPerSecond }]
        : []),
      ...(result.ceiling ? [{ label: "ceiling (no Kafka)", value: result.ceiling.recordsPerSecond }] : []),
    ],
    soak: result.soakPoints ?? [],
    freshness: (result.freshness ?? []).map(freshnessRow),
  };
}
