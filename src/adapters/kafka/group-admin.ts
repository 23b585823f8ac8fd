import type { Admin } from "kafkajs";
import type { GroupAdmin, ReadFrom } from "../../ports.js";
import { historyGaps } from "./history.js";

export class GroupActiveError extends Error {
  override readonly name = "GroupActiveError";
}

/**
 * Refuses, with a GroupActiveError, while the group has active members: Kafka accepts offset changes
 * only for an empty group, and a rebuild under running instances would race their writes.
 */
export async function assertNoActiveMembers(admin: Admin, groupId: string): Promise<void> {
  const [description] = (await admin.describeGroups([groupId])).groups;
  if (description && description.members.length > 0) {
    throw new GroupActiveError(
      `consumer group "${groupId}" has ${description.members.length} active member(s) (state ${description.state}); stop every projector instance first`,
    );
  }
}

/** The GroupAdmin port over a connected kafkajs admin client. */
export function createGroupAdmin(admin: Admin): GroupAdmin {
  return {
    assertNoActiveMembers: (groupId) => assertNoActiveMembers(admin, groupId),
    historyGaps: (topics, from) => historyGaps(admin, topics, from),
    resetOffsets: (groupId, topics, to) => resetOffsets(admin, groupId, topics, to),
  };
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
  to: ReadFrom,
): Promise<{ topic: string; partition: number; offset: string }[]> {
  await assertNoActiveMembers(admin, groupId);
  const done: { topic: string; partition: number; offset: string }[] = [];
  for (const topic of topics) {
    const target = await targetOffsets(admin, topic, to);
    await admin.setOffsets({ groupId, topic, partitions: target });
    for (const p of target) done.push({ topic, ...p });
  }
  return done;
}

/** Where resetOffsets would set each partition of `topic`; `replay --dry-run` shows it and sets nothing. */
export async function targetOffsets(
  admin: Admin,
  topic: string,
  to: ReadFrom,
): Promise<{ partition: number; offset: string }[]> {
  const partitions =
    "earliest" in to
      ? (await admin.fetchTopicOffsets(topic)).map((p) => ({ partition: p.partition, offset: p.low }))
      : (await admin.fetchTopicOffsetsByTimestamp(topic, to.timestamp)).map((p) => ({
          partition: p.partition,
          offset: p.offset,
        }));
  // An offset of -1 means "no record at or after the timestamp": start at the end.
  const high = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, p.high]));
  return partitions.map((p) => ({
    partition: p.partition,
    offset: p.offset === "-1" ? (high.get(p.partition) ?? "0") : p.offset,
  }));
}

/**
 * One partition's lag as the common exporters define it: end offset minus committed offset, or minus
 * the low watermark while the group has committed nothing ("-1"). The end offset (`high` from
 * fetchPositions) is the last stable offset — see fetchPositions.
 */
export function partitionLag(committed: string, high: number, low: number): number {
  return Math.max(0, high - (committed === "-1" ? low : Number(committed)));
}

/** Consumer lag of a group on every partition of the given topics (see partitionLag). */
export async function fetchLag(
  admin: Admin,
  groupId: string,
  topics: readonly string[],
): Promise<{ topic: string; partition: number; lag: number; end: number }[]> {
  return (await fetchPositions(admin, groupId, topics)).map(({ topic, partition, committed, high, low }) => ({
    topic,
    partition,
    lag: partitionLag(committed, high, low),
    end: high,
  }));
}

/**
 * A group's committed offset ("-1": none yet) and the watermarks of every partition of the topics.
 * kafkajs's admin lists offsets with isolation READ_COMMITTED, so `high` is the last stable offset:
 * the high watermark, or the first offset of the oldest transaction still open, which the group
 * cannot read past yet either. The projector's group commits past a partition's trailing transaction
 * markers (each-batch.ts), so a caught-up group lags 0 on a transactional topic too.
 */
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
