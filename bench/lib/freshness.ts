/**
 * The pure parts of the steady-load freshness run: how many records each tick publishes, which
 * published records a consumer group's committed offsets cover, and the quantiles of what that
 * took — measured from outside, next to the service's own `agp_freshness_seconds` histogram.
 */
import type { EscalationEdge, OutcomeCreated, RegistryEvent } from "../../src/model/events.js";
import { histogramBuckets, type Sample } from "./prom.js";

/**
 * Records due by `elapsedMs` at `rate` records/s. A tick publishes `recordsDue(rate, its end) −
 * recordsDue(rate, its start)`, so rounding never accumulates: after t seconds exactly
 * ⌊rate·t⌋ records were due, whatever the tick length.
 */
export function recordsDue(rate: number, elapsedMs: number): number {
  if (rate <= 0 || elapsedMs <= 0) return 0;
  return Math.floor((rate * elapsedMs) / 1000 + 1e-9);
}

/**
 * Per agent, the agents its registry entry declares on its escalation path as the log leaves it (the
 * last record of each agent wins; a tombstone declares nothing), limited to registered agents: the
 * pairs an escalation can take without a governance finding.
 */
export function declaredTargets(registry: readonly RegistryEvent[]): Map<string, string[]> {
  const last = new Map<string, RegistryEvent>();
  for (const event of registry) last.set(event.agent_id, event);
  const targets = new Map<string, string[]>();
  for (const [agent, event] of last) {
    if (event.kind !== "registry-snapshot") continue;
    const path = (event.escalation_path ?? []).filter(
      (target) => target !== agent && last.get(target)?.kind === "registry-snapshot",
    );
    if (path.length > 0) targets.set(agent, [...new Set(path)]);
  }
  return targets;
}

/**
 * Outcomes published lately, by agent, so that an escalation can be drawn between two outcomes
 * whose agents' path is declared. Keeps the last `perAgent` of each agent.
 */
export class RecentByAgent {
  private readonly byAgent = new Map<string, { id: string; at: number }[]>();

  constructor(private readonly perAgent = 64) {}

  add(agent: string, id: string, at: number): void {
    const list = this.byAgent.get(agent) ?? [];
    list.push({ id, at });
    if (list.length > this.perAgent) list.shift();
    this.byAgent.set(agent, list);
  }

  /** One of `agent`'s outcomes published within [from, to], drawn with `random`, or undefined. */
  pick(agent: string, from: number, to: number, random: () => number): string | undefined {
    const eligible = (this.byAgent.get(agent) ?? []).filter((entry) => entry.at >= from && entry.at <= to);
    return eligible[Math.floor(random() * eligible.length)]?.id;
  }
}

/** The length of one tick of a steady load: what it publishes is due by its start. */
export const TICK_MS = 100;

export interface SteadyLoadOptions {
  readonly rate: number;
  readonly ticks: number;
  /** Outcomes the load's records are copies of (each under an id of its own). */
  readonly pool: readonly OutcomeCreated[];
  /** Per agent, the agents its registry entry declares (declaredTargets). */
  readonly declared: ReadonlyMap<string, readonly string[]>;
  /** The share of escalations drawn between any two recent outcomes rather than along a declared path. */
  readonly undeclaredRatio: number;
  readonly escalationShare: number;
  readonly random: () => number;
  /** Makes the load's ids its own: records of two loads never share an id. */
  readonly label: string;
}

/** What the load drew: escalations along a declared path, and the others. */
export interface SteadyLoadDraws {
  declared: number;
  random: number;
}

/**
 * A steady load, tick by tick: the records each tick publishes, due by its start. Escalations go
 * between outcomes published 2 to 30 s earlier (10% redelivered copies of earlier escalations), once
 * there is such a history; the rest are outcomes. Event times are offsets from the load's start (ms):
 * a tick's own records carry the tick's, a redelivered copy its original's. The records are encoded
 * before the load and stamped with their real times as they are sent (`LoadProducer.send`), so that
 * generating and encoding them takes none of the CPU the load is measured on.
 */
export function* steadyLoadTicks(
  options: SteadyLoadOptions,
  draws: SteadyLoadDraws = { declared: 0, random: 0 },
): Generator<(OutcomeCreated | EscalationEdge)[]> {
  const { rate, pool, declared, random, label } = options;
  // Outcomes published in the last 30 s, oldest first: [head, eligibleEnd) were published 2-30 s ago.
  const recent: { id: string; at: number; agent: string }[] = [];
  const byAgent = new RecentByAgent();
  const redelivery: EscalationEdge[] = [];
  let head = 0;
  let eligibleEnd = 0;
  let k = 0;
  for (let tick = 0; tick < options.ticks; tick++) {
    const now = tick * TICK_MS;
    const due = recordsDue(rate, now) - k;
    const batch: (OutcomeCreated | EscalationEdge)[] = [];
    while (head < recent.length && (recent[head] as { at: number }).at < now - 30_000) head++;
    eligibleEnd = Math.max(eligibleEnd, head);
    while (eligibleEnd < recent.length && (recent[eligibleEnd] as { at: number }).at <= now - 2_000) eligibleEnd++;
    if (head > 100_000) {
      recent.splice(0, head);
      eligibleEnd -= head;
      head = 0;
    }
    const eligible = eligibleEnd - head;
    for (let i = 0; i < due; i++) {
      if (eligible > 1 && random() < options.escalationShare) {
        if (redelivery.length > 0 && random() < 0.1) {
          batch.push({ ...(redelivery[Math.floor(random() * redelivery.length)] as EscalationEdge) });
          continue;
        }
        const source = recent[head + Math.floor(random() * eligible)] as (typeof recent)[number];
        // As in the log the capacity was measured on: all but undeclaredRatio of the escalations
        // follow a path the source's agent declares, so only those few are governance findings.
        const targets = random() >= options.undeclaredRatio ? declared.get(source.agent) : undefined;
        const declaredTarget = targets
          ? byAgent.pick(targets[Math.floor(random() * targets.length)] as string, now - 30_000, now - 2_000, random)
          : undefined;
        const target = declaredTarget ?? (recent[head + Math.floor(random() * eligible)] as { id: string }).id;
        if (declaredTarget !== undefined) draws.declared += 1;
        else draws.random += 1;
        if (source.id !== target) {
          const edge: EscalationEdge = {
            kind: "escalation-edge",
            event_id: `${label}-e${k}-${i}`,
            tenant_id: "default",
            source_outcome_id: source.id,
            target_outcome_id: target,
            observed_at: now,
          };
          batch.push(edge);
          redelivery.push(edge);
          if (redelivery.length > 2000) redelivery.shift();
          continue;
        }
      }
      const base = pool[(k + i) % pool.length] as OutcomeCreated;
      const id = `${base.outcome_id}-${label}-${k + i}`;
      batch.push({ ...base, outcome_id: id, event_id: `${base.event_id}-${label}-${k + i}`, created_at: now });
      recent.push({ id, at: now, agent: base.agent_id });
      byAgent.add(base.agent_id, id, now);
    }
    k += due;
    yield batch;
  }
}

/** The rates to run: explicit records/s if given, otherwise fractions of the measured capacity. */
export function freshnessRates(
  capacity: number | null,
  fractions: readonly number[],
  explicit: readonly number[],
): { rate: number; fractionOfCapacity: number | null }[] {
  if (explicit.length > 0)
    return explicit.map((rate) => ({
      rate: Math.round(rate),
      fractionOfCapacity: capacity ? Math.round((rate / capacity) * 100) / 100 : null,
    }));
  if (capacity === null || !(capacity > 0)) return [];
  return fractions.map((fraction) => ({
    rate: Math.max(1, Math.round(capacity * fraction)),
    fractionOfCapacity: fraction,
  }));
}

/**
 * A load's achieved rate over the backlog capacity measured right before and right after it (the
 * capacity checks), to two decimals; null where no check ran. The host's speed moves by a fifth within
 * minutes, so the two say how hard the load pushed better than a fraction of a capacity measured
 * half an hour earlier: above 1 at either, the load was past what the host could apply then.
 */
export function achievedOfCapacity(
  achievedRate: number,
  before: number | null,
  after: number | null,
): { before: number | null; after: number | null } {
  const of = (capacity: number | null) =>
    capacity !== null && capacity > 0 ? Math.round((achievedRate / capacity) * 100) / 100 : null;
  return { before: of(before), after: of(after) };
}

/**
 * Published records of one partition, in cohorts: a cohort starts at the base offset one produce
 * request was given and carries the event time its records were stamped with. A cohort ends where
 * the next begins; the last one ends at the partition's high watermark once publishing stopped.
 */
export interface Cohort {
  readonly start: number;
  readonly eventTimeMs: number;
}

export interface Settled {
  readonly seconds: number;
  readonly count: number;
  /** The cohort's event time: when its records were stamped and published. */
  readonly eventTimeMs: number;
}

/**
 * Tracks cohorts per topic-partition and settles them against committed offsets: a cohort is
 * settled at the first poll that saw the group's committed offset at or past its end — even when
 * its end became known later — so each record's figure is (that poll's time − its event time),
 * late by at most one poll interval.
 */
export class CohortTracker {
  private readonly pending = new Map<string, Cohort[]>();
  private readonly ends = new Map<string, number>();
  /** Polls that moved a partition's committed offset forward, oldest first. */
  private readonly seen = new Map<string, { atMs: number; offset: number }[]>();
  readonly settled = new Map<string, Settled[]>();

  add(topic: string, partition: number, start: number, eventTimeMs: number): void {
    const key = `${topic}/${partition}`;
    const list = this.pending.get(key) ?? [];
    const last = list.at(-1);
    // A send retried whole may report an offset already seen; the cohort then continues.
    if (last && start <= last.start) return;
    list.push({ start, eventTimeMs });
    this.pending.set(key, list);
  }

  /** Publishing stopped: the last cohort of each partition ends at its high watermark. */
  close(topic: string, partition: number, highWatermark: number): void {
    this.ends.set(`${topic}/${partition}`, highWatermark);
  }

  /** Settles what `committed` (next offset to read, per topic/partition) covers, as of `nowMs`. */
  settle(committed: ReadonlyMap<string, number>, nowMs: number): void {
    for (const [key, offset] of committed) {
      const history = this.seen.get(key) ?? [];
      if (offset > (history.at(-1)?.offset ?? Number.NEGATIVE_INFINITY)) history.push({ atMs: nowMs, offset });
      this.seen.set(key, history);
    }
    for (const [key, list] of this.pending) {
      const history = this.seen.get(key) ?? [];
      const topic = key.slice(0, key.lastIndexOf("/"));
      const done = this.settled.get(topic) ?? [];
      while (list.length > 0) {
        const cohort = list[0] as Cohort;
        const end = list.length > 1 ? (list[1] as Cohort).start : this.ends.get(key);
        if (end === undefined) break;
        // Observations below this end can settle no later cohort either (their ends are larger).
        while (history.length > 0 && (history[0] as { offset: number }).offset < end) history.shift();
        const first = history[0];
        if (!first) break;
        if (end > cohort.start)
          done.push({
            seconds: Math.max(0, first.atMs - cohort.eventTimeMs) / 1000,
            count: end - cohort.start,
            eventTimeMs: cohort.eventTimeMs,
          });
        list.shift();
      }
      this.settled.set(topic, done);
    }
  }

  /**
   * Gives up waiting: what is still pending is settled as of `nowMs`, a lower bound of its
   * freshness. Returns how many records that was.
   */
  settleRemaining(nowMs: number): number {
    let records = 0;
    for (const [key, list] of this.pending) {
      const topic = key.slice(0, key.lastIndexOf("/"));
      const done = this.settled.get(topic) ?? [];
      list.forEach((cohort, i) => {
        const end = i + 1 < list.length ? (list[i + 1] as Cohort).start : this.ends.get(key);
        if (end === undefined || end <= cohort.start) return;
        done.push({
          seconds: Math.max(0, nowMs - cohort.eventTimeMs) / 1000,
          count: end - cohort.start,
          eventTimeMs: cohort.eventTimeMs,
        });
        records += end - cohort.start;
      });
      list.length = 0;
      this.settled.set(topic, done);
    }
    return records;
  }

  /** Produce requests whose records no commit has covered yet. */
  unsettledCohorts(): number {
    let n = 0;
    for (const list of this.pending.values()) n += list.length;
    return n;
  }
}

/** A value with how many records had it. */
type Weighted = Pick<Settled, "seconds" | "count">;

/** Nearest-rank quantile over values with counts. */
export function weightedQuantile(values: readonly Weighted[], q: number): number | null {
  const total = values.reduce((s, v) => s + v.count, 0);
  if (total === 0) return null;
  const sorted = [...values].sort((a, b) => a.seconds - b.seconds);
  const rank = Math.min(total, Math.max(1, Math.ceil(q * total)));
  let seen = 0;
  for (const v of sorted) {
    seen += v.count;
    if (seen >= rank) return v.seconds;
  }
  return (sorted.at(-1) as Weighted).seconds;
}

/** One second of a load, by the time its records were published. */
export interface TimelineSecond {
  readonly records: number;
  /** The slowest record's freshness, or null when the second published none. */
  readonly max: number | null;
}

/**
 * Freshness second by second of event time over `[fromMs, fromMs + seconds·1000)`: whether a tail
 * is one stall (a few seconds' records all late together) or spread through the load.
 */
export function freshnessTimeline(values: readonly Settled[], fromMs: number, seconds: number): TimelineSecond[] {
  const records = new Array<number>(seconds).fill(0);
  const max = new Array<number | null>(seconds).fill(null);
  for (const v of values) {
    const i = Math.floor((v.eventTimeMs - fromMs) / 1000);
    if (i < 0 || i >= seconds) continue;
    records[i] = (records[i] as number) + v.count;
    max[i] = Math.max(max[i] ?? 0, v.seconds);
  }
  return records.map((n, i) => ({ records: n, max: max[i] as number | null }));
}

/** Per-series difference of two scrapes of one process (counters and histogram buckets): the window between them. */
export function sampleDelta(after: readonly Sample[], before: readonly Sample[]): Sample[] {
  const earlier = new Map(before.map((s) => [`${s.name}${JSON.stringify(s.labels)}`, s.value]));
  return after.map((s) => ({ ...s, value: s.value - (earlier.get(`${s.name}${JSON.stringify(s.labels)}`) ?? 0) }));
}

/**
 * The largest observation a histogram can have held: the upper bound of its highest non-empty
 * bucket (`+Inf` when only the overflow bucket grew), or null when it is empty.
 */
export function histogramMaxBound(
  samples: readonly Sample[],
  name: string,
  filter: Record<string, string> = {},
): number | null {
  const sorted = histogramBuckets(samples, name, filter);
  let previous = 0;
  let bound: number | null = null;
  for (const [le, cumulative] of sorted) {
    if (cumulative > previous) bound = le;
    previous = cumulative;
  }
  return bound;
}

/** The largest value of a gauge over its series matching `filter`, or null when it has none. */
export function gaugeMax(samples: readonly Sample[], name: string, filter: Record<string, string> = {}): number | null {
  let max: number | null = null;
  for (const s of samples)
    if (
      s.name === name &&
      Object.entries(filter).every(([k, v]) => s.labels[k] === v) &&
      (max === null || s.value > max)
    )
      max = s.value;
  return max;
}
