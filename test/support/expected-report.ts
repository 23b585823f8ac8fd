import type { CanonicalGraph } from "../../src/model/graph.js";

/** The §4 queries evaluated on a canonical graph (the reference model's), for comparing with Neo4j's answers. */
export function expectedReport(graph: CanonicalGraph, terminalIds: readonly string[], agentId: string, limit: number) {
  const agents = graph.nodes
    .filter((line) => line.startsWith("Agent:"))
    .map((line) => line.slice(6, line.indexOf(" ")));
  const outcomes = new Map(
    graph.nodes
      .filter((line) => line.startsWith("Outcome:"))
      .map((line) => {
        const props = JSON.parse(line.slice(line.indexOf(" ") + 1)) as Record<string, string | number>;
        return [String(props.outcome_id), props];
      }),
  );
  const edges = graph.relationships.map((line) => {
    const match = /^(\S+) -\[(\w+)\]-> (\S+) (.*)$/.exec(line) as RegExpExecArray;
    return {
      from: match[1] as string,
      type: match[2] as string,
      to: match[3] as string,
      props: JSON.parse(match[4] as string) as Record<string, unknown>,
    };
  });
  const escalations = edges
    .filter((e) => e.type === "CAN_ESCALATE_TO")
    .map(
      (e) =>
        ({ from: e.from.slice(6), to: e.to.slice(6), ...e.props }) as {
          from: string;
          to: string;
          declared: boolean;
          observed_count: number;
          last_observed_at?: number;
        },
    )
    .sort((a, b) => (a.from === b.from ? (a.to < b.to ? -1 : 1) : a.from < b.from ? -1 : 1));
  const declared = new Map<string, string[]>();
  for (const e of escalations) if (e.declared) declared.set(e.from, [...(declared.get(e.from) ?? []), e.to]);
  const reaches = (start: string) => {
    const seen = new Set<string>();
    const queue = [...(declared.get(start) ?? [])];
    while (queue.length > 0) {
      const next = queue.shift() as string;
      if (terminalIds.includes(next)) return true;
      if (seen.has(next)) continue;
      seen.add(next);
      queue.push(...(declared.get(next) ?? []));
    }
    return false;
  };
  const produced = edges
    .filter((e) => e.type === "PRODUCED" && e.from === `Agent:${agentId}`)
    .map((e) => outcomes.get(e.to.slice(8)) as Record<string, string | number>)
    .sort((a, b) => Number(b.created_at) - Number(a.created_at))
    .slice(0, limit)
    .map((o) => ({ outcome_id: o.outcome_id, status: o.status, correlation_id: o.correlation_id ?? null }));
  return {
    produced: { agentId, rows: produced },
    undeclaredEscalations: escalations
      .filter((e) => !e.declared && e.observed_count > 0)
      .map((e) => ({
        from_agent: e.from,
        to_agent: e.to,
        observed_count: e.observed_count,
        last_observed_at: e.last_observed_at ?? null,
      })),
    declaredNeverExercised: escalations
      .filter((e) => e.declared && e.observed_count === 0)
      .map((e) => ({ from_agent: e.from, to_agent: e.to })),
    agentsWithoutReachableTerminal: agents
      .filter((a) => !terminalIds.includes(a) && !reaches(a))
      .sort()
      .map((a) => ({ agent_without_reachable_terminal: a })),
    terminalIds,
  };
}
