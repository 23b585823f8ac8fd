import type { Admin, ITopicConfig } from "kafkajs";
import { STREAMS } from "../../model/schemas.js";
import type { TopicNames } from "../../topics.js";

export interface TopicLayout {
  readonly partitions: number;
  readonly replicationFactor: number;
}

/**
 * Every topic the service needs, with its configuration: the registry topic is compacted (its latest
 * snapshot per agent is the registry); retry and dead-letter topics keep records for weeks, long
 * enough to inspect and re-drive.
 */
export function topicSpecs(names: TopicNames, layout: TopicLayout): ITopicConfig[] {
  const base = { numPartitions: layout.partitions, replicationFactor: layout.replicationFactor };
  const minIsr = String(Math.min(2, layout.replicationFactor));
  const specs: ITopicConfig[] = [];
  for (const stream of STREAMS) {
    const compacted = stream === "registry-mutation";
    specs.push({
      topic: names.source[stream],
      ...base,
      configEntries: [
        { name: "cleanup.policy", value: compacted ? "compact" : "delete" },
        { name: "min.insync.replicas", value: minIsr },
        ...(compacted ? [{ name: "min.compaction.lag.ms", value: "3600000" }] : []),
      ],
    });
    specs.push({
      topic: names.retry[stream],
      ...base,
      configEntries: [
        { name: "cleanup.policy", value: "delete" },
        { name: "retention.ms", value: String(7 * 86_400_000) },
        { name: "min.insync.replicas", value: minIsr },
      ],
    });
    specs.push({
      topic: names.deadLetter[stream],
      ...base,
      configEntries: [
        { name: "cleanup.policy", value: "delete" },
        { name: "retention.ms", value: String(28 * 86_400_000) },
        { name: "min.insync.replicas", value: minIsr },
      ],
    });
  }
  return specs;
}

/** Creates the missing topics; existing ones are left as they are. Returns the names it created. */
export async function ensureTopics(
  admin: Admin,
  specs: readonly ITopicConfig[],
  leaderTimeoutMs = 30_000,
): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((spec) => !existing.has(spec.topic));
  if (missing.length === 0) return [];
  const names = missing.map((spec) => spec.topic);
  try {
    await admin.createTopics({ topics: [...missing], waitForLeaders: true });
  } catch (error) {
    // kafkajs's wait for leaders only retries LEADER_NOT_AVAILABLE; a broker that has created the
    // topic but not yet loaded its partitions answers UNKNOWN_TOPIC_OR_PARTITION instead, and
    // another instance may have created the topic between our list and our create.
    if (!isTransientAfterCreate(error)) throw error;
    await waitForLeaders(admin, names, leaderTimeoutMs);
  }
  return names;
}

const TRANSIENT_AFTER_CREATE = new Set(["UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE", "TOPIC_ALREADY_EXISTS"]);

function isTransientAfterCreate(error: unknown): boolean {
  const { type, errors, cause } = error as { type?: string; errors?: unknown; cause?: unknown };
  if (type !== undefined && TRANSIENT_AFTER_CREATE.has(type)) return true;
  // kafkajs wraps the last error of an exhausted retry.
  if (cause !== undefined && cause !== error && isTransientAfterCreate(cause)) return true;
  // A partial CreateTopics failure lists one error per topic.
  return Array.isArray(errors) && errors.length > 0 && errors.every(isTransientAfterCreate);
}

async function waitForLeaders(admin: Admin, topics: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let lastProblem: string;
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics: [...topics] });
      const leaderless = metadata.flatMap((t) =>
        t.partitions.filter((p) => p.leader < 0).map((p) => `${t.name}[${p.partitionId}]`),
      );
      if (leaderless.length === 0) return;
      lastProblem = `no leader yet for ${leaderless.slice(0, 5).join(", ")}`;
    } catch (error) {
      if (!isTransientAfterCreate(error)) throw error;
      lastProblem = (error as Error).message;
    }
    if (Date.now() >= deadline) {
      throw new Error(`topics created but not ready after ${timeoutMs} ms: ${lastProblem}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export class GroupActiveError extends Error {
  override readonly name = "GroupActiveError";
}

/**
 * Resets the group's committed offsets on the chosen topics to the earliest offset or to the first
 * offset at or after a timestamp. Kafka only accepts this for a group with no active member, and so
 * do we: stop every projector instance first.
 */
export async function resetOffsets(
  admin: Admin,
  groupId: string,
  topics: readonly string[],
  to: { earliest: true } | { timestamp: number },
): Promise<{ topic: string; partition: number; offset: string }[]> {
  const [description] = (await admin.describeGroups([groupId])).groups;
  if (description && description.members.length > 0) {
    throw new GroupActiveError(
      `consumer group "${groupId}" has ${description.members.length} active member(s) (state ${description.state}); stop every projector instance first`,
    );
  }
  const done: { topic: string; partition: number; offset: string }[] = [];
  for (const topic of topics) {
    const partitions =
      "earliest" in to
        ? (await admin.fetchTopicOffsets(topic)).map((p) => ({ partition: p.partition, offset: p.low }))
        : (await admin.fetchTopicOffsetsByTimestamp(topic, to.timestamp)).map((p) => ({
            partition: p.partition,
            offset: p.offset,
          }));
    // An offset of -1 means "no record at or after the timestamp": start at the end.
    const high = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, p.high]));
    const target = partitions.map((p) => ({
      partition: p.partition,
      offset: p.offset === "-1" ? (high.get(p.partition) ?? "0") : p.offset,
    }));
    await admin.setOffsets({ groupId, topic, partitions: target });
    for (const p of target) done.push({ topic, ...p });
  }
  return done;
}

/**
 * One partition's lag as the common exporters define it: high watermark minus committed offset, or
 * minus the low watermark while the group has committed nothing ("-1").
 */
export function partitionLag(committed: string, high: number, low: number): number {
  return Math.max(0, high - (committed === "-1" ? low : Number(committed)));
}

/** Consumer lag of a group on every partition of the given topics (see partitionLag). */
export async function fetchLag(
  admin: Admin,
  groupId: string,
  topics: readonly string[],
): Promise<{ topic: string; partition: number; lag: number }[]> {
  return (await fetchPositions(admin, groupId, topics)).map(({ topic, partition, committed, high, low }) => ({
    topic,
    partition,
    lag: partitionLag(committed, high, low),
  }));
}

/** A group's committed offset ("-1": none yet) and the watermarks of every partition of the topics. */
export async function fetchPositions(
  admin: Admin,
  groupId: string,
  topics: readonly string[],
): Promise<{ topic: string; partition: number; committed: string; high: number; low: number }[]> {
  const committed = await admin.fetchOffsets({ groupId, topics: [...topics] });
  const out: { topic: string; partition: number; committed: string; high: number; low: number }[] = [];
  for (const { topic, partitions } of committed) {
    const offsets = await admin.fetchTopicOffsets(topic);
    for (const p of offsets) {
      const commit = partitions.find((c) => c.partition === p.partition)?.offset ?? "-1";
      out.push({ topic, partition: p.partition, committed: commit, high: Number(p.high), low: Number(p.low) });
    }
  }
  return out;
}
