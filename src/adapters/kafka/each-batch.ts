import type { EachBatchPayload } from "kafkajs";
import { errorMessage } from "../../errors.js";
import { createCoalescer } from "../../pipeline/coalesce.js";
import {
  admitBatch,
  HOLD_PAUSE_MS,
  heldFrom,
  notDuePauseMs,
  onFailure,
  splitDue,
  subBatches,
  transactionCap,
} from "../../pipeline/partition-policy.js";
import { type PartitionPositions, positionAfter } from "../../pipeline/partition-positions.js";
import { oldestUnappliedFrom } from "../../pipeline/unapplied-age.js";
import type { PauseReason, SourceRecord } from "../../ports.js";
import { roleOfTopic, STREAMS, type Stream, type TopicNames, type TopicRole } from "../../topics.js";
import type { ConsumerDeps, ConsumerOptions } from "./consumer-contract.js";
import type { PartitionPauses } from "./partition-pauses.js";
import { toSourceRecord } from "./source-record.js";

/** A third of the session timeout, as kafkajs's own heartbeat interval is. */
const HEARTBEAT_WHILE_APPLYING_MS = 3_000;

export interface BatchApplier {
  /** kafkajs's eachBatch: hands a fetched partition batch to the partition's lane; never throws. */
  eachBatch(payload: EachBatchPayload): Promise<void>;
  /** Forgets a partition's run of failures (the partition was revoked). */
  forgetFailures(partitionKey: string): void;
  /** The group was joined again: each batch kept for the catch-up hold checks its partition is still ours. */
  rejoined(): void;
  /**
   * Stops taking batches and waits, up to `ms`, for the lanes at work to apply and commit theirs.
   * True when every lane finished; past the bound the rest are left (their records are redelivered).
   */
  drain(ms: number): Promise<boolean>;
}

/** What a lane needs of the consumer as it is now (kafkajs may have restarted it meanwhile). */
export interface LaneControl {
  /** Whether this instance owns the partition in the group's current generation. */
  owns(topic: string, partition: number): boolean;
  /** Fetches the partition again: through the running consumer, not the one that fetched the batch. */
  resume(topic: string, partition: number): void;
}

/**
 * Each fetched partition batch is applied in its partition's own lane, in sub-batches; an offset is
 * resolved and committed only after its sub-batch was applied or durably handed to the retry/dead-
 * letter topics. Nothing thrown escapes a lane. On an infrastructure failure the partition pauses with
 * backoff and, since its offset was not resolved, is fetched again from the same record.
 *
 * Why lanes: kafkajs fetches again only once every batch of the previous fetch has been handled, so a
 * batch waiting on Neo4j — a lock on a hot agent, a transaction retried — held back every other
 * partition of the broker, fresh records and all. Now eachBatch pauses the partition, starts its lane
 * and returns: the other partitions are fetched and applied meanwhile, and the partition is resumed
 * (fetched again from its next offset) when its lane is done. Neo4j's load stays bounded by the graph
 * writer's slots (NEO4J_MAX_CONCURRENT_WRITES). A lane whose partition was revoked meanwhile resolves
 * and commits nothing more: the new owner applies those records again, which the idempotent §3
 * statements make harmless, as after any redelivery.
 *
 * The records of a batch that the catch-up hold keeps waiting stay in their lane, the partition
 * paused, and go ahead from there as the hold admits them or lifts. Fetching them again at that
 * moment would leave Neo4j idle for a fetch and a decode at every change of stage of a backlog, and
 * at every step by which a held stream trails its upstream under load.
 */
export function createBatchApplier(
  names: TopicNames,
  options: ConsumerOptions,
  deps: ConsumerDeps,
  positions: PartitionPositions,
  pauses: PartitionPauses,
  partitions: LaneControl,
): BatchApplier {
  const { owns } = partitions;
  const failures = new Map<string, number>();
  const lanes = new Map<string, Promise<void>>();
  /** Set by drain(): batches fetched from then on are left for the next owner. */
  let draining = false;
  /** Set once drain() returned: a lane ending later must not touch the consumer, which has left. */
  let drained = false;
  /** The lanes waiting for the catch-up hold, each with what wakes it early. */
  const parked = new Map<string, () => void>();
  const isHeld = (stream: Stream) => options.isHeld?.(stream) ?? false;
  const serial = options.serialStreams ?? new Set<Stream>();
  // Per stream, its sub-batches that wait for a transaction are merged into the next one; a serial
  // stream has one transaction at a time, the others as many as writesPerStream.
  const applyMerged = Object.fromEntries(
    STREAMS.map((stream) => [
      stream,
      createCoalescer<SourceRecord>(
        async (records) => {
          // One transaction for several partitions of the stream: its progress is theirs. Each
          // partition's records come as one run, so a key is built per run rather than per record.
          const keys = new Set<string>();
          let previous: SourceRecord | undefined;
          for (const record of records) {
            if (previous?.partition !== record.partition || previous.topic !== record.topic)
              keys.add(`${record.topic}/${record.partition}`);
            previous = record;
          }
          await deps.handle(stream, records, () => {
            for (const key of keys) positions.touch(key);
          });
        },
        options.maxBatchRecords,
        serial.has(stream) ? 1 : (options.writesPerStream ?? 1),
      ),
    ]),
  ) as Record<Stream, (topic: string, records: readonly SourceRecord[], maxRecords: number) => Promise<void>>;

  const pauseFor = (
    payload: EachBatchPayload,
    ms: number,
    reason: PauseReason,
    heldStream?: Stream,
    heldFrom?: number,
  ) =>
    pauses.pauseUntil(payload.batch.topic, payload.batch.partition, payload.pause(), ms, reason, heldStream, heldFrom);
  /**
   * Waits, the partition paused, until the hold admits the batch's record `index` or lifts, or a hold
   * pause's time is up, or the lane is woken (a drain, a new generation of the group).
   */
  const waitForHold = (payload: EachBatchPayload, stream: Stream, index: number) =>
    new Promise<void>((resolve) => {
      const { topic, partition, messages } = payload.batch;
      const partitionKey = `${topic}/${partition}`;
      const wake = () => {
        parked.delete(partitionKey);
        resolve();
      };
      const timestamp = Number(messages[index]?.timestamp);
      const cancel = pauses.pauseUntil(topic, partition, wake, HOLD_PAUSE_MS, "catch-up-hold", stream, timestamp);
      parked.set(partitionKey, () => {
        cancel();
        wake();
      });
    });
  const wakeParked = () => {
    for (const wake of [...parked.values()]) wake();
  };
  /** Whether the lane can no longer go on with its batch: kafkajs restarted or sought, or the partition moved. */
  const laneLost = (payload: EachBatchPayload) =>
    !payload.isRunning() || payload.isStale() || !owns(payload.batch.topic, payload.batch.partition);

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const partitionKey = `${batch.topic}/${batch.partition}`;
    if (draining || lanes.has(partitionKey)) {
      // Left unresolved, so fetched again from the same record: by its lane's resume, or by the next owner.
      payload.pause();
      return;
    }
    const role = roleOfTopic(names, batch.topic);
    if (!role || admitBatch(role, batch.messages.length, isHeld) === "ignore") return;
    // A source partition's fetched records age until applied (those the hold keeps waiting too).
    const fetchedAt = deps.clock.now();
    const oldestFrom = role.role === "source" ? oldestUnappliedFrom(batch.messages, fetchedAt) : undefined;
    const unappliedFrom = (start: number) => {
      if (oldestFrom) deps.metrics.setOldestUnapplied(batch.topic, batch.partition, oldestFrom(start) ?? null);
    };
    unappliedFrom(0);
    payload.pause();
    const lane = runLane(payload, role, unappliedFrom)
      .catch((error: unknown) => {
        deps.logger.warn(
          { topic: batch.topic, partition: batch.partition, error: errorMessage(error) },
          "applying a fetched batch ended early; its records not yet committed are fetched again",
        );
        return "resume" as const;
      })
      .then((next) => {
        lanes.delete(partitionKey);
        if (next === "resume" && !drained) partitions.resume(batch.topic, batch.partition);
      });
    lanes.set(partitionKey, lane);
  }

  /**
   * The lane's work: the batch's records in order, each as soon as the catch-up hold admits it. Says
   * whether the partition is to be resumed now, or a timed pause (a failure's backoff, a retry not
   * yet due) or a stop has taken it over.
   */
  async function runLane(
    payload: EachBatchPayload,
    role: TopicRole,
    unappliedFrom: (start: number) => void,
  ): Promise<"resume" | "taken-over"> {
    const { batch } = payload;
    const count = batch.messages.length;
    const partitionKey = `${batch.topic}/${batch.partition}`;
    let timestamps: string[] | undefined;
    const admittedUpTo = (from: number) => {
      if (admitBatch(role, count, isHeld) !== "hold") return count;
      timestamps ??= batch.messages.map((message) => message.timestamp);
      return heldFrom(timestamps, options.admitsBefore?.(role.stream) ?? Number.NEGATIVE_INFINITY, from);
    };
    for (let from = 0; from < count; ) {
      const upTo = admittedUpTo(from);
      if (upTo === from) {
        if (draining) return "taken-over";
        await waitForHold(payload, role.stream, from);
        if (draining) return "taken-over";
        if (laneLost(payload)) return "resume";
        continue;
      }
      deps.metrics.recordConsumed(batch.topic, batch.partition, upTo - from);
      if (role.role === "source")
        positions.fetched(partitionKey, role.stream, Number(batch.highWatermark), Number(batch.messages[0]?.offset));
      const applied = await applyFetched(payload, role, unappliedFrom, from, upTo);
      if (applied !== "applied") return applied;
      from = upTo;
    }
    return "resume";
  }

  /**
   * The sub-batches of the batch's records `from` to `upTo` (exclusive), in order. Says whether they
   * were applied, or the partition is to be resumed now (the lane cannot go on), or a timed pause or
   * a stop has taken it over.
   */
  async function applyFetched(
    payload: EachBatchPayload,
    role: TopicRole,
    unappliedFrom: (start: number) => void,
    from: number,
    upTo: number,
  ): Promise<"applied" | "resume" | "taken-over"> {
    const { batch } = payload;
    const messages = batch.messages;
    const partitionKey = `${batch.topic}/${batch.partition}`;
    // How many records a transaction may take, by what waits on the partition past `lastOffset`.
    const capPast = (lastOffset: string | undefined) =>
      transactionCap(
        Number(batch.highWatermark) - Number(lastOffset ?? -1) - 1,
        options.maxBatchRecords,
        options.backlogBatchRecords ?? options.maxBatchRecords,
        serial.has(role.stream),
      );
    // Split as large as the partition's backlog allows past a caught-up transaction's worth of records.
    const splitCap = capPast(messages[Math.min(from + options.maxBatchRecords, upTo) - 1]?.offset);
    for (const sub of subBatches(upTo - from, splitCap)) {
      const start = from + sub.start;
      const end = from + sub.end;
      if (laneLost(payload)) return "resume";
      let chunk: readonly SourceRecord[] = messages
        .slice(start, end)
        .map((m) => toSourceRecord(batch.topic, batch.partition, m));
      let waitUntil: number | undefined;
      if (role.role === "retry") {
        const split = splitDue(chunk, deps.clock.now());
        chunk = split.due;
        waitUntil = split.waitUntil;
        deps.metrics.setOldestDeferred(batch.topic, batch.partition, split.oldestFirstSeen);
      }
      if (chunk.length > 0) {
        // A batch may take longer than the session timeout (a queue behind the serial stream, a batch
        // narrowed down around poison): keep the membership alive meanwhile, or the group rebalances
        // and the batch is fetched and applied a second time.
        const heartbeat = setInterval(() => void payload.heartbeat().catch(() => {}), HEARTBEAT_WHILE_APPLYING_MS);
        try {
          // Merged with other partitions' waiting chunks up to what this chunk's partition allows.
          await applyMerged[role.stream](batch.topic, chunk, capPast((chunk.at(-1) as SourceRecord).offset));
        } catch (error) {
          const attempt = (failures.get(partitionKey) ?? 0) + 1;
          failures.set(partitionKey, attempt);
          deps.metrics.setConsecutiveFailures(batch.topic, batch.partition, attempt);
          const decision = onFailure(error, attempt, options.pauseOnFailureMs);
          if (decision.kind === "stop") {
            deps.logger.error(
              { topic: batch.topic, partition: batch.partition, offset: chunk[0]?.offset, error: errorMessage(error) },
              "fatal error; stopping",
            );
            deps.onFatal(error);
            return "taken-over";
          }
          const pauseMs = decision.ms;
          deps.logger.warn(
            {
              topic: batch.topic,
              partition: batch.partition,
              offset: chunk[0]?.offset,
              attempt,
              pauseMs,
              reason: "failure",
              error: errorMessage(error),
            },
            "infrastructure failure; partition paused, will retry from the same record",
          );
          if (drained) return "taken-over";
          pauseFor(payload, pauseMs, "failure");
          return "taken-over";
        } finally {
          clearInterval(heartbeat);
        }
        failures.delete(partitionKey);
        deps.metrics.setConsecutiveFailures(batch.topic, batch.partition, 0);
        // Revoked while it was applied: the new owner's offsets are its own (it applies these again).
        if (drained || !owns(batch.topic, batch.partition)) return "resume";
        const lastOffset = (chunk.at(-1) as SourceRecord).offset;
        // Resolving the batch's last record resolves past the transaction markers and aborted records
        // that follow it too (kafkajs does, see positionAfter): the group's offset reaches the end.
        payload.resolveOffset(lastOffset);
        await payload.commitOffsetsIfNecessary().catch((error: unknown) =>
          // Kept resolved: the next commit (this lane's, or kafkajs's after any batch) carries it.
          deps.logger.warn(
            { topic: batch.topic, partition: batch.partition, offset: lastOffset, error: errorMessage(error) },
            "offset commit failed; retried with the next commit",
          ),
        );
        const committedAt = deps.clock.now();
        deps.metrics.setLastCommit(batch.topic, batch.partition, committedAt);
        positions.committed(
          partitionKey,
          positionAfter(lastOffset, batch.messages.at(-1)?.offset, batch.lastOffset()),
          committedAt,
        );
        unappliedFrom(end);
        await payload.heartbeat().catch(() => {});
        if (role.role === "source") options.onCommitted?.(role.stream);
      }
      if (waitUntil !== undefined) {
        if (drained) return "taken-over";
        pauseFor(payload, notDuePauseMs(waitUntil, deps.clock.now()), "retry-not-due");
        return "taken-over";
      }
    }
    return "applied";
  }

  async function drain(ms: number): Promise<boolean> {
    draining = true;
    wakeParked();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    const all = Promise.all([...lanes.values()]).then(() => true as const);
    try {
      return await Promise.race([all, bound]);
    } finally {
      clearTimeout(timer);
      drained = true;
    }
  }

  return {
    eachBatch,
    forgetFailures: (partitionKey) => failures.delete(partitionKey),
    rejoined: wakeParked,
    drain,
  };
}
