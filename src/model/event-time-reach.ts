import type { RegistryChange } from "./event-time-findings.js";
import { type Finding, terminalFinding } from "./findings.js";

/**
 * terminal-unreachable findings in event-time order (issue 53, item 3): the registry's history of one
 * tenant is walked instant by instant (each distinct occurred_at a change of it is judged at), and at
 * each instant the declared graph just before it is compared with the graph at it. Which partition
 * delivered a change first, or which batch it fell in, changes nothing: the history is the same set in
 * any order, and so is the walk.
 *
 * At an instant t:
 * - an agent's change in force is its highest version with occurred_at ≤ t (before t: < t); an agent
 *   with none is not registered; a retired change (deregistered, tombstone) declares nothing;
 * - an agent reaches a control terminal when a declared target is one, or reaches one;
 * - the agents that changed at t are those whose change in force differs before and after: a
 *   redelivered snapshot, or a lower version arriving late, changed nothing and causes nothing;
 * - a registered, non-terminal, non-retired agent that reached a terminal before t and does not at t,
 *   with no open finding, gets `terminal-unreachable`; one with open findings that reaches a terminal at
 *   t gets a resolution of each. The cause is its own change if it changed at t, otherwise the lowest
 *   changed agent id it had a declared path to before t (or has at t); no cause, no transition.
 * Ids are model/findings.ts `terminalFinding`'s: the agent and the causing change (agent, version).
 */
export interface RecordedTerminalFinding {
  readonly finding_id: string;
  readonly tenant_id: string;
  readonly kind: "terminal-unreachable" | "terminal-unreachable-resolved";
  readonly source_agent_id: string;
  readonly resolves: string | null;
  /** The causing change's occurred_at (null on a finding recorded before event-time judging). */
  readonly at: number | null;
}

export interface TerminalJudgeInput {
  /** Every change of the tenant's agents. */
  readonly history: readonly RegistryChange[];
  /** The instants to judge (the occurred_at of the changes newly judgeable). */
  readonly instants: readonly number[];
  readonly terminals: ReadonlySet<string>;
  readonly recorded: readonly RecordedTerminalFinding[];
}

type InForce = Map<string, RegistryChange>;

function inForce(byAgent: ReadonlyMap<string, readonly RegistryChange[]>, t: number, inclusive: boolean): InForce {
  const found: InForce = new Map();
  for (const [agent, changes] of byAgent) {
    let best: RegistryChange | undefined;
    for (const c of changes)
      if ((inclusive ? c.occurred_at <= t : c.occurred_at < t) && (!best || c.registry_version > best.registry_version))
        best = c;
    if (best) found.set(agent, best);
  }
  return found;
}

const isRetired = (c: RegistryChange | undefined) => c?.retired === true;
const targetsOf = (c: RegistryChange | undefined) => (c && !isRetired(c) ? c.declared : []);

/** The agents that reach a terminal over the declared edges in force. */
export function reachingTerminal(graph: InForce, terminals: ReadonlySet<string>): Set<string> {
  const upstream = new Map<string, string[]>();
  const reaching = new Set<string>();
  const queue: string[] = [];
  for (const [agent, change] of graph)
    for (const target of targetsOf(change)) {
      if (terminals.has(target)) {
        if (!reaching.has(agent)) {
          reaching.add(agent);
          queue.push(agent);
        }
      } else upstream.set(target, [...(upstream.get(target) ?? []), agent]);
    }
  for (let i = 0; i < queue.length; i++)
    for (const source of upstream.get(queue[i] as string) ?? [])
      if (!reaching.has(source)) {
        reaching.add(source);
        queue.push(source);
      }
  return reaching;
}

/** The agents with a declared path to `agent` (itself included). */
function upstreamOf(graph: InForce, agent: string): Set<string> {
  const into = new Map<string, string[]>();
  for (const [source, change] of graph)
    for (const target of targetsOf(change)) into.set(target, [...(into.get(target) ?? []), source]);
  const found = new Set([agent]);
  const queue = [agent];
  for (let i = 0; i < queue.length; i++)
    for (const source of into.get(queue[i] as string) ?? [])
      if (!found.has(source)) {
        found.add(source);
        queue.push(source);
      }
  return found;
}

export function terminalTransitionsAt(tenant: string, input: TerminalJudgeInput): Finding[] {
  const byAgent = new Map<string, RegistryChange[]>();
  for (const c of input.history) byAgent.set(c.agent_id, [...(byAgent.get(c.agent_id) ?? []), c]);
  // Every finding known, recorded or found on the way, with its instant: what is open at each instant.
  const known: RecordedTerminalFinding[] = [...input.recorded];
  const knownIds = new Set(known.map((f) => f.finding_id));
  const found: Finding[] = [];
  const openBefore = (agent: string, t: number): string[] => {
    const resolved = new Set(
      known.filter((f) => f.resolves !== null && (f.at ?? Number.NEGATIVE_INFINITY) < t).map((f) => f.resolves),
    );
    return known
      .filter(
        (f) =>
          f.kind === "terminal-unreachable" &&
          f.source_agent_id === agent &&
          (f.at ?? Number.NEGATIVE_INFINITY) < t &&
          !resolved.has(f.finding_id),
      )
      .map((f) => f.finding_id)
      .sort();
  };
  for (const t of [...new Set(input.instants)].sort((a, b) => a - b)) {
    const before = inForce(byAgent, t, false);
    const after = inForce(byAgent, t, true);
    const changed = [...after.keys()]
      .filter((agent) => before.get(agent)?.registry_version !== after.get(agent)?.registry_version)
      .sort();
    if (changed.length === 0) continue;
    const then = reachingTerminal(before, input.terminals);
    const now = reachingTerminal(after, input.terminals);
    const upstreamBefore = new Map(changed.map((c) => [c, upstreamOf(before, c)]));
    const upstreamAfter = new Map(changed.map((c) => [c, upstreamOf(after, c)]));
    const causeOf = (agent: string): RegistryChange | undefined => {
      const cause =
        changed.find((c) => c === agent) ??
        changed.find((c) => upstreamBefore.get(c)?.has(agent)) ??
        changed.find((c) => upstreamAfter.get(c)?.has(agent));
      return cause === undefined ? undefined : after.get(cause);
    };
    for (const [agent, change] of [...after].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (input.terminals.has(agent)) continue;
      const lost = then.has(agent) && !now.has(agent);
      const open = openBefore(agent, t);
      const transitions: (string | null)[] = [];
      if (lost && !isRetired(change) && open.length === 0) transitions.push(null);
      else if (now.has(agent)) transitions.push(...open);
      if (transitions.length === 0) continue;
      const cause = causeOf(agent);
      if (!cause) continue;
      for (const resolves of transitions) {
        const f: Finding = {
          ...terminalFinding(tenant, agent, cause, resolves),
          registry_version: cause.registry_version,
          registry_occurred_at: cause.occurred_at,
          late: cause.late === true,
        };
        if (knownIds.has(f.finding_id)) continue;
        knownIds.add(f.finding_id);
        found.push(f);
        known.push({
          finding_id: f.finding_id,
          tenant_id: tenant,
          kind: f.kind as RecordedTerminalFinding["kind"],
          source_agent_id: agent,
          resolves,
          at: t,
        });
      }
    }
  }
  return found;
}
