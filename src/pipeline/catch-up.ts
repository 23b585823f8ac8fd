import type { Stream } from "../topics.js";

/**
 * What makes an upstream backlog worth waiting for: more than `records` records on partitions that
 * are more than `seconds` behind. Either at 0 turns the hold off.
 */
export interface HoldLimits {
  readonly records: number;
  readonly seconds: number;
}

/** One look at a partition: when (ms), and its end offset then. */
export interface EndSample {
  readonly at: number;
  readonly end: number;
}

/** An upstream partition as the hold sees it: the group's lag on it and the end offsets seen lately. */
export interface UpstreamPartition {
  readonly lag: number;
  /** The next offset the group applies: the end offset of the latest look minus the lag. */
  readonly position: number;
  /** The looks kept (at least those of the last `seconds`), oldest first. */
  readonly ends: readonly EndSample[];
}

/**
 * Whether the oldest record still waiting on a partition may be more than `seconds` old. Kafka does not
 * say when a record was written without reading it, but the hold looks at every end offset about once
 * a second: when the end offset at a look within the window had already reached the group's position,
 * every record still waiting was written after that look. Otherwise the oldest is older than the
 * window, or was there before the first look (a backlog met at start-up): both count as behind.
 */
export function behind(partition: UpstreamPartition, now: number, seconds: number): boolean {
  if (partition.lag <= 0) return false;
  const since = now - seconds * 1000;
  return !partition.ends.some((look) => look.at >= since && look.end <= partition.position);
}

/**
 * The time before which every record written to these partitions has been applied by the group (ms;
 * `now` when nothing waits, -Infinity when no look kept says): for each partition, the latest look
 * whose end offset the group's position had reached. While a stream is held, its own records written
 * before that time find what they depend on in the graph, and go ahead (see admittedBefore).
 */
export function appliedThrough(partitions: readonly UpstreamPartition[], now: number): number {
  let through = now;
  for (const partition of partitions) {
    if (partition.lag <= 0) continue;
    let latest = Number.NEGATIVE_INFINITY;
    for (const look of partition.ends) if (look.end <= partition.position && look.at > latest) latest = look.at;
    through = Math.min(through, latest);
  }
  return through;
}

/** The records waiting on the partitions that are behind (see behind). */
export function overdueLag(partitions: readonly UpstreamPartition[], now: number, seconds: number): number {
  return partitions.filter((p) => behind(p, now, seconds)).reduce((total, p) => total + p.lag, 0);
}

/**
 * Which streams to hold back while an upstream stream catches up. Outcomes need their agent's
 * registry snapshot and escalations need their outcomes: consumed side by side from a backlog (a new
 * deployment, a replay, a rebuild), most dependent records would arrive early and take the deferral
 * path — correct, but several times slower than waiting. `overdue` is, per upstream source topic, the
 * group's lag on its partitions that are behind (overdueLag); above `threshold` records, the
 * dependents pause. Steady traffic, however many records it has in flight, is seconds fresh and
 * flows untouched; a backlog met at start-up holds until what is left of it is down to `threshold`
 * records or was written within the window. Retry topics are never held. A threshold of 0 turns this
 * off.
 */
export function heldStreams(overdue: Readonly<Record<Stream, number>>, threshold: number): Set<Stream> {
  const held = new Set<Stream>();
  if (threshold <= 0) return held;
  if (overdue["registry-mutation"] > threshold) {
    held.add("outcome-created");
    held.add("escalation-edge");
  }
  if (overdue["outcome-created"] > threshold) held.add("escalation-edge");
  return held;
}

/** The whole decision, from each upstream source topic's partitions (heldStreams over overdueLag). */
export function holdDecision(
  upstream: Readonly<Record<"registry-mutation" | "outcome-created", readonly UpstreamPartition[]>>,
  now: number,
  limits: HoldLimits,
): Set<Stream> {
  if (limits.seconds <= 0) return new Set();
  return heldStreams(
    {
      "registry-mutation": overdueLag(upstream["registry-mutation"], now, limits.seconds),
      "outcome-created": overdueLag(upstream["outcome-created"], now, limits.seconds),
      "escalation-edge": 0,
    },
    limits.records,
  );
}

/**
 * Per stream, the time before which its records find everything they wait on applied: outcomes wait
 * on the registry, escalations on the registry and the outcomes (appliedThrough of each). A held
 * stream's records written before it go ahead (partition-policy.ts admittedBefore), so that under a
 * load the projector only just keeps up with, escalations trail the outcomes instead of stopping.
 */
export function admitBefore(
  upstream: Readonly<Record<"registry-mutation" | "outcome-created", readonly UpstreamPartition[]>>,
  now: number,
): Record<Stream, number> {
  const registry = appliedThrough(upstream["registry-mutation"], now);
  return {
    "registry-mutation": Number.POSITIVE_INFINITY,
    "outcome-created": registry,
    "escalation-edge": Math.min(registry, appliedThrough(upstream["outcome-created"], now)),
  };
}

/**
 * Whether asking the broker for the group's lag could release a held stream. The lags one instance
 * sees on its own partitions (high watermark of its last fetch minus its own commits) are a lower
 * bound on the group's, and holding only grows with lag: if that lower bound already holds every
 * held stream, the group-wide answer would hold them too. The caller asks this only while every
 * record the group had waiting upstream at the last answer was behind (a backlog): then the local
 * lag stands for overdue records, at worst a second late.
 */
export function mightRelease(
  held: ReadonlySet<Stream>,
  lowerBound: Readonly<Record<Stream, number>>,
  threshold: number,
): boolean {
  const stillHeld = heldStreams(lowerBound, threshold);
  return [...held].some((stream) => !stillHeld.has(stream));
}
