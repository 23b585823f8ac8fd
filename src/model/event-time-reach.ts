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
 *
 * The walk is incremental: the changes are applied in occurred_at order to one declared graph, and at an
 * instant only the agents upstream of a changed one (before or after it) are looked at again, since no
 * other agent's paths pass through a change. Recomputing the whole graph at every instant made a page
 * of 2,000 changes of a 10,000-agent registry (a new deployment's backlog) cost about a minute on the
 * event loop; test/support/terminal-oracle.ts keeps that plain walk as the reference the property test
 * (test/unit/event-time-reach) compares this one with.
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

/**
 * The recorded findings the walk from `since` on depends on, as the judge reads them
 * (cypher/event-time-judge.ts RECORDED_TERMINAL_FINDINGS): each terminal-unreachable finding not
 * resolved before `since` (every finding the walk may resolve, or whose id it may produce, is one), and
 * their resolutions. One recorded before event-time judging (no time) is always read, as the walk takes
 * it to have happened before everything. The walk finds the same on it as on every finding recorded
 * (test/unit/event-time-reach), so a page reads the open findings and the recent ones, not the history.
 */
export function recordedForWalk(
  recorded: readonly RecordedTerminalFinding[],
  since: number,
): RecordedTerminalFinding[] {
  const resolvedAt = new Map<string, number>();
  for (const f of recorded)
    if (f.resolves !== null) {
      const at = f.at ?? Number.NEGATIVE_INFINITY;
      resolvedAt.set(f.resolves, Math.min(at, resolvedAt.get(f.resolves) ?? Number.POSITIVE_INFINITY));
    }
  const kept = new Set(
    recorded
      .filter(
        (f) =>
          f.kind === "terminal-unreachable" &&
          (f.at === null || (resolvedAt.get(f.finding_id) ?? Number.POSITIVE_INFINITY) >= since),
      )
      .map((f) => f.finding_id),
  );
  return recorded.filter((f) => kept.has(f.resolves ?? f.finding_id));
}

/**
 * The walk's input for instants from some `since` on, as the judge reads it (cypher/registry-history.ts
 * REGISTRY_CHANGES_SINCE): the whole history of the agents with a change from `since` on, and for every
 * other agent its head, its highest version — in force at every instant from `since` on. The walk from
 * `since` on finds the same on it as on the whole history (test/unit/event-time-reach).
 */
export function historyForWalk<C>(changedSince: readonly C[], heads: readonly C[], agentOf: (c: C) => string): C[] {
  const changed = new Set(changedSince.map(agentOf));
  return [...changedSince, ...heads.filter((c) => !changed.has(agentOf(c)))];
}

const isRetired = (c: RegistryChange | undefined) => c?.retired === true;
const targetsOf = (c: RegistryChange | undefined) => (c && !isRetired(c) ? c.declared : []);

/** The declared graph at one instant: each agent's change in force, the edges into each agent, who reaches a terminal. */
class DeclaredGraph {
  readonly inForce = new Map<string, RegistryChange>();
  private readonly into = new Map<string, Set<string>>();
  readonly reaching = new Set<string>();

  constructor(private readonly terminals: ReadonlySet<string>) {}

  /** Takes `changes` (all older than what comes next) without judging anything, then computes who reaches. */
  load(changes: readonly RegistryChange[]): void {
    this.apply(this.replaced(changes));
    this.settle(new Set(this.inForce.keys()));
  }

  /** The agents whose change in force is replaced by one of `changes`, each with its new change. */
  replaced(changes: readonly RegistryChange[]): Map<string, RegistryChange> {
    const next = new Map<string, RegistryChange>();
    for (const c of changes) {
      const current = next.get(c.agent_id) ?? this.inForce.get(c.agent_id);
      if (!current || c.registry_version > current.registry_version) next.set(c.agent_id, c);
    }
    return next;
  }

  apply(next: ReadonlyMap<string, RegistryChange>): void {
    for (const [agent, change] of next) {
      this.unlink(agent, this.inForce.get(agent));
      this.inForce.set(agent, change);
      this.link(agent, change);
    }
  }

  /** Whether `agent` reaches a terminal over the edges in force (a walk down from it). */
  reachesFrom(agent: string): boolean {
    const seen = new Set([agent]);
    const queue = [agent];
    for (let i = 0; i < queue.length; i++)
      for (const target of targetsOf(this.inForce.get(queue[i] as string))) {
        if (this.terminals.has(target)) return true;
        if (!seen.has(target)) {
          seen.add(target);
          queue.push(target);
        }
      }
    return false;
  }

  /** The agents with a declared path to `agent` (itself included). */
  upstreamOf(agent: string): Set<string> {
    const found = new Set([agent]);
    const queue = [agent];
    for (let i = 0; i < queue.length; i++)
      for (const source of this.into.get(queue[i] as string) ?? [])
        if (!found.has(source)) {
          found.add(source);
          queue.push(source);
        }
    return found;
  }

  /**
   * Recomputes who reaches a terminal among `affected`, which must hold every agent upstream of each
   * changed one: an agent outside it reaches exactly as before, its paths passing no change.
   */
  settle(affected: ReadonlySet<string>): void {
    const reachesThrough = (target: string) =>
      this.terminals.has(target) || (!affected.has(target) && this.reaching.has(target));
    for (const agent of affected) this.reaching.delete(agent);
    const queue: string[] = [];
    for (const agent of affected)
      if (targetsOf(this.inForce.get(agent)).some(reachesThrough)) {
        this.reaching.add(agent);
        queue.push(agent);
      }
    for (let i = 0; i < queue.length; i++)
      for (const source of this.into.get(queue[i] as string) ?? [])
        if (affected.has(source) && !this.reaching.has(source)) {
          this.reaching.add(source);
          queue.push(source);
        }
  }

  private link(agent: string, change: RegistryChange): void {
    for (const target of targetsOf(change)) {
      const sources = this.into.get(target) ?? new Set<string>();
      sources.add(agent);
      this.into.set(target, sources);
    }
  }

  private unlink(agent: string, change: RegistryChange | undefined): void {
    for (const target of targetsOf(change)) this.into.get(target)?.delete(agent);
  }
}

/** The terminal findings known so far, indexed for "which are open for this agent just before t". */
class KnownFindings {
  private readonly byAgent = new Map<string, RecordedTerminalFinding[]>();
  private readonly resolvedAt = new Map<string, number>();
  private readonly ids = new Set<string>();

  /**
   * The agents that may have an open finding at an instant from `from` on: each with a
   * `terminal-unreachable` not resolved before `from`, and each that gets one on the way (openBefore
   * says which are open at a given instant).
   */
  readonly mayBeOpen = new Set<string>();

  constructor(recorded: readonly RecordedTerminalFinding[], from: number) {
    for (const f of recorded) this.add(f);
    for (const f of recorded)
      if (
        f.kind === "terminal-unreachable" &&
        !((this.resolvedAt.get(f.finding_id) ?? Number.POSITIVE_INFINITY) < from)
      )
        this.mayBeOpen.add(f.source_agent_id);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  add(f: RecordedTerminalFinding): void {
    this.ids.add(f.finding_id);
    const own = this.byAgent.get(f.source_agent_id);
    if (own) own.push(f);
    else this.byAgent.set(f.source_agent_id, [f]);
    const at = f.at ?? Number.NEGATIVE_INFINITY;
    if (f.resolves !== null && !(at >= (this.resolvedAt.get(f.resolves) ?? Number.POSITIVE_INFINITY)))
      this.resolvedAt.set(f.resolves, at);
  }

  openBefore(agent: string, t: number): string[] {
    return (this.byAgent.get(agent) ?? [])
      .filter(
        (f) =>
          f.kind === "terminal-unreachable" &&
          (f.at ?? Number.NEGATIVE_INFINITY) < t &&
          !((this.resolvedAt.get(f.finding_id) ?? Number.POSITIVE_INFINITY) < t),
      )
      .map((f) => f.finding_id)
      .sort();
  }
}

const byAgentId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Applies one instant's replaced changes to `graph`: which agents are upstream of each changed one
 * (before and after), the agents whose reach may have changed (`affected`) and which of them reached
 * a terminal before (`reachedThen`). One changed agent whose own reach stays as it was changes
 * nobody's: a path through it reaches a terminal before exactly when after. Then its upstream is
 * sought only when an open finding there could be resolved (`resolvable`): an agent upstream of a
 * change that reaches a terminal has its open findings resolved, whichever way it reaches.
 */
function step(
  graph: DeclaredGraph,
  replaced: ReadonlyMap<string, RegistryChange>,
  changed: readonly string[],
  resolvable: () => boolean,
) {
  const [only] = changed;
  if (changed.length === 1 && only !== undefined) {
    const reachedBefore = graph.reaching.has(only);
    graph.apply(replaced);
    // With one agent changed, who has a path to it is the same before and after: such a path passes
    // only other agents' edges.
    if (graph.reachesFrom(only) === reachedBefore) {
      const upstream = resolvable() ? graph.upstreamOf(only) : new Set<string>();
      const same = new Map([[only, upstream]]);
      return { upstreamBefore: same, upstreamAfter: same, affected: upstream, reachedThen: new Set<string>() };
    }
    const upstream = new Map([[only, graph.upstreamOf(only)]]);
    return settled(graph, upstream, upstream);
  }
  const upstreamBefore = new Map(changed.map((c) => [c, graph.upstreamOf(c)]));
  graph.apply(replaced);
  return settled(graph, upstreamBefore, new Map(changed.map((c) => [c, graph.upstreamOf(c)])));
}

function settled(
  graph: DeclaredGraph,
  upstreamBefore: Map<string, Set<string>>,
  upstreamAfter: Map<string, Set<string>>,
) {
  const affected = new Set<string>();
  for (const set of [...upstreamBefore.values(), ...upstreamAfter.values()]) for (const a of set) affected.add(a);
  const reachedThen = new Set([...affected].filter((agent) => graph.reaching.has(agent)));
  graph.settle(affected);
  return { upstreamBefore, upstreamAfter, affected, reachedThen };
}

export function terminalTransitionsAt(tenant: string, input: TerminalJudgeInput): Finding[] {
  const instants = [...new Set(input.instants)].sort((a, b) => a - b);
  const first = instants[0];
  if (first === undefined) return [];
  const judged = new Set(instants);
  const last = instants[instants.length - 1] as number;
  const history = [...input.history].sort((a, b) => a.occurred_at - b.occurred_at);
  const graph = new DeclaredGraph(input.terminals);
  let next = history.findIndex((c) => c.occurred_at >= first);
  if (next < 0) next = history.length;
  graph.load(history.slice(0, next));
  const known = new KnownFindings(input.recorded, first);
  const found: Finding[] = [];
  while (next < history.length && (history[next] as RegistryChange).occurred_at <= last) {
    const t = (history[next] as RegistryChange).occurred_at;
    let end = next;
    while (end < history.length && (history[end] as RegistryChange).occurred_at === t) end++;
    const replaced = graph.replaced(history.slice(next, end));
    next = end;
    if (replaced.size === 0) continue;
    const changed = [...replaced.keys()].sort(byAgentId);
    const { upstreamBefore, upstreamAfter, affected, reachedThen } = step(
      graph,
      replaced,
      changed,
      () => judged.has(t) && known.mayBeOpen.size > 0,
    );
    if (!judged.has(t)) continue;
    const causeOf = (agent: string): RegistryChange | undefined => {
      const cause =
        changed.find((c) => c === agent) ??
        changed.find((c) => upstreamBefore.get(c)?.has(agent)) ??
        changed.find((c) => upstreamAfter.get(c)?.has(agent));
      return cause === undefined ? undefined : graph.inForce.get(cause);
    };
    // Only an agent that lost its path, or reaches and has an open finding, can transition.
    const candidates = [...reachedThen]
      .filter((agent) => !graph.reaching.has(agent))
      .concat(
        [...(known.mayBeOpen.size < affected.size ? known.mayBeOpen : affected)].filter(
          (agent) => affected.has(agent) && known.mayBeOpen.has(agent) && graph.reaching.has(agent),
        ),
      )
      .sort(byAgentId);
    for (const agent of candidates) {
      const change = graph.inForce.get(agent);
      if (!change || input.terminals.has(agent)) continue;
      const reaches = graph.reaching.has(agent);
      const lost = reachedThen.has(agent) && !reaches;
      const open = known.openBefore(agent, t);
      const transitions: (string | null)[] = [];
      if (lost && !isRetired(change) && open.length === 0) transitions.push(null);
      else if (reaches) transitions.push(...open);
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
        if (known.has(f.finding_id)) continue;
        found.push(f);
        if (resolves === null) known.mayBeOpen.add(agent);
        known.add({
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
