import { JUDGE_PROGRESS } from "../cypher/event-time-judge.js";
import { COMPACTED_AGENTS, compactRegistryHistory } from "../cypher/registry-history.js";
import type { Statement } from "../cypher/statement.js";
import type { GraphWriter, Logger } from "../ports.js";

/** The registry history's compaction below `cutoff` (cypher/registry-history.ts). */
export function compactionStatement(scoped: boolean, cutoff: number): Statement {
  return { name: "registry-history", cypher: compactRegistryHistory(scoped), params: { rows: [{ cutoff }] } };
}

/** Statements a compaction runs at most, so that one run of a large history does not hold a stop. */
const MAX_STATEMENTS = 25;

/**
 * Compacts one database's registry history older than `retentionMs` behind what the event-time judge
 * has decided (`judged_through`, never ahead of `now`): the judge's instance runs it hourly
 * (pipeline/event-time-judge.ts). Nothing before the judge has decided anything.
 */
export async function compactHistory(input: {
  readonly graph: GraphWriter;
  readonly logger: Logger;
  readonly target: { readonly database: string; readonly scoped: boolean };
  readonly retentionMs: number;
  readonly now: number;
}): Promise<number> {
  const { graph, logger, retentionMs, now } = input;
  const { database, scoped } = input.target;
  const [progress] = await graph.read(database, JUDGE_PROGRESS);
  const through = progress?.judged_through;
  if (through === null || through === undefined) return 0;
  const cutoff = Math.min(Number(through), now) - retentionMs;
  let removed = 0;
  for (let n = 0; n < MAX_STATEMENTS; n++) {
    const [result] = await graph.apply(database, [compactionStatement(scoped, cutoff)]);
    const [row] = result?.records ?? [];
    removed += Number(row?.removed ?? 0);
    if (Number(row?.agents ?? 0) < COMPACTED_AGENTS) break;
  }
  if (removed > 0)
    logger.info({ database, removed, cutoff: new Date(cutoff).toISOString() }, "registry history compacted");
  return removed;
}
