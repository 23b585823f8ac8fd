/**
 * Reachability of a control terminal for the agents a registry change can affect, from one hop each
 * (cypher/terminal-reach.ts): the agents' declared targets, and whether each target outside the set
 * reaches a terminal. Such a target had no declared path to a changed agent, so no path from it runs
 * over an edge the change touched: its answer is the same before and after the change, and is read
 * once. Inside the set, an agent reaches a terminal when one of its targets is a terminal, or is
 * outside and reaches one, or is inside and reaches one: the least fixpoint, found by walking the
 * set's edges backwards from the agents that reach one directly. Each agent and edge is visited once,
 * instead of a walk down from every agent (what §4's query does, once per agent).
 */
export interface Hops {
  readonly tenant_id: string;
  readonly agent_id: string;
  /** Its targets over declared CAN_ESCALATE_TO edges. */
  readonly next: readonly string[];
}

export const agentKey = (tenant: string, agent: string): string => JSON.stringify([tenant, agent]);

/** The targets the agents name that are neither among them nor terminals: those whose answer is read. */
export function outsideTargets(
  sets: readonly (readonly Hops[])[],
  terminals: ReadonlySet<string>,
): { tenant_id: string; agent_id: string }[] {
  const inside = new Set(sets.flat().map((row) => agentKey(row.tenant_id, row.agent_id)));
  const found = new Map<string, { tenant_id: string; agent_id: string }>();
  for (const row of sets.flat())
    for (const target of row.next) {
      const key = agentKey(row.tenant_id, target);
      if (!terminals.has(target) && !inside.has(key)) found.set(key, { tenant_id: row.tenant_id, agent_id: target });
    }
  return [...found.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, target]) => target);
}

/**
 * The keys (agentKey) of the agents among `rows` that reach a terminal. `outside`: the answer for
 * targets not among the rows (by agentKey); a target missing from it and from the rows reaches none.
 */
export function reachingAgents(
  rows: readonly Hops[],
  outside: ReadonlyMap<string, boolean>,
  terminals: ReadonlySet<string>,
): Set<string> {
  const inside = new Set(rows.map((row) => agentKey(row.tenant_id, row.agent_id)));
  const upstreamOf = new Map<string, string[]>();
  const reaching = new Set<string>();
  const queue: string[] = [];
  for (const row of rows) {
    const key = agentKey(row.tenant_id, row.agent_id);
    for (const target of row.next) {
      const targetKey = agentKey(row.tenant_id, target);
      if (inside.has(targetKey) && !terminals.has(target)) {
        const sources = upstreamOf.get(targetKey) ?? [];
        sources.push(key);
        upstreamOf.set(targetKey, sources);
      } else if ((terminals.has(target) || outside.get(targetKey) === true) && !reaching.has(key)) {
        reaching.add(key);
        queue.push(key);
      }
    }
  }
  for (let at = 0; at < queue.length; at++)
    for (const source of upstreamOf.get(queue[at] as string) ?? [])
      if (!reaching.has(source)) {
        reaching.add(source);
        queue.push(source);
      }
  return reaching;
}
