import {
  AGENT_PRODUCED,
  AGENTS_WITHOUT_REACHABLE_TERMINAL,
  DECLARED_NEVER_EXERCISED,
  UNDECLARED_ESCALATIONS,
} from "./cypher/s4-queries.js";
import type { GraphWriter } from "./ports.js";

export interface GovernanceReport {
  readonly produced?: { readonly agentId: string; readonly rows: Record<string, unknown>[] };
  readonly undeclaredEscalations: Record<string, unknown>[];
  readonly declaredNeverExercised: Record<string, unknown>[];
  readonly agentsWithoutReachableTerminal: Record<string, unknown>[];
  readonly terminalIds: readonly string[];
}

/** The §4 queries, run on one database. */
export async function governanceReport(
  graph: GraphWriter,
  database: string,
  terminalIds: readonly string[],
  agent?: { id: string; limit: number },
): Promise<GovernanceReport> {
  const [undeclaredEscalations, declaredNeverExercised, agentsWithoutReachableTerminal, produced] = await Promise.all([
    graph.read(database, UNDECLARED_ESCALATIONS),
    graph.read(database, DECLARED_NEVER_EXERCISED),
    graph.read(database, AGENTS_WITHOUT_REACHABLE_TERMINAL, { terminal_ids: [...terminalIds] }),
    agent
      ? graph.read(database, AGENT_PRODUCED, { agent_id: agent.id, limit: agent.limit })
      : Promise.resolve(undefined),
  ]);
  return {
    ...(agent && produced ? { produced: { agentId: agent.id, rows: produced } } : {}),
    undeclaredEscalations,
    declaredNeverExercised,
    agentsWithoutReachableTerminal,
    terminalIds,
  };
}
