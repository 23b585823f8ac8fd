import type { Statement, StatementResult } from "../cypher/statement.js";
import { reachAfter, reachBefore } from "../cypher/terminal-reach.js";
import { type AppliedChange, type ReachAfter, type ReachBefore, terminalTransitions } from "../model/findings.js";
import { findingStatements } from "./findings.js";

/**
 * The terminal-unreachable findings of a registry plan (model/findings.ts `terminalTransitions`):
 * `before` opens the plan, reading reachability for the agents its changes can affect; the plan's
 * follow-up reads it again for the same agents once §3.1/§3.2 ran (`after`), and that read's result
 * decides the findings written in the same transaction.
 */
export function reachBeforeStatement(
  rows: readonly { readonly tenant_id: string; readonly agent_id: string }[],
  scoped: boolean,
  terminalIds: readonly string[],
): Statement {
  // One row per agent, in one order: the upstream walk is the same whichever record came first.
  const unique = new Map(rows.map((row) => [JSON.stringify([row.tenant_id, row.agent_id]), row]));
  const sorted = [...unique].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => ({ ...row }));
  return { name: "reachability", cypher: reachBefore(scoped), params: { rows: sorted, terminal_ids: terminalIds } };
}

/** The follow-up read of reachability after the writes, and the findings its result decides. */
export function reachAfterStatements(
  before: StatementResult,
  applied: readonly AppliedChange[],
  scoped: boolean,
  terminalIds: readonly string[],
): Statement[] {
  const was: ReachBefore[] = before.records.map((record) => ({
    tenant_id: String(record.tenant_id),
    agent_id: String(record.agent_id),
    causes: (record.causes as string[] | undefined) ?? [],
    reachable: record.reachable === true,
  }));
  // No agent the changes could affect, or no change applied: nothing can have moved, so no read.
  if (was.length === 0 || applied.length === 0) return [];
  const rows = was.map(({ tenant_id, agent_id }) => ({ tenant_id, agent_id }));
  return [
    {
      name: "reachability",
      cypher: reachAfter(scoped),
      params: { rows, terminal_ids: terminalIds },
      followedBy(result) {
        const now: ReachAfter[] = result.records.map((record) => ({
          tenant_id: String(record.tenant_id),
          agent_id: String(record.agent_id),
          reachable: record.reachable === true,
          deregistered: record.deregistered === true,
          open: (record.open as string[] | undefined) ?? [],
        }));
        return findingStatements(terminalTransitions(was, now, applied), scoped);
      },
    },
  ];
}
