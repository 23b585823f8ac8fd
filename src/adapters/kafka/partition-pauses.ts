import type { Consumer } from "kafkajs";
import type { ConsumerMetrics, Logger, PauseReason } from "../../ports.js";
import type { Stream } from "../../topics.js";

/** The timed partition pauses of the consumer: failures, retries not yet due, the catch-up hold. */
export interface PartitionPauses {
  /**
   * Pauses one partition for `ms` and says so: the paused-partition metric, and a log line with the
   * reason (a failure's own warning is logged where it happens; a retry that is not due yet is routine).
   * `resume` is called when the time is up, or, for a hold on `heldStream`, when the hold lifts or
   * admits records written before a time past `heldFrom`, the timestamp of the first record it holds.
   * Returns a cancel: the pause ends without `resume` (its owner has stopped waiting for it).
   */
  pauseUntil(
    topic: string,
    partition: number,
    resume: () => void,
    ms: number,
    reason: PauseReason,
    heldStream?: Stream,
    heldFrom?: number,
  ): () => void;
  /**
   * Resumes at once the partitions held for these streams: all of them, or, given `before`, those
   * whose first held record was written before it (or is not known).
   */
  releaseHeld(streams: Iterable<Stream>, before?: number): void;
  /** From now on nothing resumes or pauses a partition; pending pauses are dropped. */
  stop(): void;
}

export interface PartitionPausesDeps {
  readonly consumer: Consumer;
  readonly metrics: ConsumerMetrics;
  readonly logger: Logger;
  /** A deliberate pause is progress: the partition is looked after, not wedged. */
  readonly onPaused: (partitionKey: string) => void;
}

export function createPartitionPauses(deps: PartitionPausesDeps): PartitionPauses {
  // Set by stop(): from then on nothing resumes or pauses a partition (kafkajs throws "Consumer group
  // was not initialized" at a consumer that has left), whatever timer or hold release fires late.
  let stopping = false;
  const timers = new Set<NodeJS.Timeout>();
  const heldPauses = new Map<NodeJS.Timeout, { stream: Stream; from: number; resume: () => void }>();
  /** The partitions whose hold pause was logged, by the stream held: until that hold lifts. */
  const heldLogged = new Map<string, Stream>();

  const pauseUntil: PartitionPauses["pauseUntil"] = (topic, partition, resume, ms, reason, heldStream, heldFrom) => {
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
    if (heldStream)
      heldPauses.set(timer, {
        stream: heldStream,
        from: heldFrom ?? Number.NEGATIVE_INFINITY,
        resume: resumeAndReport,
      });
    deps.metrics.setPaused(topic, partition, reason);
    // Said once per partition and hold: while a hold admits records as it goes, its partitions pause often.
    if (reason === "catch-up-hold" && heldStream && heldLogged.get(`${topic}/${partition}`) !== heldStream) {
      heldLogged.set(`${topic}/${partition}`, heldStream);
      deps.logger.info(
        { topic, partition, reason, pauseMs: ms, stream: heldStream },
        "partition paused: an upstream stream is catching up",
      );
    } else if (reason === "retry-not-due")
      deps.logger.debug({ topic, partition, reason, pauseMs: ms }, "partition paused until its next retry is due");
    return () => {
      if (!timers.delete(timer)) return;
      clearTimeout(timer);
      heldPauses.delete(timer);
      deps.metrics.setPaused(topic, partition, undefined);
    };
  };

  return {
    pauseUntil,
    releaseHeld(streams, before = Number.POSITIVE_INFINITY) {
      if (stopping) return;
      const lifted = new Set(streams);
      if (before === Number.POSITIVE_INFINITY)
        for (const [key, stream] of heldLogged) if (lifted.has(stream)) heldLogged.delete(key);
      for (const [timer, { stream, from, resume }] of heldPauses) {
        if (!lifted.has(stream) || !(Number.isNaN(from) || from < before)) continue;
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
