/**
 * Prints, turn by turn, what results files measured: the projector's records/s and CPU, the
 * ceiling's records/s and stage times, and each steady load's freshness per stream. For comparing two
 * builds run in alternating turns (each with its own `--label`), whose files a reader would otherwise
 * open one by one.
 *
 *   npx tsx bench/turns.ts <results.json | directory> ...
 */
import fs from "node:fs";
import path from "node:path";
import type { FreshnessResult, RunResult } from "./results.js";

/** The parts of a results file (bench/report.ts) read here. */
interface ResultsFile {
  readonly startedAt: string;
  readonly label?: string;
  readonly runs: readonly RunResult[];
  readonly freshness?: readonly FreshnessResult[];
  readonly ceiling?: {
    readonly best: readonly {
      readonly recordsPerSecond: number;
      readonly cpuSeconds?: Record<string, number>;
      readonly stageSeconds?: Record<string, number>;
    }[];
  };
}

function files(args: readonly string[]): string[] {
  return args.flatMap((arg) =>
    fs.statSync(arg).isDirectory()
      ? fs
          .readdirSync(arg)
          .filter((name) => /^\d{8}-\d{6}\.json$/.test(name))
          .map((name) => path.join(arg, name))
      : [arg],
  );
}

const args = process.argv.slice(2);
if (args.length === 0) {
  process.stderr.write("usage: npx tsx bench/turns.ts <results.json | directory> ...\n");
  process.exit(2);
}

const turns: string[][] = [];
const loads: string[][] = [];
for (const file of files(args)) {
  const results = JSON.parse(fs.readFileSync(file, "utf8")) as ResultsFile;
  const label = results.label ?? "";
  const ceilings = results.ceiling?.best ?? [];
  const projectors = results.runs.filter((run) => run.instances === 1);
  for (let turn = 0; turn < Math.max(ceilings.length, projectors.length); turn++) {
    const ceiling = ceilings[turn];
    const run = projectors[turn];
    const stages = ceiling?.stageSeconds ?? {};
    turns.push([
      results.startedAt,
      label,
      String(turn + 1),
      run ? String(run.recordsPerSecond) : "",
      run ? String(run.cpuSeconds.projector ?? "") : "",
      run ? String(run.cpuSeconds.neo4j ?? "") : "",
      ceiling ? String(ceiling.recordsPerSecond) : "",
      ceiling ? String(ceiling.cpuSeconds?.neo4j ?? "") : "",
      ["registry", "outcomes", "escalations"].map((stage) => stages[stage] ?? "-").join(" / "),
    ]);
  }
  for (const load of results.freshness ?? []) {
    const stream = (name: "outcome-created" | "escalation-edge") => {
      const q = load.records[name];
      return `${q.p50} / ${q.p99} / ${q.max}`;
    };
    loads.push([
      results.startedAt,
      label,
      `${load.achievedRate} (${load.fractionOfCapacity ?? "-"}×${load.achievedOfCapacity ? `; ${load.achievedOfCapacity.before} / ${load.achievedOfCapacity.after} of the checks` : ""})`,
      stream("outcome-created"),
      stream("escalation-edge"),
      `${load.batchP50Ms} / ${load.batchP99Ms}`,
      String(load.cpuSeconds.neo4j ?? ""),
      String(load.cpuSeconds.projector ?? ""),
    ]);
  }
}

function table(header: readonly string[], rows: string[][]): void {
  if (rows.length === 0) return;
  rows.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
  process.stdout.write(`| ${header.join(" | ")} |\n| ${header.map(() => "---").join(" | ")} |\n`);
  for (const row of rows) process.stdout.write(`| ${row.join(" | ")} |\n`);
  process.stdout.write("\n");
}

table(
  [
    "started",
    "label",
    "turn",
    "projector rec/s",
    "projector CPU s",
    "Neo4j CPU s",
    "ceiling rec/s",
    "ceiling Neo4j CPU s",
    "ceiling stages s (registry / outcomes / escalations)",
  ],
  turns,
);
table(
  [
    "started",
    "label",
    "rate/s",
    "outcomes p50 / p99 / max s",
    "escalations p50 / p99 / max s",
    "batch p50 / p99 ms",
    "Neo4j CPU s",
    "projector CPU s",
  ],
  loads,
);
