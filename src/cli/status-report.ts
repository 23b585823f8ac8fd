import { partitionLag } from "../adapters/kafka/group-admin.js";

/**
 * `status` from what it gathered: the group as the broker describes it, the group's offsets, each
 * reachable member's /metrics, the dead-letter topics and the graph's findings outbox. Pure: the
 * gathering is in status.ts.
 */

/** One sample of the Prometheus text format: `name{label="value",…} number`. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a /metrics answer (comments and malformed lines are skipped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = SAMPLE.exec(line.trim());
    if (!match) continue;
    const value = Number(match[3]);
    if (Number.isNaN(value)) continue;
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (match[2] ?? "").matchAll(LABEL))
      labels[key as string] = (raw as string).replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    samples.push({ name: match[1] as string, labels, value });
  }
  return samples;
}

export interface GroupMember {
  readonly memberId: string;
  readonly clientId: string;
  /** As the broker saw the connection, without kafkajs's leading slash. */
  readonly host: string;
  /** Topic → partitions, from the member's assignment. */
  readonly assignment: Readonly<Record<string, readonly number[]>>;
}

/** Whose /metrics status read, and what it answered. */
export interface MetricsSource {
  readonly url: string;
  readonly samples?: readonly Sample[];
  readonly error?: string;
}

export interface StatusInputs {
  readonly group: string;
  readonly state: string;
  readonly members: readonly GroupMember[];
  readonly positions: readonly { topic: string; partition: number; committed: string; high: number; low: number }[];
  readonly metrics: readonly MetricsSource[];
  readonly deadLetterReasons: readonly string[];
  readonly unpublished: readonly { tenant: string; count: number }[];
  readonly judgement?: readonly JudgementStatus[];
  readonly now: number;
}

/** What waits for the event-time judge in one database (cypher/event-time-judge.ts JUDGE_STATUS). */
export interface JudgementStatus {
  readonly database: string;
  /** Escalations (OBSERVED markers) and registry changes applied and not judged yet. */
  readonly waiting: number;
  /** How long the oldest of them has waited since it was applied; null when none waits. */
  readonly oldestWaitSeconds: number | null;
  /** Event time every escalation below which has been judged; null before the first judgement. */
  readonly judgedThrough: string | null;
}

export interface PartitionStatus {
  readonly topic: string;
  readonly partition: number;
  readonly member: string | null;
  readonly committed: number | null;
  readonly end: number;
  readonly lag: number;
  /** From the owner's agp_last_commit_timestamp_seconds: Kafka keeps no commit time that its admin API returns. */
  readonly lastCommit: string | null;
  readonly paused: string | null;
  readonly oldestUnappliedSeconds: number | null;
}

export interface StatusReport {
  readonly group: string;
  readonly state: string;
  readonly at: string;
  readonly members: readonly { member: string; memberId: string; host: string; partitions: number; metrics: string }[];
  readonly partitions: readonly PartitionStatus[];
  readonly paused: readonly { topic: string; partition: number; reason: string; member: string | null }[];
  readonly totalLag: number;
  /** The oldest record fetched and not yet applied, over the members status could read; null: none read. */
  readonly oldestUnappliedSeconds: number | null;
  readonly deadLetters: readonly { reason: string; count: number }[];
  readonly unpublishedFindings: readonly { tenant: string; count: number }[];
  readonly judgement: readonly JudgementStatus[];
  readonly notes: readonly string[];
}

const key = (topic: string, partition: number | string) => `${topic}:${partition}`;

/** Per partition, the samples of one metric (several members: the largest value). */
function byPartition(samples: readonly Sample[], name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) {
    if (s.name !== name || s.labels.topic === undefined || s.labels.partition === undefined) continue;
    const k = key(s.labels.topic, s.labels.partition);
    out.set(k, Math.max(out.get(k) ?? Number.NEGATIVE_INFINITY, s.value));
  }
  return out;
}

export function buildStatus(inputs: StatusInputs): StatusReport {
  const samples = inputs.metrics.flatMap((m) => m.samples ?? []);
  const lastCommit = byPartition(samples, "agp_last_commit_timestamp_seconds");
  const unapplied = byPartition(samples, "agp_oldest_unapplied_record_age_seconds");
  const pausedBy = new Map<string, string>();
  for (const s of samples)
    if (s.name === "agp_partition_paused" && s.value > 0 && s.labels.topic !== undefined)
      pausedBy.set(key(s.labels.topic, s.labels.partition ?? ""), s.labels.reason ?? "unknown");
  const owner = new Map<string, string>();
  for (const m of inputs.members)
    for (const [topic, partitions] of Object.entries(m.assignment))
      for (const p of partitions) owner.set(key(topic, p), memberName(m));

  const ordered = [...inputs.positions].sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  const partitions: PartitionStatus[] = ordered.map(({ topic, partition, committed, high, low }) => {
    const k = key(topic, partition);
    const commitAt = lastCommit.get(k);
    return {
      topic,
      partition,
      member: owner.get(k) ?? null,
      committed: committed === "-1" ? null : Number(committed),
      end: high,
      lag: partitionLag(committed, high, low),
      lastCommit: commitAt === undefined ? null : new Date(commitAt * 1000).toISOString(),
      paused: pausedBy.get(k) ?? null,
      oldestUnappliedSeconds: unapplied.get(k) ?? null,
    };
  });
  const ages = partitions.flatMap((p) => (p.oldestUnappliedSeconds === null ? [] : [p.oldestUnappliedSeconds]));
  const reasons = new Map<string, number>();
  for (const reason of inputs.deadLetterReasons) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);

  const notes: string[] = [];
  if (inputs.members.length === 0) notes.push("no member is in the group: nothing is consuming");
  for (const m of inputs.metrics)
    if (m.error !== undefined)
      notes.push(`metrics at ${m.url} unreachable (${m.error}): its partitions show no pause, commit time or age`);
  if (inputs.metrics.length === 0 && inputs.members.length > 0)
    notes.push("no member's metrics were read: pauses, commit times and ages are unknown (see --metrics-url)");

  return {
    group: inputs.group,
    state: inputs.state,
    at: new Date(inputs.now).toISOString(),
    members: inputs.members.map((m) => ({
      member: memberName(m),
      memberId: m.memberId,
      host: m.host,
      partitions: Object.values(m.assignment).reduce((n, ps) => n + ps.length, 0),
      metrics: metricsOf(m, inputs.metrics),
    })),
    partitions,
    paused: partitions.flatMap((p) =>
      p.paused === null ? [] : [{ topic: p.topic, partition: p.partition, reason: p.paused, member: p.member }],
    ),
    totalLag: partitions.reduce((n, p) => n + p.lag, 0),
    oldestUnappliedSeconds: ages.length === 0 ? null : Math.max(...ages),
    deadLetters: [...reasons].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count),
    unpublishedFindings: inputs.unpublished,
    judgement: inputs.judgement ?? [],
    notes,
  };
}

/** A member as people tell them apart: its client id and host (every instance's client id is the same). */
function memberName(m: GroupMember): string {
  return `${m.host}/${m.memberId.slice(-8)}`;
}

function metricsOf(m: GroupMember, sources: readonly MetricsSource[]): string {
  const source = sources.find((s) => new URL(s.url).hostname === m.host);
  if (!source) return "not read";
  return source.error === undefined ? "read" : "unreachable";
}
