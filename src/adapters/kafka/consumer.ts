import type { Consumer, EachBatchPayload, Kafka } from "kafkajs";
import { errorMessage, FatalError } from "../../errors.js";
import { createCoalescer } from "../../pipeline/coalesce.js";
import {
  admitBatch,
  HOLD_PAUSE_MS,
  heldOnJoin,
  notDuePauseMs,
  onFailure,
  progressSince,
  splitDue,
  subBatches,
} from "../../pipeline/partition-policy.js";
import type { Clock, ConsumerMetrics, Logger, PauseReason, SourceRecord } from "../../ports.js";
import { consumedTopics, roleOfTopic, type Stream, type TopicNames } from "../../topics.js";
import { toSourceRecord } from "./source-record.js";

export interface ConsumerOptions {
  readonly groupId: string;
  readonly partitionsConsumedConcurrently: number;
  readonly maxBatchRecords: number;
  /** kafkajs fetch limits: how much one fetch may bring back per partition and in all. */
  readonly fetchMaxBytesPerPartition?: number;
  readonly fetchMaxBytes?: number;
  /** First pause after an infrastructure failure; doubles up to 30 s while the failure lasts. */
  readonly pauseOnFailureMs?: number;
  /** Streams whose source topics wait while an upstream stream catches up (see pipeline/catch-up.ts). */
  readonly isHeld?: (stream: Stream) => boolean;
  /**
   * Streams applied one transaction at a time in this instance (see startup/consumer.ts); sub-batches of its
   * partitions that wait meanwhile go together into the next one (pipeline/coalesce.ts).
   */
  readonly serialStreams?: ReadonlySet<Stream>;
  /** Called after a sub-batch of a stream was applied and its offset committed. */
  readonly onCommitted?: (stream: Stream) => void;
}

export interface ProjectorConsumer {
  start(): Promise<void>;
  /** Stops fetching, lets the batch in flight finish and commit, and leaves the group. */
  stop(): Promise<void>;
  isJoined(): boolean;
  /** Since when it has made no progress: with records waiting a commit or deliberate pause, else a fetch. */
  lastProgressAt(): number;
  assignment(): ReadonlyMap<string, readonly number[]>;
  /** Resumes at once the partitions the catch-up hold paused for these streams, when it has lifted. */
  releaseHeld(streams: Iterable<Stream>): void;
  /**
   * Per stream, the backlog this instance has seen on the source partitions it owns: the high
   * watermark of its last fetch minus its own position (past transaction markers and aborted records).
   * A lower bound on the group's lag, except while a producer's transaction is open: the high
   * watermark counts its undecided records, the group's lag (from the last stable offset) does not,
   * and the catch-up hold, which asks the broker every second anyway, may then release a second late.
   */
  lagSeen(): Record<Stream, number>;
}

/**
 * Applies one sub-batch of a stream's records (pipeline/process-batch.ts in the service). Resolves once
 * every record is applied or durably handed on, so its offsets may be committed; throws on an
 * infrastructure failure.
 */
export type HandleRecords = (
  stream: Stream,
  records: readonly SourceRecord[],
  /** Called while the records are being applied, whenever the work moves on (liveness reads it). */
  progress: () => void,
) => Promise<unknown>;

export interface ConsumerDeps {
  readonly handle: HandleRecords;
  readonly metrics: ConsumerMetrics;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly onFatal: (error: unknown) => void;
}

/**
 * The partition's position once `lastOffset` is applied. After the batch's last record it is past the
 * whole batch, which ends with the transaction markers and aborted records that follow that record:
 * kafkajs filters those out of `batch.messages` and, when the last record is resolved, resolves up to
 * `batch.lastOffset()`, which counts them. Without them a caught-up transactional partition would show
 * a backlog of its markers forever.
 */
function positionAfter(batch: EachBatchPayload["batch"], lastOffset: string): number {
  return lastOffset === batch.messages.at(-1)?.offset ? Number(batch.lastOffset()) + 1 : Number(lastOffset) + 1;
}

/** A third of the session timeout, as kafkajs's own heartbeat interval is. */
const HEARTBEAT_WHILE_APPLYING_MS = 3_000;

/**
 * The consumer group over the three source topics and their retry topics. Each fetched partition
 * batch is applied in sub-batches; an offset is resolved and committed only after its sub-batch was
 * applied or durably handed to the retry/dead-letter topics. Nothing thrown escapes eachBatch: kafkajs
 * would restart the consumer and rebalance the group. On an infrastructure failure the partition
 * pauses with backoff and, since its offset was not resolved, is fetched again from the same record.
 */
export function createProjectorConsumer(
  kafka: Kafka,
  names: TopicNames,
  options: ConsumerOptions,
  deps: ConsumerDeps,
): ProjectorConsumer {
  const consumer: Consumer = kafka.consumer({
    groupId: options.groupId,
    sessionTimeout: 30_000,
    rebalanceTimeout: 60_000,
    heartbeatInterval: 3_000,
    allowAutoTopicCreation: false,
    // The broker's long poll when nothing is waiting. Short, because partitions resumed meanwhile
    // (a lifted catch-up hold, a retry that fell due) are only fetched once it returns.
    maxWaitTimeInMs: 100,
    ...(options.fetchMaxBytesPerPartition === undefined
      ? {}
      : { maxBytesPerPartition: options.fetchMaxBytesPerPartition }),
    ...(options.fetchMaxBytes === undefined ? {} : { maxBytes: options.fetchMaxBytes }),
    retry: { retries: 10 },
  });
  let joined = false;
  // Set by stop(): from then on nothing resumes or pauses a partition (kafkajs throws "Consumer group
  // was not initialized" at a consumer that has left), whatever timer or hold release fires late.
  let stopping = false;
  let fetchedAt = deps.clock.now();
  let currentAssignment = new Map<string, number[]>();
  const failures = new Map<string, number>();
  /** Source partitions this instance owns: high watermark at the last fetch, and the next offset to commit. */
  const positions = new Map<string, { stream: Stream; highWatermark: number; next: number; progressAt: number }>();
  const timers = new Set<NodeJS.Timeout>();
  /** A partition's batch moved on without a commit yet (a narrowing step): it is not wedged. */
  const touch = (partitionKey: string) => {
    const position = positions.get(partitionKey);
    if (position) position.progressAt = deps.clock.now();
  };
  const touchStream = (stream: Stream) => {
    for (const [key, position] of positions) if (position.stream === stream) touch(key);
  };

  const isHeld = (stream: Stream) => options.isHeld?.(stream) ?? false;
  const serial = options.serialStreams ?? new Set<Stream>();
  // One transaction at a time per serial stream; partitions' batches that wait are merged into it.
  const serialApply = new Map(
    [...serial].map((stream) => [
      stream,
      createCoalescer<SourceRecord>(async (records) => {
        // One transaction for several partitions of the stream: its progress is theirs.
        await deps.handle(stream, records, () => touchStream(stream));
      }, options.maxBatchRecords),
    ]),
  );
  const heldPauses = new Map<NodeJS.Timeout, { stream: Stream; resume: () => void }>();

  /**
   * Pauses one partition for `ms` and says so: the paused-partition metric, and a log line with the
   * reason (a failure's own warning is logged where it happens; a retry that is not due yet is routine).
   */
  const pauseUntil = (
    topic: string,
    partition: number,
    resume: () => void,
    ms: number,
    reason: PauseReason,
    heldStream?: Stream,
  ) => {
    // A deliberate pause is progress: the partition is looked after, not wedged.
    touch(`${topic}/${partition}`);
    const resumeAndReport = () => {
      deps.metrics.setPaused(topic, partition, undefined);
      if (!stopping) resume();
    };
    const timer = setTimeout(() => {
      timers.delete(timer);
      heldPauses.delete(timer);
      resumeAndReport();
    }, ms);
    timers.add(timer);
    if (heldStream) heldPauses.set(timer, { stream: heldStream, resume: resumeAndReport });
    deps.metrics.setPaused(topic, partition, reason);
    if (reason === "catch-up-hold")
      deps.logger.info(
        { topic, partition, reason, pauseMs: ms, stream: heldStream },
        "partition paused: an upstream stream is catching up",
      );
    else if (reason === "retry-not-due")
      deps.logger.debug({ topic, partition, reason, pauseMs: ms }, "partition paused until its next retry is due");
  };
  const pauseFor = (payload: EachBatchPayload, ms: number, reason: PauseReason, heldStream?: Stream) =>
    pauseUntil(payload.batch.topic, payload.batch.partition, payload.pause(), ms, reason, heldStream);

  /** Drops the per-partition series of partitions this instance no longer owns. */
  const forgetRevoked = (before: ReadonlyMap<string, number[]>, after: ReadonlyMap<string, number[]>) => {
    for (const [topic, partitions] of before) {
      const kept = new Set(after.get(topic) ?? []);
      for (const partition of partitions) {
        if (kept.has(partition)) continue;
        deps.metrics.setPaused(topic, partition, undefined);
        deps.metrics.setConsecutiveFailures(topic, partition, 0);
        deps.metrics.setOldestDeferred(topic, partition, undefined);
        deps.metrics.setLastCommit(topic, partition, undefined);
        failures.delete(`${topic}/${partition}`);
      }
    }
  };

  /** Pauses, before the first fetch after a join, the partitions of streams the catch-up holds back. */
  const holdOnJoin = (assignment: Record<string, number[]>) => {
    if (stopping) return;
    for (const { topic, partitions, stream } of heldOnJoin(assignment, (topic) => roleOfTopic(names, topic), isHeld)) {
      consumer.pause([{ topic, partitions: [...partitions] }]);
      for (const partition of partitions) {
        pauseUntil(
          topic,
          partition,
          () => consumer.resume([{ topic, partitions: [partition] }]),
          HOLD_PAUSE_MS,
          "catch-up-hold",
          stream,
        );
      }
    }
  };

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const role = roleOfTopic(names, batch.topic);
    const partitionKey = `${batch.topic}/${batch.partition}`;
    const admission = admitBatch(role, batch.messages.length, isHeld);
    if (!role || admission === "ignore") return;
    if (admission === "hold") {
      pauseFor(payload, HOLD_PAUSE_MS, "catch-up-hold", role.stream);
      return;
    }
    deps.metrics.recordConsumed(batch.topic, batch.partition, batch.messages.length);
    if (role.role === "source") {
      const known = positions.get(partitionKey);
      positions.set(partitionKey, {
        stream: role.stream,
        highWatermark: Number(batch.highWatermark),
        // Before this instance's first commit, the batch's first record is a lower bound's safe start.
        next: known?.next ?? Number(batch.messages[0]?.offset),
        progressAt: known?.progressAt ?? deps.clock.now(),
      });
    }

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
            : deps.handle(role.stream, chunk, () => touch(partitionKey)));
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
        const position = positions.get(partitionKey);
        if (position) {
          position.next = positionAfter(batch, lastOffset);
          position.progressAt = committedAt;
        }
        await payload.heartbeat();
        if (role.role === "source") options.onCommitted?.(role.stream);
      }
      if (waitUntil !== undefined) {
        pauseFor(payload, notDuePauseMs(waitUntil, deps.clock.now()), "retry-not-due");
        return;
      }
    }
  }

  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    joined = true;
    deps.metrics.recordRebalance();
    const before = currentAssignment;
    currentAssignment = new Map(Object.entries(event.payload.memberAssignment));
    forgetRevoked(before, currentAssignment);
    // A partition newly ours counts from now: its first commit is due within the stall alert's window.
    for (const [topic, partitions] of currentAssignment) {
      const owned = new Set(before.get(topic) ?? []);
      for (const partition of partitions)
        if (!owned.has(partition)) deps.metrics.setLastCommit(topic, partition, deps.clock.now());
    }
    // Another instance may have moved a partition we owned before; start its view afresh.
    positions.clear();
    holdOnJoin(event.payload.memberAssignment);
    deps.logger.info(
      { assignment: event.payload.memberAssignment, generation: event.payload.groupId },
      "joined consumer group",
    );
  });
  consumer.on(consumer.events.REBALANCING, () => {
    joined = false;
  });
  consumer.on(consumer.events.STOP, () => {
    joined = false;
  });
  consumer.on(consumer.events.FETCH, () => {
    fetchedAt = deps.clock.now();
  });
  // A batch of nothing but transaction markers and aborted records never reaches eachBatch: kafkajs
  // resolves and commits past it itself, and reports it here, so the instance's own view moves too.
  consumer.on(
    consumer.events.END_BATCH_PROCESS,
    ({ payload: { topic, partition, batchSize, lastOffset, highWatermark } }) => {
      const role = roleOfTopic(names, topic);
      if (batchSize > 0 || role?.role !== "source") return;
      const key = `${topic}/${partition}`;
      const committedAt = deps.clock.now();
      deps.metrics.setLastCommit(topic, partition, committedAt);
      positions.set(key, {
        stream: role.stream,
        highWatermark: Number(highWatermark),
        next: Math.max(positions.get(key)?.next ?? 0, Number(lastOffset) + 1),
        progressAt: committedAt,
      });
    },
  );
  consumer.on(consumer.events.CRASH, (event) => {
    joined = false;
    const { error, restart } = event.payload;
    // kafkajs restarts the consumer after an error it retries: a warning; otherwise the service stops.
    if (restart) deps.logger.warn({ error: errorMessage(error), restart }, "consumer crashed; kafkajs restarts it");
    else {
      deps.logger.error({ error: errorMessage(error), restart }, "consumer crashed");
      deps.onFatal(error);
    }
  });

  return {
    async start() {
      // kafkajs's run() resolves even when joining the group failed (it reports a CRASH instead): a
      // join refused for good (no ACL on the group) must fail start-up, with Kafka's reason.
      let refused: unknown;
      const stopListening = consumer.on(consumer.events.CRASH, (event) => {
        if (!event.payload.restart) refused ??= event.payload.error;
      });
      try {
        await consumer.connect();
        await consumer.subscribe({ topics: consumedTopics(names), fromBeginning: true });
        await consumer.run({
          autoCommit: true,
          autoCommitThreshold: 1,
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
          eachBatch,
        });
      } finally {
        stopListening();
      }
      if (refused === undefined) return;
      // kafkajs reports a group authorization failure only as "Failed to find group coordinator".
      if ((refused as { name?: unknown }).name === "KafkaJSGroupCoordinatorNotFound")
        throw new FatalError(
          `${errorMessage(refused)} for group ${options.groupId}: the principal may lack the Read ACL on the group (see "agent-graph-projector acls")`,
          { cause: refused },
        );
      throw refused;
    },
    async stop() {
      stopping = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      heldPauses.clear();
      await consumer.disconnect();
      joined = false;
    },
    isJoined: () => joined,
    lastProgressAt: () => progressSince(fetchedAt, positions.values()),
    assignment: () => currentAssignment,
    lagSeen() {
      const lag: Record<Stream, number> = { "registry-mutation": 0, "outcome-created": 0, "escalation-edge": 0 };
      for (const { stream, highWatermark, next } of positions.values())
        lag[stream] += Math.max(0, highWatermark - next);
      return lag;
    },
    releaseHeld(streams) {
      if (stopping) return;
      const lifted = new Set(streams);
      for (const [timer, { stream, resume }] of heldPauses) {
        if (!lifted.has(stream)) continue;
        clearTimeout(timer);
        timers.delete(timer);
        heldPauses.delete(timer);
        resume();
      }
    },
  };
}
