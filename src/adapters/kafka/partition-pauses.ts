import type { Consumer } from "kafkajs";
import { HOLD_PAUSE_MS, heldOnJoin } from "../../pipeline/partition-policy.js";
import type { ConsumerMetrics, Logger, PauseReason } from "../../ports.js";
import type { Stream, TopicRole } from "../../topics.js";

/** The timed partition pauses of the consumer: failures, retries not yet due, the catch-up hold. */
export interface PartitionPauses {
  /**
   * Pauses one partition for `ms` and says so: the paused-partition metric, and a log line with the
   * reason (a failure's own warning is logged where it happens; a retry that is not due yet is routine).
   * `resume` is called when the time is up, or, for a hold on `heldStream`, when the hold lifts.
   */
  pauseUntil(
    topic: string,
    partition: number,
    resume: () => void,
    ms: number,
    reason: PauseReason,
    heldStream?: Stream,
  ): void;
  /** Pauses, before the first fetch after a join, the partitions of streams the catch-up holds back. */
  holdOnJoin(assignment: Record<string, number[]>): void;
  /** Resumes at once the partitions held for these streams. */
  releaseHeld(streams: Iterable<Stream>): void;
  /** From now on nothing resumes or pauses a partition; pending pauses are dropped. */
  stop(): void;
}

export interface PartitionPausesDeps {
  readonly consumer: Consumer;
  readonly metrics: ConsumerMetrics;
  readonly logger: Logger;
  readonly roleOf: (topic: string) => TopicRole | undefined;
  readonly isHeld: (stream: Stream) => boolean;
  /** A deliberate pause is progress: the partition is looked after, not wedged. */
  readonly onPaused: (partitionKey: string) => void;
}

export function createPartitionPauses(deps: PartitionPausesDeps): PartitionPauses {
  // Set by stop(): from then on nothing resumes or pauses a partition (kafkajs throws "Consumer group
  // was not initialized" at a consumer that has left), whatever timer or hold release fires late.
  let stopping = false;
  const timers = new Set<NodeJS.Timeout>();
  const heldPauses = new Map<NodeJS.Timeout, { stream: Stream; resume: () => void }>();

  const pauseUntil: PartitionPauses["pauseUntil"] = (topic, partition, resume, ms, reason, heldStream) => {
    deps.onPaused(`${topic}/${partition}`);
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

  return {
    pauseUntil,
    holdOnJoin(assignment) {
      if (stopping) return;
      const { consumer } = deps;
      for (const { topic, partitions, stream } of heldOnJoin(assignment, deps.roleOf, deps.isHeld)) {
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
    stop() {
      stopping = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      heldPauses.clear();
    },
  };
}
