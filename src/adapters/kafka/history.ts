import type { Admin } from "kafkajs";
import type { HistoryGap, ReadFrom } from "../../ports.js";

export type { HistoryGap } from "../../ports.js";

export class HistoryGoneError extends Error {
  override readonly name = "HistoryGoneError";
  constructor(
    readonly gaps: readonly HistoryGap[],
    what: string,
  ) {
    super(
      `${what} needs records the broker no longer has: ${gaps
        .map((g) => `${g.topic} partition ${g.partition} starts at offset ${g.earliest}, needed from ${g.needed}`)
        .join("; ")}`,
    );
  }
}

/**
 * Compares each partition's log start offset with what reading it from `from` needs. From the
 * earliest: everything ever written, so a log start above 0 means records are gone. From a time:
 * the first record at or after it; when the broker answers with the log start itself (or the
 * partition is empty after a start above 0), the records between that time and the log start may
 * have expired, and this says so rather than guess.
 */
export async function historyGaps(admin: Admin, topics: readonly string[], from: ReadFrom): Promise<HistoryGap[]> {
  const gaps: HistoryGap[] = [];
  const neededFrom =
    "timestamp" in from ? `the first record at or after ${new Date(from.timestamp).toISOString()}` : "0";
  for (const topic of topics) {
    const offsets = await admin.fetchTopicOffsets(topic);
    const byTime =
      "timestamp" in from
        ? new Map((await admin.fetchTopicOffsetsByTimestamp(topic, from.timestamp)).map((p) => [p.partition, p.offset]))
        : undefined;
    for (const { partition, low, high } of offsets) {
      if (BigInt(low) === 0n) continue;
      if (!byTime) {
        gaps.push({ topic, partition, earliest: low, needed: neededFrom });
        continue;
      }
      const first = byTime.get(partition) ?? "-1";
      if (first === low || (first === "-1" && low === high)) {
        gaps.push({ topic, partition, earliest: low, needed: neededFrom });
      }
    }
  }
  return gaps;
}
