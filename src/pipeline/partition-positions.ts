import type { Clock } from "../ports.js";
import type { Stream } from "../topics.js";
import { type PartitionProgress, progressSince } from "./partition-policy.js";

/**
 * The consumer's own view of the source partitions it owns, free of Kafka: per partition the high
 * watermark of its last fetch, the next offset to commit, and when it last made progress. Liveness
 * (lastProgressAt) and the catch-up hold's local lower bound on lag (lagSeen) read it.
 */
export interface PartitionPositions {
  /** A batch of a source partition was fetched; `firstOffset` is its first record's offset. */
  fetched(key: string, stream: Stream, highWatermark: number, firstOffset: number): void;
  /** Records up to `next` were committed at `at`; ignored for a partition no longer in view. */
  committed(key: string, next: number, at: number): void;
  /**
   * kafkajs skipped a batch of nothing but transaction markers and aborted records, ending at
   * `lastOffset`, and committed past it at `at`.
   */
  skipped(key: string, stream: Stream, highWatermark: number, lastOffset: number, at: number): void;
  /** A partition's batch moved on without a commit yet (a narrowing step, a deliberate pause): not wedged. */
  touch(key: string): void;
  /** As touch, for every partition of the stream (one transaction over several of them). */
  touchStream(stream: Stream): void;
  /** Forgets every partition: after a rebalance another instance may have moved them meanwhile. */
  clear(): void;
  /** Since when no progress was made, given the last fetch (see progressSince). */
  lastProgressAt(lastFetchAt: number): number;
  /** Per stream, the high watermark of the last fetch minus the next offset to commit, summed. */
  lagSeen(): Record<Stream, number>;
}

interface Position extends PartitionProgress {
  readonly stream: Stream;
  highWatermark: number;
  next: number;
  progressAt: number;
}

export function createPartitionPositions(clock: Clock): PartitionPositions {
  const positions = new Map<string, Position>();
  const touch = (key: string) => {
    const position = positions.get(key);
    if (position) position.progressAt = clock.now();
  };
  return {
    fetched(key, stream, highWatermark, firstOffset) {
      const known = positions.get(key);
      positions.set(key, {
        stream,
        highWatermark,
        // Before this instance's first commit, the batch's first record is a lower bound's safe start.
        next: known?.next ?? firstOffset,
        progressAt: known?.progressAt ?? clock.now(),
      });
    },
    committed(key, next, at) {
      const position = positions.get(key);
      if (!position) return;
      position.next = next;
      position.progressAt = at;
    },
    skipped(key, stream, highWatermark, lastOffset, at) {
      positions.set(key, {
        stream,
        highWatermark,
        next: Math.max(positions.get(key)?.next ?? 0, lastOffset + 1),
        progressAt: at,
      });
    },
    touch,
    touchStream(stream) {
      for (const [key, position] of positions) if (position.stream === stream) touch(key);
    },
    clear: () => positions.clear(),
    lastProgressAt: (lastFetchAt) => progressSince(lastFetchAt, positions.values()),
    lagSeen() {
      const lag: Record<Stream, number> = { "registry-mutation": 0, "outcome-created": 0, "escalation-edge": 0 };
      for (const { stream, highWatermark, next } of positions.values())
        lag[stream] += Math.max(0, highWatermark - next);
      return lag;
    },
  };
}

/**
 * The partition's position once `lastOffset` is applied. After the batch's last record it is past the
 * whole batch, which ends with the transaction markers and aborted records that follow that record:
 * kafkajs filters those out of the batch's records and, when the last record is resolved, resolves up
 * to the batch's last offset (`batchLastOffset`), which counts them. Without them a caught-up
 * transactional partition would show a backlog of its markers forever.
 */
export function positionAfter(
  lastOffset: string,
  lastRecordOffset: string | undefined,
  batchLastOffset: string,
): number {
  return lastOffset === lastRecordOffset ? Number(batchLastOffset) + 1 : Number(lastOffset) + 1;
}
