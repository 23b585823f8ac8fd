import { classify } from "../errors.js";
import type { SourceRecord } from "../ports.js";
import type { Stream, TopicRole } from "../topics.js";
import { backoffMs, firstSeenOf, isDue, retryEnvelope } from "./retry.js";

/**
 * The rules a consumed partition follows, free of Kafka: how a fetched batch is cut into
 * sub-batches, which retry records are due, how long a partition pauses and why. The Kafka adapter
 * (adapters/kafka/each-batch.ts) carries records and carries these decisions out.
 */

/** No partition pause lasts longer than this; a longer wait is re-checked after it. */
export const MAX_PAUSE_MS = 30_000;
/**
 * A held partition stays paused until the hold is lifted for its stream; this is only the fallback
 * re-check. Resuming earlier would refetch (and throw away) up to a fetch's worth of its records.
 */
export const HOLD_PAUSE_MS = 10_000;
/** The shortest pause for a retry record that is not yet due, so a partition does not spin on it. */
const MIN_NOT_DUE_PAUSE_MS = 50;
/** The first pause after an infrastructure failure, unless configured otherwise. */
export const DEFAULT_FAILURE_PAUSE_MS = 1_000;

/** What to do with a fetched batch before looking at its records. */
export type BatchAdmission = "ignore" | "hold" | "apply";

/**
 * Dead-letter topics and topics the consumer does not know are never applied, nor empty batches;
 * a source partition whose stream the catch-up holds back waits; everything else is applied.
 */
export function admitBatch(
  role: TopicRole | undefined,
  size: number,
  isHeld: (stream: Stream) => boolean,
): BatchAdmission {
  if (!role || role.role === "dead-letter" || size === 0) return "ignore";
  if (role.role === "source" && isHeld(role.stream)) return "hold";
  return "apply";
}

/**
 * Where a held batch's records stop going ahead: the index of the first record from `from` on that
 * was not written before `before` (ms; record timestamps as Kafka gives them), or the batch's length.
 * Those before it may be applied now, since what they depend on is in the graph (catch-up.ts
 * admitBefore); the records from it on wait, in order.
 */
export function heldFrom(timestamps: readonly string[], before: number, from = 0): number {
  for (let index = from; index < timestamps.length; index++) if (!(Number(timestamps[index]) < before)) return index;
  return timestamps.length;
}

/**
 * Sub-batch bounds of a fetched batch of `count` records: as few sub-batches as `maxRecords` allows,
 * of equal size. 5,000 records go as 3 × 1,667 rather than 2,000 + 2,000 + 1,000, which would spend a
 * whole transaction's overhead on a short tail.
 */
export function subBatches(count: number, maxRecords: number): { start: number; end: number }[] {
  if (count <= 0) return [];
  const size = Math.ceil(count / Math.ceil(count / Math.max(1, maxRecords)));
  const bounds: { start: number; end: number }[] = [];
  for (let start = 0; start < count; start += size) bounds.push({ start, end: Math.min(start + size, count) });
  return bounds;
}

/**
 * The records one transaction may take, by how far the sub-batch's partition is behind: a partition
 * with at least `maxRecords` more records waiting past it is catching up (a backlog, a replay, a
 * consumer that slipped behind a steady load), and its records go in transactions of up to
 * `backlogMaxRecords`; one that is caught up, in transactions of up to `maxRecords`. Large
 * transactions cost Neo4j less per record (full log on two cores, eight alternating turns: 2,000 →
 * 5,000 gave 0.97-1.17× the records/s, median 1.07) but hold their locks longer, which a caught-up consumer pays for in freshness
 * (bench/HISTORY.md, "Changes and what they gained").
 *
 * A `serial` stream (one transaction at a time, the registry) takes the backlog's size whatever its
 * partitions' positions: no transaction of its own contends for its locks, and what is queued for it
 * waits for the one transaction anyway. A backlog spread over its partitions, each fetched whole and
 * so caught up past its batch, went as several caught-up transactions one after the other.
 */
export function transactionCap(
  recordsBehind: number,
  maxRecords: number,
  backlogMaxRecords: number,
  serial = false,
): number {
  return serial || recordsBehind >= maxRecords ? Math.max(maxRecords, backlogMaxRecords) : maxRecords;
}

/** A retry topic's records split at the first one not yet due. */
export interface DueSplit {
  /** The records to apply now: those before the first one not yet due. */
  readonly due: readonly SourceRecord[];
  /** When the first record not yet due falls due; undefined when every record is due. */
  readonly waitUntil?: number;
  /** When that record was first deferred, for the oldest-deferred gauge. */
  readonly oldestFirstSeen?: number;
}

/**
 * Retry records are roughly in due order: apply those before the first one not yet due, and wait on
 * it and everything after it, so that a partition's records are never applied out of their order.
 */
export function splitDue(records: readonly SourceRecord[], now: number): DueSplit {
  for (const [i, record] of records.entries()) {
    const envelope = retryEnvelope(record.headers);
    if (!isDue(envelope, now))
      return {
        due: records.slice(0, i),
        waitUntil: envelope.notBefore as number,
        oldestFirstSeen: firstSeenOf(envelope, now),
      };
  }
  return { due: records };
}

/** How long to pause a retry partition whose head record falls due at `waitUntil`. */
export function notDuePauseMs(waitUntil: number, now: number): number {
  return Math.max(MIN_NOT_DUE_PAUSE_MS, Math.min(waitUntil - now, MAX_PAUSE_MS));
}

/** What a failed sub-batch makes of its partition. */
export type FailureDecision = { readonly kind: "stop" } | { readonly kind: "pause"; readonly ms: number };

/**
 * After the `failures`-th failure in a row of a partition's sub-batch: a fatal error (errors.ts)
 * stops the service; any other pauses the partition, from `firstPauseMs` doubling up to MAX_PAUSE_MS,
 * and since its offset was not resolved it is fetched again from the same record.
 */
export function onFailure(
  error: unknown,
  failures: number,
  firstPauseMs: number = DEFAULT_FAILURE_PAUSE_MS,
): FailureDecision {
  if (classify(error) === "fatal") return { kind: "stop" };
  return { kind: "pause", ms: backoffMs(failures, firstPauseMs, MAX_PAUSE_MS) };
}

/** What follows a crash of the Kafka consumer (kafkajs's CRASH event). */
export type CrashDecision =
  | { readonly kind: "kafkajs-restarts" }
  | { readonly kind: "restart"; readonly ms: number }
  | { readonly kind: "stop" };

export interface ConsumerCrash {
  /** kafkajs restarts its consumer itself (the event's `restart`). */
  readonly kafkajsRestarts: boolean;
  /** The consumer has been in the group since the service started: Kafka's settings were accepted once. */
  readonly joinedBefore: boolean;
  /** Crashes in a row, this one included, with no join between them. */
  readonly crashes: number;
}

/**
 * kafkajs restarts its consumer itself after an error it calls retriable. It gives up, and would stop
 * the service, on some that a broker's return cures (errors.ts `classify`: a lock or request timeout
 * in a long outage), and, once its group was joined, on "Failed to find group coordinator", which is
 * all it says when no broker answers (it swallows each broker's connection error); at start-up that
 * error is the group's missing ACL and stays fatal. Those restart the consumer with a backoff of 1 s
 * doubling up to MAX_PAUSE_MS, for as long as the outage lasts; what is fatal, or not recognised,
 * stops the service with its cause.
 */
export function onConsumerCrash(error: unknown, crash: ConsumerCrash): CrashDecision {
  if (crash.kafkajsRestarts) return { kind: "kafkajs-restarts" };
  const brokerAway = classify(error) === "transient" || (crash.joinedBefore && isCoordinatorNotFound(error));
  if (brokerAway) return { kind: "restart", ms: backoffMs(crash.crashes, DEFAULT_FAILURE_PAUSE_MS, MAX_PAUSE_MS) };
  return { kind: "stop" };
}

/**
 * "Failed to find group coordinator", as thrown or as kafkajs's retrier wraps it: a lookup that failed
 * inside the consumer's rejoin reaches the crash as a KafkaJSNonRetriableError whose cause it is (seen
 * when a broker stopped: the rejoin after NOT_COORDINATOR found no coordinator).
 */
function isCoordinatorNotFound(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== "object" || depth > 5) return false;
  const { name, cause } = error as { name?: unknown; cause?: unknown };
  if (name === "KafkaJSGroupCoordinatorNotFound") return true;
  return cause !== undefined && cause !== error && isCoordinatorNotFound(cause, depth + 1);
}

/**
 * The partitions of a fresh assignment to keep out of the first fetch: the source partitions of
 * streams the catch-up holds back. A fetch's size is bounded and the broker fills it in the order
 * the partitions are asked for, which is not the order of the streams; held partitions asked for
 * too would take the room of the stream they wait on.
 */
export function heldOnJoin(
  assignment: Readonly<Record<string, readonly number[]>>,
  roleOf: (topic: string) => TopicRole | undefined,
  isHeld: (stream: Stream) => boolean,
): { topic: string; partitions: number[] }[] {
  const held: { topic: string; partitions: number[] }[] = [];
  for (const [topic, partitions] of Object.entries(assignment)) {
    const role = roleOf(topic);
    if (role?.role === "source" && isHeld(role.stream)) held.push({ topic, partitions: [...partitions] });
  }
  return held;
}

/** One owned source partition as liveness sees it. */
export interface PartitionProgress {
  /** The high watermark at the partition's last fetch, and the next offset to commit. */
  readonly highWatermark: number;
  readonly next: number;
  /** The last commit, or deliberate pause (failure, catch-up hold), on the partition. */
  readonly progressAt: number;
}

/**
 * Since when the consumer has made no progress. Where records wait, only a commit or a deliberate pause
 * is progress: a partition whose batch never returns stays wedged however often its neighbours fetch or
 * commit. With nothing waiting, a fetch is all there is to do.
 */
export function progressSince(lastFetchAt: number, partitions: Iterable<PartitionProgress>): number {
  let since = lastFetchAt;
  for (const { highWatermark, next, progressAt } of partitions)
    if (highWatermark > next) since = Math.min(since, progressAt);
  return since;
}
