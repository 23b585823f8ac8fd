import { isAgentId, type RegistryEvent } from "./events.js";
import { findingId } from "./findings.js";

/**
 * Undeclared escalations judged at event time (issue 53): an escalation is undeclared when, at its
 * `observed_at`, the registry did not declare its edge — whatever order the records were applied in.
 *
 * Definitions, per tenant, for an edge A→B:
 * - A's history is the grow-only set of its registry changes, keyed by version: every record adds its
 *   change, a stale one too, so the history is the same in any delivery order. A deregistered snapshot
 *   or a tombstone declares nothing.
 * - The change in force at t is the highest version among A's changes with occurred_at ≤ t; none means
 *   A was not registered, so nothing was declared.
 * - An undeclared episode is a maximal run of event time in which the change in force does not declare
 *   B. An episode with at least one observation gives one finding; an episode ended by a change declaring
 *   B gives one resolution naming that change.
 * - Ids: the episode that starts before any change of A declared B keeps the id the edge always had
 *   (tenant, kind, A, B), so an edge never declared has exactly one finding, as before. An episode that
 *   starts at a revocation adds that change's version; its resolution adds the same version.
 *
 * The judge is incremental: it is given the history, the observations newly judgeable and the findings
 * already recorded, and returns what is new. Its contract with the caller is the watermark: every
 * registry change with occurred_at below it has been applied. Observations and resolving changes below
 * the watermark are decided; everything at or above it waits. Under that contract the union of its
 * answers does not depend on how the calls are split, and equals the answer on the whole log.
 */

/** One registry change of an agent: a snapshot, or a tombstone (occurred_at: its Kafka timestamp). */
export interface RegistryChange {
  readonly tenant_id: string;
  readonly agent_id: string;
  readonly registry_version: number;
  /** Epoch ms. A tombstone has no occurred_at of its own: the Kafka record timestamp stands in. */
  readonly occurred_at: number;
  /** The agent ids it declares (escalation_path filtered by the agent-id convention); [] when deregistered. */
  readonly declared: readonly string[];
  /** Applied after the watermark had passed its occurred_at (beyond the allowed lateness). */
  readonly late?: boolean;
  /** A deregistered snapshot or a tombstone: the agent is retired (no terminal finding of its own). */
  readonly retired?: boolean;
}

/**
 * The change a registry record makes to its agent's history: the agents its escalation path declares
 * (entries outside the agent-id convention are human terminals, never edges, as in §3.2). A deregistered
 * snapshot or a tombstone declares nothing: a deregistered agent authorises no escalation. A tombstone
 * without a timestamp cannot be placed in event time and adds nothing.
 */
export function registryChange(event: RegistryEvent): RegistryChange | undefined {
  const { tenant_id, agent_id, registry_version } = event;
  if (event.kind === "registry-tombstone")
    return event.occurred_at === undefined
      ? undefined
      : { tenant_id, agent_id, registry_version, occurred_at: event.occurred_at, declared: [], retired: true };
  const retired = event.status === "deregistered";
  const declared = retired ? [] : [...new Set((event.escalation_path ?? []).filter(isAgentId))].sort();
  return { tenant_id, agent_id, registry_version, occurred_at: event.occurred_at, declared, retired };
}

/** An escalation between the outcomes of two different agents. */
export interface Observation {
  readonly tenant_id: string;
  readonly source_agent_id: string;
  readonly target_agent_id: string;
  readonly observed_at: number;
  readonly source_outcome_id: string;
  readonly target_outcome_id: string;
}

export type EscalationKind = "undeclared-escalation" | "undeclared-escalation-resolved";

/** A finding with the evidence it was decided on (the fields the governance-finding record carries). */
export interface JudgedFinding {
  readonly finding_id: string;
  readonly tenant_id: string;
  readonly kind: EscalationKind;
  readonly source_agent_id: string;
  readonly target_agent_id: string;
  readonly resolves: string | null;
  /** The version that opened the episode (a revocation), or null for the edge's first episode. */
  readonly episode: number | null;
  /** Finding: the change in force at the observation (null: A was not registered). Resolution: the resolving change. */
  readonly registry_version: number | null;
  readonly registry_occurred_at: number | null;
  /** Finding: the escalation that detected it — the first judged in its episode (delivery may pick another). */
  readonly observed_at: number | null;
  readonly source_outcome_id: string | null;
  readonly target_outcome_id: string | null;
  readonly late: boolean;
}

/** One undeclared episode of an edge: [from, until), until null when it has not ended. */
export interface Episode {
  /** The revocation that opened it, or null for the episode before any declaration. */
  readonly opened_by: RegistryChange | null;
  readonly from: number;
  /** The change that declared the edge again and so ended it. */
  readonly ended_by: RegistryChange | null;
}

const sortChanges = (changes: readonly RegistryChange[]): RegistryChange[] =>
  [...changes].sort((a, b) => a.occurred_at - b.occurred_at || a.registry_version - b.registry_version);

/**
 * The change in force after each distinct occurred_at of A's history, in time order: changes sharing an
 * instant take effect together, so no state exists between them.
 */
export function inForceTimeline(changes: readonly RegistryChange[]): { at: number; change: RegistryChange }[] {
  const timeline: { at: number; change: RegistryChange }[] = [];
  let current: RegistryChange | undefined;
  for (const change of sortChanges(changes)) {
    if (!current || change.registry_version > current.registry_version) current = change;
    const last = timeline.at(-1);
    if (last && last.at === change.occurred_at) timeline[timeline.length - 1] = { at: last.at, change: current };
    else timeline.push({ at: change.occurred_at, change: current });
  }
  return timeline;
}

/** The change of A in force at t, or undefined when A was not registered yet. */
export function inForceAt(changes: readonly RegistryChange[], t: number): RegistryChange | undefined {
  let found: RegistryChange | undefined;
  for (const point of inForceTimeline(changes)) {
    if (point.at > t) break;
    found = point.change;
  }
  return found;
}

/** The undeclared episodes of A→B, in time order, from A's history. */
export function episodes(changes: readonly RegistryChange[], target: string): Episode[] {
  const found: Episode[] = [];
  let open: { opened_by: RegistryChange | null; from: number } | null = {
    opened_by: null,
    from: Number.NEGATIVE_INFINITY,
  };
  for (const { at, change } of inForceTimeline(changes)) {
    const declares = change.declared.includes(target);
    if (declares && open) {
      found.push({ ...open, ended_by: change });
      open = null;
    } else if (!declares && !open) {
      open = { opened_by: change, from: at };
    }
  }
  if (open) found.push({ ...open, ended_by: null });
  return found;
}

const episodeOf = (list: readonly Episode[], t: number): Episode | undefined =>
  list.find((episode) => episode.from <= t && (episode.ended_by === null || t < episode.ended_by.occurred_at));

function escalationFinding(
  kind: EscalationKind,
  tenant: string,
  source: string,
  target: string,
  episode: number | null,
  evidence: Pick<JudgedFinding, "registry_version" | "registry_occurred_at" | "late"> &
    Partial<Pick<JudgedFinding, "observed_at" | "source_outcome_id" | "target_outcome_id">>,
): JudgedFinding {
  const transition = episode === null ? [] : [episode];
  return {
    finding_id: findingId(tenant, kind, source, target, ...transition),
    tenant_id: tenant,
    kind,
    source_agent_id: source,
    target_agent_id: target,
    resolves:
      kind === "undeclared-escalation-resolved"
        ? findingId(tenant, "undeclared-escalation", source, target, ...transition)
        : null,
    episode,
    observed_at: null,
    source_outcome_id: null,
    target_outcome_id: null,
    ...evidence,
  };
}

export interface JudgeInput {
  /** Every change known of the agents the observations and open findings name (more does no harm). */
  readonly history: readonly RegistryChange[];
  /** Observations not judged yet; those at or above the watermark are left for a later call. */
  readonly observations: readonly Observation[];
  /** The undeclared-escalation findings already recorded for these edges, and whether a resolution answers each. */
  readonly recorded: readonly RecordedFinding[];
  /** Every registry change with occurred_at below it has been applied. */
  readonly watermark: number;
}

export interface RecordedFinding
  extends Pick<JudgedFinding, "finding_id" | "tenant_id" | "source_agent_id" | "target_agent_id" | "episode"> {
  readonly resolved: boolean;
}

export interface JudgeOutput {
  /** New findings and resolutions, a finding before the resolution that answers it. */
  readonly findings: JudgedFinding[];
  /** The observations this call decided (whether or not they found anything). */
  readonly judged: Observation[];
}

const agentOf = (tenant: string, agent: string) => JSON.stringify([tenant, agent]);

/**
 * Judges the observations below the watermark against the history, and resolves the open findings
 * (and the ones found now) whose episode a change below the watermark ended.
 */
export function judgeEscalations(input: JudgeInput): JudgeOutput {
  const historyOf = new Map<string, RegistryChange[]>();
  for (const change of input.history) {
    const key = agentOf(change.tenant_id, change.agent_id);
    historyOf.set(key, [...(historyOf.get(key) ?? []), change]);
  }
  const episodesOf = new Map<string, Episode[]>();
  const edgeEpisodes = (tenant: string, source: string, target: string): Episode[] => {
    const key = JSON.stringify([tenant, source, target]);
    const known = episodesOf.get(key);
    if (known) return known;
    const list = episodes(historyOf.get(agentOf(tenant, source)) ?? [], target);
    episodesOf.set(key, list);
    return list;
  };

  const found = new Map<string, JudgedFinding>();
  const recorded = new Set(input.recorded.map((f) => f.finding_id));
  const open = new Map<
    string,
    Pick<JudgedFinding, "finding_id" | "tenant_id" | "source_agent_id" | "target_agent_id" | "episode">
  >(input.recorded.filter((f) => !f.resolved).map((f) => [f.finding_id, f]));
  const judged: Observation[] = [];
  const byTime = [...input.observations].sort(
    (a, b) =>
      a.observed_at - b.observed_at ||
      (a.source_outcome_id < b.source_outcome_id ? -1 : a.source_outcome_id > b.source_outcome_id ? 1 : 0) ||
      (a.target_outcome_id < b.target_outcome_id ? -1 : a.target_outcome_id > b.target_outcome_id ? 1 : 0),
  );
  for (const obs of byTime) {
    if (obs.observed_at >= input.watermark) continue;
    judged.push(obs);
    const { tenant_id: tenant, source_agent_id: source, target_agent_id: target } = obs;
    const episode = episodeOf(edgeEpisodes(tenant, source, target), obs.observed_at);
    if (!episode) continue;
    const version = episode.opened_by?.registry_version ?? null;
    const inForce = inForceAt(historyOf.get(agentOf(tenant, source)) ?? [], obs.observed_at);
    const f = escalationFinding("undeclared-escalation", tenant, source, target, version, {
      registry_version: inForce?.registry_version ?? null,
      registry_occurred_at: inForce?.occurred_at ?? null,
      late: inForce?.late === true,
      observed_at: obs.observed_at,
      source_outcome_id: obs.source_outcome_id,
      target_outcome_id: obs.target_outcome_id,
    });
    if (recorded.has(f.finding_id) || found.has(f.finding_id)) continue;
    found.set(f.finding_id, f);
    open.set(f.finding_id, f);
  }
  for (const f of open.values()) {
    const episode = edgeEpisodes(f.tenant_id, f.source_agent_id, f.target_agent_id).find(
      (e) => (e.opened_by?.registry_version ?? null) === f.episode,
    );
    const end = episode?.ended_by;
    if (!end || end.occurred_at >= input.watermark) continue;
    const resolution = escalationFinding(
      "undeclared-escalation-resolved",
      f.tenant_id,
      f.source_agent_id,
      f.target_agent_id,
      f.episode,
      {
        registry_version: end.registry_version,
        registry_occurred_at: end.occurred_at,
        // A correction comes as a pair: the resolution of an episode a late change opened is late too.
        late: end.late === true || episode?.opened_by?.late === true,
      },
    );
    found.set(resolution.finding_id, resolution);
  }
  return { findings: [...found.values()], judged };
}

/** The registry partitions' end offsets as one lag poll read them, and when (taken before the read). */
export interface RegistryPoll {
  readonly at: number;
  /** partition → end offset (the last stable offset) at `at`. */
  readonly ends: ReadonlyMap<number, number>;
}

/** What the service remembers between polls: the polls not yet passed, and the watermark reached. */
export interface RegistryWatermarkState {
  readonly polls: readonly RegistryPoll[];
  readonly watermark: number;
}

export const NO_REGISTRY_WATERMARK: RegistryWatermarkState = { polls: [], watermark: Number.NEGATIVE_INFINITY };

/** Polls remembered: at one a second, beyond FINDINGS_MAX_WAIT_MS's default the judge no longer waits. */
const POLLS_KEPT = 900;

/**
 * The service's registry watermark, advanced by one lag poll: `poll` is the partitions' end offsets,
 * `committed` the group's position on each (end − lag) in the same poll. Every record on the topic at
 * a poll's time has an offset below that poll's end; once the group has committed past each partition's
 * end of a poll, all of them are applied, and a record written later must have occurred_at ≥ the
 * poll's time − `allowedLatenessMs` to be on time (the lateness a producer may take to get a change onto
 * the topic). So the watermark is the latest passed poll's time minus the lateness — a partition that
 * never catches up under a steady stream does not hold it back, only how far behind its end it runs.
 * It never goes down; a partition not in the poll (added since) holds the older polls back.
 */
export function advanceRegistryWatermark(
  state: RegistryWatermarkState,
  poll: RegistryPoll,
  committed: ReadonlyMap<number, number>,
  allowedLatenessMs: number,
): RegistryWatermarkState {
  const polls = [...state.polls, poll].slice(-POLLS_KEPT);
  const passed = (p: RegistryPoll) =>
    [...p.ends].every(([partition, end]) => (committed.get(partition) ?? Number.NEGATIVE_INFINITY) >= end);
  let last = -1;
  for (let i = polls.length - 1; i >= 0; i--) {
    const candidate = polls[i];
    if (candidate && passed(candidate)) {
      last = i;
      break;
    }
  }
  const reached = last < 0 ? Number.NEGATIVE_INFINITY : (polls[last]?.at ?? 0) - allowedLatenessMs;
  return { polls: polls.slice(last + 1), watermark: Math.max(state.watermark, reached) };
}
