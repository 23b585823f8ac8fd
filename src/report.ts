import {
  agentProduced,
  agentsWithoutReachableTerminal,
  declaredNeverExercised,
  undeclaredEscalations,
} from "./cypher/s4-queries.js";
import type { GraphWriter } from "./ports.js";

export interface GovernanceReport {
  readonly produced?: { readonly agentId: string; readonly rows: Record<string, unknown>[] };
  readonly undeclaredEscalations: Record<string, unknown>[];
  readonly declaredNeverExercised: Record<string, unknown>[];
  /** null: no control terminals are configured (TERMINAL_AGENT_IDS), so reachability is not judged. */
  readonly agentsWithoutReachableTerminal: Record<string, unknown>[] | null;
  readonly terminalIds: readonly string[];
}

/**
 * The §4 queries, run on one database; on a database several tenants share (`tenant.scoped`), on that
 * tenant's part of it only.
 */
export async function governanceReport(
  graph: GraphWriter,
  database: string,
  terminalIds: readonly string[],
  agent?: { id: string; limit: number },
  tenant: { id: string; scoped: boolean } = { id: "", scoped: false },
): Promise<GovernanceReport> {
  const { scoped } = tenant;
  const scope = scoped ? { tenant_id: tenant.id } : {};
  const [undeclared, declared, unreachable, produced] = await Promise.all([
    graph.read(database, undeclaredEscalations(scoped), scope),
    graph.read(database, declaredNeverExercised(scoped), scope),
    // Against no terminals every agent would be listed: a guess, not an answer.
    terminalIds.length === 0
      ? Promise.resolve(null)
      : graph.read(database, agentsWithoutReachableTerminal(scoped), { ...scope, terminal_ids: [...terminalIds] }),
    agent
      ? graph.read(database, agentProduced(scoped), { ...scope, agent_id: agent.id, limit: agent.limit })
      : Promise.resolve(undefined),
  ]);
  return {
    ...(agent && produced ? { produced: { agentId: agent.id, rows: produced } } : {}),
    undeclaredEscalations: undeclared,
    declaredNeverExercised: declared,
    agentsWithoutReachableTerminal: unreachable,
    terminalIds,
  };
}
