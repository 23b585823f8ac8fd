import type { RegistryChange } from "../../src/model/event-time-findings.js";
import { type Finding, terminalFinding } from "../../src/model/findings.js";

/**
 * The reference judge of terminal-unreachable findings, written apart from the service's incremental
 * walk (model/event-time-reach.ts) and as plainly as possible: one tenant's whole registry history,
 * sorted by event time, and at every instant a change happens the declared graph rebuilt from scratch
 * just before it and at it, every agent's reach computed over the whole of each, every agent looked at.
 * The rules are the service's (model/event-time-reach.ts says them); only the way is the slow one.
 */
const isRetired = (c: RegistryChange | undefined) => c?.retired === true;
const targetsOf = (c: RegistryChange | undefined) => (c && !isRetired(c) ? c.declared : []);

/** Each agent's change in force at `t`: its highest version with occurred_at ≤ t (< t when not inclusive). */
function inForce(history: readonly RegistryChange[], t: number, inclusive: boolean): Map<string, RegistryChange> {
  const found = new Map<string, RegistryChange>();
  for (const c of history) {
    if (inclusive ? c.occurred_at > t : c.occurred_at >= t) continue;
    const best = found.get(c.agent_id);
    if (!best || c.registry_version > best.registry_version) found.set(c.agent_id, c);
  }
  return found;
}

/** Whether `agent` has a declared path to a control terminal. */
function reaches(graph: Map<string, RegistryChange>, agent: string, terminals: ReadonlySet<string>): boolean {
  const seen = new Set([agent]);
  const queue = [agent];
  for (let i = 0; i < queue.length; i++)
    for (const target of targetsOf(graph.get(queue[i] as string))) {
      if (terminals.has(target)) return true;
      if (!seen.has(target)) {
        seen.add(target);
        queue.push(target);
      }
    }
  return false;
}

/** Whether `from` has a declared path to `to` (itself counts). */
function pathTo(graph: Map<string, RegistryChange>, from: string, to: string): boolean {
  const seen = new Set([from]);
  const queue = [from];
  for (let i = 0; i < queue.length; i++) {
    if (queue[i] === to) return true;
    for (const target of targetsOf(graph.get(queue[i] as string)))
      if (!seen.has(target)) {
        seen.add(target);
        queue.push(target);
      }
  }
  return false;
}

/** Every terminal finding and resolution the tenant's history gives, judged from nothing in event-time order. */
export function oracleTerminalFindings(
  tenant: string,
  history: readonly RegistryChange[],
  terminals: ReadonlySet<string>,
): Finding[] {
  const found: (Finding & { at: number })[] = [];
  const instants = [...new Set(history.map((c) => c.occurred_at))].sort((a, b) => a - b);
  for (const t of instants) {
    const before = inForce(history, t, false);
    const after = inForce(history, t, true);
    const changed = [...after.keys()]
      .filter((agent) => before.get(agent)?.registry_version !== after.get(agent)?.registry_version)
      .sort();
    if (changed.length === 0) continue;
    for (const agent of [...after.keys()].sort()) {
      if (terminals.has(agent)) continue;
      const resolved = new Set(found.filter((f) => f.resolves !== null).map((f) => f.resolves));
      const open = found
        .filter((f) => f.kind === "terminal-unreachable" && f.source_agent_id === agent && !resolved.has(f.finding_id))
        .map((f) => f.finding_id)
        .sort();
      const then = reaches(before, agent, terminals);
      const now = reaches(after, agent, terminals);
      const transitions: (string | null)[] = [];
      if (then && !now && !isRetired(after.get(agent)) && open.length === 0) transitions.push(null);
      else if (now) transitions.push(...open);
      const causeAgent =
        changed.find((c) => c === agent) ??
        changed.find((c) => pathTo(before, agent, c)) ??
        changed.find((c) => pathTo(after, agent, c));
      const cause = causeAgent === undefined ? undefined : after.get(causeAgent);
      if (!cause) continue;
      for (const resolves of transitions)
        found.push({
          ...terminalFinding(tenant, agent, cause, resolves),
          registry_version: cause.registry_version,
          registry_occurred_at: cause.occurred_at,
          late: false,
          at: t,
        });
    }
  }
  return found.map(({ at: _, ...finding }) => finding);
}
