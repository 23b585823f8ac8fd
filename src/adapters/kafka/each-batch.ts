import type { EachBatchPayload } from "kafkajs";
import { errorMessage } from "../../errors.js";
import { createCoalescer } from "../../pipeline/coalesce.js";
import {
  admitBatch,
  HOLD_PAUSE_MS,
  notDuePauseMs,
  onFailure,
  splitDue,
  subBatches,
} from "../../pipeline/partition-policy.js";
import { type PartitionPositions, positionAfter } from "../../pipeline/partition-positions.js";
import { oldestUnapplied } from "../../pipeline/unapplied-age.js";
import type { PauseReason, SourceRecord } from "../../ports.js";
import { roleOfTopic, type Stream, type TopicNames } from "../../topics.js";
import type { ConsumerDeps, ConsumerOptions } from "./consumer.js";
import type { PartitionPauses } from "./partition-pauses.js";
import { toSourceRecord } from "./source-record.js";

/** A third of the session timeout, as kafkajs's own heartbeat interval is. */
const HEARTBEAT_WHILE_APPLYING_MS = 3_000;

export interface BatchApplier {
  /** kafkajs's eachBatch: applies a fetched partition batch in sub-batches; never throws. */
  eachBatch(payload: EachBatchPayload): Promise<void>;
  /** Forgets a partition's run of failures (the partition was revoked). */
  forgetFailures(partitionKey: string): void;
}

/**
 * Each fetched partition batch is applied in sub-batches; an offset is resolved and committed only
 * after its sub-batch was applied or durably handed to the retry/dead-letter topics. Nothing thrown
 * escapes eachBatch: kafkajs would restart the consumer and rebalance the group. On an infrastructure
 * failure the partition pauses with backoff and, since its offset was not resolved, is fetched again
 * from the same record.
 */
export function createBatchApplier(
  names: TopicNames,
  options: ConsumerOptions,
  deps: ConsumerDeps,
  positions: PartitionPositions,
  pauses: PartitionPauses,
): BatchApplier {
  const failures = new Map<string, number>();
  const isHeld = (stream: Stream) => options.isHeld?.(stream) ?? false;
  const serial = options.serialStreams ?? new Set<Stream>();
  // One transaction at a time per serial stream; partitions' batches that wait are merged into it.
  const serialApply = new Map(
    [...serial].map((stream) => [
      stream,
      createCoalescer<SourceRecord>(async (records) => {
        // One transaction for several partitions of the stream: its progress is theirs.
        await deps.handle(stream, records, () => positions.touchStream(stream));
      }, options.maxBatchRecords),
    ]),
  );

  const pauseFor = (payload: EachBatchPayload, ms: number, reason: PauseReason, heldStream?: Stream) =>
    pauses.pauseUntil(payload.batch.topic, payload.batch.partition, payload.pause(), ms, reason, heldStream);

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const role = roleOfTopic(names, batch.topic);
    const partitionKey = `${batch.topic}/${batch.partition}`;
    const admission = admitBatch(role, batch.messages.length, isHeld);
    if (!role || admission === "ignore") return;
    // A source partition's fetched records age until applied (a held batch too: it is fetched again).
    const fetchedAt = deps.clock.now();
    const unappliedFrom = (start: number) => {
      if (role.role !== "source") return;
      const oldest = oldestUnapplied(batch.messages.slice(start), fetchedAt);
      deps.metrics.setOldestUnapplied(batch.topic, batch.partition, oldest ?? null);
    };
    unappliedFrom(0);
    if (admission === "hold") {
      pauseFor(payload, HOLD_PAUSE_MS, "catch-up-hold", role.stream);
      return;
    }
    deps.metrics.recordConsumed(batch.topic, batch.partition, batch.messages.length);
    if (role.role === "source")
      positions.fetched(partitionKey, role.stream, Number(batch.highWatermark), Number(batch.messages[0]?.offset));

    for (const { start, end } of subBatches(batch.messages.length, options.maxBatchRecords)) {
      if (!payload.isRunning() || payload.isStale()) return;
      let chunk: readonly SourceRecord[] = batch.messages
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
          const coalesced = serialApply.get(role.stream);
          await (coalesced
            ? coalesced(batch.topic, chunk)
            : deps.handle(role.stream, chunk, () => positions.touch(partitionKey)));
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
            return;
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
          pauseFor(payload, pauseMs, "failure");
          return;
        } finally {
          clearInterval(heartbeat);
        }
        failures.delete(partitionKey);
        deps.metrics.setConsecutiveFailures(batch.topic, batch.partition, 0);
        const lastOffset = (chunk.at(-1) as SourceRecord).offset;
        // Resolving the batch's last record resolves past the transaction markers and aborted records
        // that follow it too (kafkajs does, see positionAfter): the group's offset reaches the end.
        payload.resolveOffset(lastOffset);
        await payload.commitOffsetsIfNecessary();
        const committedAt = deps.clock.now();
        deps.metrics.setLastCommit(batch.topic, batch.partition, committedAt);
        positions.committed(
          partitionKey,
          positionAfter(lastOffset, batch.messages.at(-1)?.offset, batch.lastOffset()),
          committedAt,
        );
        unappliedFrom(end);
        await payload.heartbeat();
        if (role.role === "source") options.onCommitted?.(role.stream);
      }
      if (waitUntil !== undefined) {
        pauseFor(payload, notDuePauseMs(waitUntil, deps.clock.now()), "retry-not-due");
        return;
      }
    }
  }

  return { eachBatch, forgetFailures: (partitionKey) => failures.delete(partitionKey) };
}
