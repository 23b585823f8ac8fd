/** The benchmark's command line (bench/README.md) and the small helpers every part of it uses. */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type ParseArgsConfig, parseArgs } from "node:util";
import type { ProjectorEvent } from "../src/model/events.js";
import type { EventLog } from "../workload/generate.js";
import { parseScalePlan, type ScaleStep } from "./lib/scale-plan.js";

export { workloadSize } from "./lib/workload-size.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const OPTIONS = {
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
  "skip-dependency-order": { type: "boolean", default: false },
  "skip-freshness": { type: "boolean", default: false },
  "skip-capacity-checks": { type: "boolean", default: false },
  "freshness-seconds": { type: "string" },
  "freshness-warmup": { type: "string" },
  "freshness-rates": { type: "string", default: "0.5,0.9" },
  "freshness-rps": { type: "string" },
  "freshness-capacity": { type: "string" },
  "freshness-scale": { type: "string" },
  "load-producer": { type: "string" },
  env: { type: "string", multiple: true, default: [] },
  "compare-env": { type: "string", multiple: true, default: [] },
  label: { type: "string", default: "" },
  out: { type: "string" },
  help: { type: "boolean", short: "h", default: false },
} satisfies NonNullable<ParseArgsConfig["options"]>;

function parseFlags() {
  try {
    return parseArgs({ options: OPTIONS }).values;
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message} (npm run bench -- --help lists the flags)\n`);
    process.exit(2);
  }
}

export const flags = parseFlags();

function scalePlanFlag(value: string | undefined): ScaleStep[] | undefined {
  if (value === undefined) return undefined;
  try {
    return parseScalePlan(value);
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\n`);
    process.exit(2);
  }
}

const USAGE = `npm run bench -- [flags]     (bench/README.md says what each load measures)

sizes      --agents N --outcomes N --escalations N (2000, 200000, 50000)   --seed N (7)
           --quick (200, 10000, 2500; no soak; 30 s steady loads)
runs       --instances 1,2,3   --repeat N (single-instance turns, medians reported)
           --env KEY=VALUE (projector configuration, repeatable)   --label TEXT   --out DIR
           --compare-env KEY=VALUE (repeatable: each turn also runs one projector with it, order alternating)
anchors    --skip-ceiling   --ceiling-config BATCHxCONCURRENCY   --skip-baseline   --baseline-sample N
           --skip-warmup
peer       --skip-peer   --peer-config BATCHxTASKS (Neo4j's Kafka connector)   --skip-correctness
           --skip-dependency-order (the like-for-like comparison on the log in dependency order)
soak       --soak-minutes N (10; 0 skips)   --soak-rate R (500 records/s)
freshness  --skip-freshness   --freshness-seconds N   --freshness-warmup N   --freshness-rates 0.5,0.9
           --freshness-rps R1,R2   --freshness-capacity R   --skip-capacity-checks
           --freshness-scale 1@0,3@40,1@100 (instances from each second of the measured window on:
           each step's commit pause and freshness, and the records applied twice)
           --load-producer java|kafkajs (the steady loads' producer; java where the stack's Kafka jars are)
leftovers  --keep-topics   --keep-graph
`;

if (flags.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

export const quick = flags.quick === true;
export const num = (value: string | undefined, fallback: number) => (value === undefined ? fallback : Number(value));
export const AGENTS = num(flags.agents, quick ? 200 : 2000);
export const OUTCOMES = num(flags.outcomes, quick ? 10_000 : 200_000);
export const ESCALATIONS = num(flags.escalations, quick ? 2_500 : 50_000);
export const SOAK_MINUTES = num(flags["soak-minutes"], quick ? 0 : 10);
export const SOAK_RATE = num(flags["soak-rate"], 500);
export const FRESHNESS_SCALE = scalePlanFlag(flags["freshness-scale"]);
export const FRESHNESS_SECONDS = num(flags["freshness-seconds"], quick ? 30 : 180);
export const FRESHNESS_WARMUP = num(flags["freshness-warmup"], quick ? 10 : 15);
export const numbers = (value: string | undefined) =>
  (value ?? "")
    .split(",")
    .filter((v) => v.trim() !== "")
    .map(Number)
    .filter((n) => n > 0);
export const SEED = Number(flags.seed);
export const INSTANCES = String(flags.instances)
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
export const REPEAT = Math.max(1, Number(flags.repeat));
export const PARTITIONS = 6;
const envPairs = (pairs: string[]): Record<string, string> =>
  Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf("=");
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
export const EXTRA_ENV = envPairs(flags.env as string[]);
/** `--compare-env`: the configuration a second single-instance projector runs with in each turn. */
export const COMPARE_ENV = envPairs(flags["compare-env"] as string[]);

export const say = (line: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

export const eventsOf = (log: EventLog): ProjectorEvent[] => [...log.registry, ...log.outcomes, ...log.escalations];

/** Seconds (or, with a scale, other units) rounded for the results file; null stays null. */
export const nullable = (value: number | null, scale = 1) => (value === null ? null : round(value * scale, 3));

export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}
