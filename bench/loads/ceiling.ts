/** The ceiling sweep: the projector's own batched statements straight to Neo4j, batch size × concurrency, on a quarter-size log. */
import type { GraphWriter } from "../../src/ports.js";
import { generateEventLog } from "../../workload/generate.js";
import { AGENTS, ESCALATIONS, flags, OUTCOMES, quick, SEED, say, workloadSize } from "../args.js";
import { type DirectResult, loadDirect, wipeGraph } from "../lib/direct.js";
import type { BenchRun } from "./run.js";

export async function ceilingSweep(
  run: BenchRun,
  graph: GraphWriter,
): Promise<{ sweep: DirectResult[]; bestConfig: DirectResult }> {
  const { driver, database } = run;
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
  const bestConfig = [...sweep].sort((a, b) => b.recordsPerSecond - a.recordsPerSecond)[0] as DirectResult;
  return { sweep, bestConfig };
}
