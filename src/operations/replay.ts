import { HistoryGoneError } from "../adapters/kafka/history.js";
import type { GroupAdmin, ReadFrom } from "../ports.js";

/**
 * Resets the group's offsets on `topics` so the projector reads them again from `to`. Refuses while
 * the group has active members, and, unless `allowGaps`, when records the replay would need have
 * expired: a replay meant to re-read a topic's history must not silently start past what is gone.
 */
export async function replayTopics(
  admin: GroupAdmin,
  groupId: string,
  topics: readonly string[],
  to: ReadFrom,
  allowGaps: boolean,
): Promise<{ topic: string; partition: number; offset: string }[]> {
  const gaps = allowGaps ? [] : await admin.historyGaps(topics, to);
  if (gaps.length > 0) throw new HistoryGoneError(gaps, "replay (pass --allow-gaps to read what is left)");
  return admin.resetOffsets(groupId, topics, to);
}
