import { type Observation, type RegistryChange, registryChange } from "../../src/model/event-time-findings.js";
import type { EscalationEdge, OutcomeCreated, ProjectorEvent, RegistryEvent } from "../../src/model/events.js";
import { findingId } from "../../src/model/findings.js";

/**
 * The reference judge of undeclared escalations, written apart from the service's (model/event-time-
 * findings.ts) and as plainly as possible: the whole log sorted by event time, walked once. At each
 * instant every registry change of that instant takes effect first (a change is in force at its own
 * occurred_at), then the escalations of that instant are judged against what is declared.
 */
export interface OracleFinding {
  readonly finding_id: string;
  readonly kind: "undeclared-escalation" | "undeclared-escalation-resolved";
  readonly tenant_id: string;
  readonly source_agent_id: string;
  readonly target_agent_id: string;
  readonly resolves: string | null;
  /** Resolution: the version of the change that declared the edge again. */
  readonly registry_version: number | null;
  /** Finding: the episode's time span, [from, until), to check the evidence escalation lies in it. */
  readonly from: number;
  readonly until: number;
}

type Entry = { at: number; change?: RegistryChange; observation?: Observation };

export function oracleFindings(
  changes: readonly RegistryChange[],
  observations: readonly Observation[],
): OracleFinding[] {
  // Deduplicate: a redelivered record is the same fact.
  const uniqueChanges = [
    ...new Map(changes.map((c) => [`${c.tenant_id}|${c.agent_id}|${c.registry_version}`, c])).values(),
  ];
  const entries: Entry[] = [
    ...uniqueChanges.map((change): Entry => ({ at: change.occurred_at, change })),
    ...observations.map((observation): Entry => ({ at: observation.observed_at, observation })),
  ].sort((a, b) => a.at - b.at || (a.change ? 0 : 1) - (b.change ? 0 : 1));

  const inForce = new Map<string, RegistryChange>();
  const agents = new Set<string>();
  for (const c of uniqueChanges) agents.add(c.agent_id);
  for (const o of observations) agents.add(o.source_agent_id).add(o.target_agent_id);

  // Per edge: declared now, ever declared, and the open episode (its version and whether it has a finding).
  type Edge = { declared: boolean; episode: number | null; from: number; finding: string | null };
  const edges = new Map<string, Edge>();
  const edge = (tenant: string, a: string, b: string): Edge => {
    const key = `${tenant}|${a}|${b}`;
    let e = edges.get(key);
    if (!e) {
      e = { declared: false, episode: null, from: Number.NEGATIVE_INFINITY, finding: null };
      edges.set(key, e);
    }
    return e;
  };
  const results: OracleFinding[] = [];
  const findingAt = new Map<string, OracleFinding>();

  for (let i = 0; i < entries.length; ) {
    const at = entries[i]?.at as number;
    const instant: Entry[] = [];
    while (i < entries.length && entries[i]?.at === at) instant.push(entries[i++] as Entry);
    const touched = new Set<string>();
    for (const { change } of instant) {
      if (!change) continue;
      const key = `${change.tenant_id}|${change.agent_id}`;
      const current = inForce.get(key);
      if (!current || change.registry_version > current.registry_version) inForce.set(key, change);
      touched.add(key);
    }
    for (const key of touched) {
      const [tenant, a] = key.split("|") as [string, string];
      const now = inForce.get(key) as RegistryChange;
      for (const b of agents) {
        const e = edge(tenant, a, b);
        const declares = now.declared.includes(b);
        if (declares && !e.declared) {
          if (e.finding !== null) {
            const open = findingAt.get(e.finding) as OracleFinding;
            findingAt.set(e.finding, { ...open, until: at });
            const transition = e.episode === null ? [] : [e.episode];
            results.push({
              finding_id: findingId(tenant, "undeclared-escalation-resolved", a, b, ...transition),
              kind: "undeclared-escalation-resolved",
              tenant_id: tenant,
              source_agent_id: a,
              target_agent_id: b,
              resolves: e.finding,
              registry_version: now.registry_version,
              from: at,
              until: at,
            });
          }
          e.declared = true;
          e.finding = null;
        } else if (!declares && e.declared) {
          e.declared = false;
          e.episode = now.registry_version;
          e.from = at;
          e.finding = null;
        }
      }
    }
    for (const { observation: o } of instant) {
      if (!o) continue;
      const e = edge(o.tenant_id, o.source_agent_id, o.target_agent_id);
      if (e.declared || e.finding !== null) continue;
      const transition = e.episode === null ? [] : [e.episode];
      const id = findingId(o.tenant_id, "undeclared-escalation", o.source_agent_id, o.target_agent_id, ...transition);
      e.finding = id;
      findingAt.set(id, {
        finding_id: id,
        kind: "undeclared-escalation",
        tenant_id: o.tenant_id,
        source_agent_id: o.source_agent_id,
        target_agent_id: o.target_agent_id,
        resolves: null,
        registry_version: null,
        from: e.from,
        until: Number.POSITIVE_INFINITY,
      });
    }
  }
  return [...findingAt.values(), ...results];
}

/**
 * The oracle over a whole event log: registry changes from its registry records (a tombstone carries
 * no event time, and the service takes its Kafka timestamp, so a log whose times are all before it is
 * published leaves it out), escalations between two agents' outcomes, each outcome's producer from its
 * newest record (the one §3.3 keeps) unless `producer` names it.
 */
export function oracleFindingsOfLog(
  events: readonly ProjectorEvent[],
  producer: Readonly<Record<string, string>> = producersOf(events),
): OracleFinding[] {
  const changes = events
    .filter((e): e is RegistryEvent => e.kind === "registry-snapshot" || e.kind === "registry-tombstone")
    .flatMap((e) => registryChange(e) ?? []);
  const observations: Observation[] = events
    .filter((e): e is EscalationEdge => e.kind === "escalation-edge")
    .flatMap((e) => {
      const source = producer[e.source_outcome_id];
      const target = producer[e.target_outcome_id];
      if (source === undefined || target === undefined || source === target) return [];
      return [
        {
          tenant_id: e.tenant_id,
          source_agent_id: source,
          target_agent_id: target,
          observed_at: e.observed_at,
          source_outcome_id: e.source_outcome_id,
          target_outcome_id: e.target_outcome_id,
        },
      ];
    });
  return oracleFindings(changes, observations);
}

function producersOf(events: readonly ProjectorEvent[]): Record<string, string> {
  const newest = new Map<string, OutcomeCreated>();
  for (const e of events) {
    if (e.kind !== "outcome-created") continue;
    const known = newest.get(e.outcome_id);
    if (!known || e.created_at >= known.created_at) newest.set(e.outcome_id, e);
  }
  return Object.fromEntries([...newest].map(([id, o]) => [id, o.agent_id]));
}
