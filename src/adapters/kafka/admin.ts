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
export async function ensureTopics(admin: Admin, specs: readonly ITopicConfig[]): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((spec) => !existing.has(spec.topic));
  if (missing.length === 0) return [];
  await admin.createTopics({ topics: [...missing], waitForLeaders: true });
  return missing.map((spec) => spec.topic);
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

/** Consumer lag as the common exporters define it: high watermark minus committed offset. */
export async function fetchLag(
  admin: Admin,
  groupId: string,
  topics: readonly string[],
): Promise<{ topic: string; partition: number; lag: number }[]> {
  const committed = await admin.fetchOffsets({ groupId, topics: [...topics] });
  const out: { topic: string; partition: number; lag: number }[] = [];
  for (const { topic, partitions } of committed) {
    const offsets = await admin.fetchTopicOffsets(topic);
    for (const p of offsets) {
      const commit = partitions.find((c) => c.partition === p.partition)?.offset ?? "-1";
      const from = commit === "-1" ? Number(p.low) : Number(commit);
      out.push({ topic, partition: p.partition, lag: Math.max(0, Number(p.high) - from) });
    }
  }
  return out;
}
