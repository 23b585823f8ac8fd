import type { Statement, StatementResult } from "../cypher/statement.js";
import { affectedAfter, affectedBefore, targetsReach } from "../cypher/terminal-reach.js";
import { type AppliedChange, terminalTransitions } from "../model/findings.js";
import { agentKey, type Hops, outsideTargets, reachingAgents } from "../model/reach.js";
import { findingStatements } from "./findings.js";

/**
 * The terminal-unreachable findings of a registry plan (model/findings.ts `terminalTransitions`).
 * `reachBeforeStatement` opens the plan: the agents its changes can affect, with their declared
 * targets. The plan's follow-up reads the same agents once §3.1/§3.2 ran, then whether the targets
 * outside that set reach a terminal (model/reach.ts: their answer is the same before and after), and
 * from the three the findings are decided and written, all in the same transaction.
 */
export function reachBeforeStatement(
  rows: readonly { readonly tenant_id: string; readonly agent_id: string }[],
  scoped: boolean,
): Statement {
  // One row per agent, in one order: the upstream walk is the same whichever record came first.
  const unique = new Map(rows.map((row) => [agentKey(row.tenant_id, row.agent_id), row]));
  const sorted = [...unique]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, row]) => ({ tenant_id: row.tenant_id, agent_id: row.agent_id }));
  return { name: "reachability", cypher: affectedBefore(scoped), params: { rows: sorted } };
}

interface AfterRow extends Hops {
  readonly deregistered: boolean;
  readonly open: readonly string[];
}

/** The follow-up reads after the writes, and the findings their results decide. */
export function reachAfterStatements(
  before: StatementResult,
  applied: readonly AppliedChange[],
  scoped: boolean,
  terminalIds: readonly string[],
): Statement[] {
  const terminals = new Set(terminalIds);
  const was = before.records.map((record) => ({
    tenant_id: String(record.tenant_id),
    agent_id: String(record.agent_id),
    causes: (record.causes as string[] | undefined) ?? [],
    next: (record.next as string[] | undefined) ?? [],
  }));
  // A terminal never gets the finding; it is read before only as a target others reach.
  const rows = was
    .filter((row) => !terminals.has(row.agent_id))
    .map(({ tenant_id, agent_id }) => ({ tenant_id, agent_id }));
  // No agent the changes could affect, or no change applied: nothing can have moved, so no read.
  if (rows.length === 0 || applied.length === 0) return [];

  const decide = (now: readonly AfterRow[], outside: ReadonlyMap<string, boolean>): Statement[] => {
    const then = reachingAgents(was, outside, terminals);
    const reaching = reachingAgents(now, outside, terminals);
    const transitions = terminalTransitions(
      was.map((row) => ({ ...row, reachable: then.has(agentKey(row.tenant_id, row.agent_id)) })),
      now.map((row) => ({ ...row, reachable: reaching.has(agentKey(row.tenant_id, row.agent_id)) })),
      applied,
    );
    return findingStatements(transitions, scoped);
  };
  return [
    {
      name: "reachability",
      cypher: affectedAfter(scoped),
      params: { rows },
      followedBy(result) {
        const now: AfterRow[] = result.records.map((record) => ({
          tenant_id: String(record.tenant_id),
          agent_id: String(record.agent_id),
          next: (record.next as string[] | undefined) ?? [],
          deregistered: record.deregistered === true,
          open: (record.open as string[] | undefined) ?? [],
        }));
        const targets = outsideTargets([was, now], terminals);
        if (targets.length === 0) return decide(now, new Map());
        return [
          {
            name: "reachability",
            cypher: targetsReach(scoped),
            params: { rows: targets, terminal_ids: terminalIds },
            followedBy(reach) {
              const outside = new Map(
                reach.records.map((r) => [agentKey(String(r.tenant_id), String(r.agent_id)), r.reachable === true]),
              );
              return decide(now, outside);
            },
          },
        ];
      },
    },
  ];
}
