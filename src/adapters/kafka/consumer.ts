import type { Consumer, Kafka } from "kafkajs";
import { errorMessage, FatalError } from "../../errors.js";
import { heldOnJoin, onConsumerCrash } from "../../pipeline/partition-policy.js";
import { createPartitionPositions } from "../../pipeline/partition-positions.js";
import { withTimeout } from "../../ports.js";
import { consumedTopics, roleOfTopic, type Stream, type TopicNames } from "../../topics.js";
import type { ConsumerDeps, ConsumerOptions } from "./consumer-contract.js";
import { createBatchApplier } from "./each-batch.js";
import { createPartitionPauses } from "./partition-pauses.js";

export type { ConsumerDeps, ConsumerOptions, HandleRecords } from "./consumer-contract.js";

export interface ProjectorConsumer {
  start(): Promise<void>;
  /** Stops taking batches, lets those being applied finish and commit (bounded), and leaves the group. */
  stop(): Promise<void>;
  isJoined(): boolean;
  /** Since when it has made no progress: with records waiting a commit or deliberate pause, else a fetch. */
  lastProgressAt(): number;
  assignment(): ReadonlyMap<string, readonly number[]>;
  /**
   * Resumes at once the partitions the catch-up hold paused for these streams: when it has lifted, or,
   * given `before`, those whose first held record was written before it (it admits them now).
   */
  releaseHeld(streams: Iterable<Stream>, before?: number): void;
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
 * The consumer group over the three source topics and their retry topics. Fetched batches are applied
 * by each-batch.ts, partitions paused by partition-pauses.ts, and the instance's own view of its
 * source partitions kept by pipeline/partition-positions.ts.
 */
/**
 * How long a stop waits for the batches being applied to finish and commit, then to leave the group
 * cleanly: together below SHUTDOWN_TIMEOUT_MS's default of 25 s.
 */
const DRAIN_BOUND_MS = 8_000;
/** KAFKA_SESSION_TIMEOUT_MS's default. */
const DEFAULT_SESSION_TIMEOUT_MS = 10_000;
const LEAVE_BOUND_MS = 12_000;

export function createProjectorConsumer(
  kafka: Kafka,
  names: TopicNames,
  options: ConsumerOptions,
  deps: ConsumerDeps,
): ProjectorConsumer {
  const consumer: Consumer = kafka.consumer({
    groupId: options.groupId,
    // After a broker outage the coordinator reloads the group with the members from before it; kafkajs
    // rejoins under a new member id, so the rebalance waits for the old ids to expire: this long after
    // the broker's return (30 s measured it). Heartbeats go every 3 s, also while a batch is applied
    // (each-batch.ts), so 10 s leaves two missed heartbeats of margin.
    sessionTimeout: options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS,
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
  /** Joined the group at least once, and crashes since the last join (pipeline/partition-policy.ts onConsumerCrash). */
  let joinedBefore = false;
  let crashes = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let started = false;
  let stopping = false;
  let fetchedAt = deps.clock.now();
  let currentAssignment = new Map<string, number[]>();
  /** Held partitions kept out of the first fetch after a join (partition-policy.ts heldOnJoin). */
  let heldForFirstFetch: { topic: string; partitions: number[] }[] = [];
  /** Source partitions this instance owns: high watermark at the last fetch, and the next offset to commit. */
  const positions = createPartitionPositions(deps.clock);
  const pauses = createPartitionPauses({
    consumer,
    metrics: deps.metrics,
    logger: deps.logger,
    onPaused: positions.touch,
  });
  const isHeld = (stream: Stream) => options.isHeld?.(stream) ?? false;
  const resumeIfRunning = (partitions: { topic: string; partitions: number[] }[]) => {
    try {
      consumer.resume(partitions);
    } catch {
      // Not running (stopped, or between kafkajs's restarts): a new run starts unpaused.
    }
  };
  const applier = createBatchApplier(names, options, deps, positions, pauses, {
    owns: (topic, partition) => currentAssignment.get(topic)?.includes(partition) ?? false,
    resume: (topic, partition) => resumeIfRunning([{ topic, partitions: [partition] }]),
  });

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
        deps.metrics.setOldestUnapplied(topic, partition, undefined);
        applier.forgetFailures(`${topic}/${partition}`);
      }
    }
  };

  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    joined = true;
    joinedBefore = true;
    crashes = 0;
    deps.metrics.recordRebalance();
    const before = currentAssignment;
    currentAssignment = new Map(Object.entries(event.payload.memberAssignment));
    forgetRevoked(before, currentAssignment);
    // A partition newly ours counts from now: its first commit is due within the stall alert's window.
    // Its oldest-unapplied age reads 0 until a batch of it is fetched: a series from the start.
    for (const [topic, partitions] of currentAssignment) {
      const owned = new Set(before.get(topic) ?? []);
      const source = roleOfTopic(names, topic)?.role === "source";
      for (const partition of partitions) {
        if (owned.has(partition)) continue;
        deps.metrics.setLastCommit(topic, partition, deps.clock.now());
        if (source) deps.metrics.setOldestUnapplied(topic, partition, null);
      }
    }
    // Another instance may have moved a partition we owned before; start its view afresh.
    positions.clear();
    // Batches kept for the catch-up hold look again at who owns their partition, and at the consumer.
    applier.rejoined();
    // What the held streams wait on is fetched first; their own first batches, which their lanes keep
    // until the hold admits them, come with the next fetch.
    heldForFirstFetch = heldOnJoin(event.payload.memberAssignment, (topic) => roleOfTopic(names, topic), isHeld);
    if (heldForFirstFetch.length > 0) consumer.pause(heldForFirstFetch);
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
    deps.metrics.recordFetch();
    if (heldForFirstFetch.length === 0) return;
    const held = heldForFirstFetch;
    heldForFirstFetch = [];
    resumeIfRunning(held);
  });
  // A batch of nothing but transaction markers and aborted records never reaches eachBatch: kafkajs
  // resolves and commits past it itself, and reports it here, so the instance's own view moves too.
  consumer.on(
    consumer.events.END_BATCH_PROCESS,
    ({ payload: { topic, partition, batchSize, lastOffset, highWatermark } }) => {
      const role = roleOfTopic(names, topic);
      if (batchSize > 0 || role?.role !== "source") return;
      const committedAt = deps.clock.now();
      deps.metrics.setLastCommit(topic, partition, committedAt);
      positions.skipped(`${topic}/${partition}`, role.stream, Number(highWatermark), Number(lastOffset), committedAt);
    },
  );
  const runOptions: Parameters<Consumer["run"]>[0] = {
    autoCommit: true,
    autoCommitThreshold: 1,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
    eachBatch: applier.eachBatch,
  };
  /** After a crash kafkajs gave up on: its consumer is disconnected, connected and run again here. */
  const restartLater = (error: unknown, ms: number) => {
    deps.logger.warn(
      { error: errorMessage(error), crashes, restartInMs: ms },
      "consumer crashed on an error the broker's return cures; restarting it",
    );
    restartTimer = setTimeout(async () => {
      restartTimer = undefined;
      if (stopping) return;
      try {
        await consumer.connect();
        // Resolves also when joining fails: that is another CRASH, decided by the handler below.
        await consumer.run(runOptions);
      } catch (connectError) {
        crashed(connectError, false);
      }
    }, ms);
  };
  const crashed = (error: unknown, kafkajsRestarts: boolean) => {
    joined = false;
    crashes += 1;
    const decision = onConsumerCrash(error, { kafkajsRestarts, joinedBefore, crashes });
    if (decision.kind === "kafkajs-restarts")
      deps.logger.warn({ error: errorMessage(error), crashes }, "consumer crashed; kafkajs restarts it");
    // Before start() returned, start-up fails with the cause instead (see start()).
    else if (decision.kind === "restart" && started) {
      if (!stopping) restartLater(error, decision.ms);
    } else {
      deps.logger.error({ error: errorMessage(error), restart: false }, "consumer crashed");
      deps.onFatal(error);
    }
  };
  consumer.on(consumer.events.CRASH, (event) => crashed(event.payload.error, event.payload.restart));

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
        await consumer.run(runOptions);
      } finally {
        stopListening();
      }
      if (refused === undefined) {
        started = true;
        return;
      }
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
      clearTimeout(restartTimer);
      // The batches being applied finish and commit first; past the bound they are left, and what
      // they applied without committing is redelivered (harmless: the §3 statements are idempotent).
      if (!(await applier.drain(DRAIN_BOUND_MS)))
        deps.logger.warn(
          { boundMs: DRAIN_BOUND_MS },
          "batches still being applied at stop; their records are redelivered",
        );
      pauses.stop();
      // Leaving waits for a join in progress, which a member that died without leaving holds up to
      // its session timeout: past the bound the process goes without a clean leave (the broker drops
      // this member after its own session timeout), rather than outlive SHUTDOWN_TIMEOUT_MS.
      await withTimeout(
        consumer.disconnect(),
        LEAVE_BOUND_MS,
        () => new Error(`leaving the group took over ${LEAVE_BOUND_MS} ms`),
      ).catch((error) => deps.logger.warn({ error: errorMessage(error) }, "left without a clean leave"));
      joined = false;
    },
    isJoined: () => joined,
    lastProgressAt: () => positions.lastProgressAt(fetchedAt),
    assignment: () => currentAssignment,
    lagSeen: () => positions.lagSeen(),
    releaseHeld: (streams, before) => pauses.releaseHeld(streams, before),
  };
}
