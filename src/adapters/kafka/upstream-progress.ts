import type { Admin } from "kafkajs";
import { TransientError } from "../../errors.js";
import { UPSTREAM_OF } from "../../pipeline/retry.js";
import type { UpstreamMark, UpstreamProgress } from "../../ports.js";
import type { Stream, TopicNames } from "../../topics.js";
import { fetchPositions } from "./group-admin.js";

/** Committed positions older than this are read again; older is only more cautious, never wrong. */
const COMMITTED_FRESH_MS = 250;

/**
 * The group's position on the source and retry topics of the streams a stream waits on, from the
 * broker (pipeline/retry.ts uses it). A failed lookup is a TransientError: the partition
 * pauses rather than deciding a record's fate without knowing.
 */
export function createUpstreamProgress(admin: Admin, group: string, names: TopicNames): UpstreamProgress {
  const topicsOf = (stream: Stream) => UPSTREAM_OF[stream].flatMap((up) => [names.source[up], names.retry[up]]);
  const retryTopicsOf = (stream: Stream) => UPSTREAM_OF[stream].map((up) => names.retry[up]);
  let cached: { at: number; stream: Stream; mark: UpstreamMark } | undefined;

  async function positions(
    stream: Stream,
    pick: "committed" | "high",
    topics: readonly string[] = topicsOf(stream),
  ): Promise<UpstreamMark> {
    if (topics.length === 0) return {};
    try {
      const mark: Record<string, number> = {};
      for (const p of await fetchPositions(admin, group, topics)) {
        mark[`${p.topic}/${p.partition}`] =
          pick === "high" ? p.high : p.committed === "-1" ? p.low : Number(p.committed);
      }
      return mark;
    } catch (error) {
      throw new TransientError(`reading the group's upstream position failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  return {
    ends: (stream) => positions(stream, "high"),
    retryEnds: (stream) => positions(stream, "high", retryTopicsOf(stream)),
    async committed(stream) {
      if (cached && cached.stream === stream && Date.now() - cached.at < COMMITTED_FRESH_MS) return cached.mark;
      const at = Date.now();
      const mark = await positions(stream, "committed");
      cached = { at, stream, mark };
      return mark;
    },
  };
}
