// What the consumer group (consumer.ts) and its batch applier (each-batch.ts) are both given: kept apart
// from either so that neither imports the other's module for it.
import type { Clock, ConsumerMetrics, Logger, SourceRecord } from "../../ports.js";
import type { Stream } from "../../topics.js";

export interface ConsumerOptions {
  readonly groupId: string;
  readonly partitionsConsumedConcurrently: number;
  readonly maxBatchRecords: number;
  /**
   * Records a transaction may take while its partition is behind by at least maxBatchRecords more
   * (pipeline/partition-policy.ts `transactionCap`). Default maxBatchRecords: no distinction.
   */
  readonly backlogBatchRecords?: number;
  /** kafkajs fetch limits: how much one fetch may bring back per partition and in all. */
  readonly fetchMaxBytesPerPartition?: number;
  readonly fetchMaxBytes?: number;
  /** The group session timeout (consumer.ts): 10 s unless given. */
  readonly sessionTimeoutMs?: number;
  /** First pause after an infrastructure failure; doubles up to 30 s while the failure lasts. */
  readonly pauseOnFailureMs?: number;
  /** Streams whose source topics wait while an upstream stream catches up (see pipeline/catch-up.ts). */
  readonly isHeld?: (stream: Stream) => boolean;
  /** A held stream's records written before this time (ms) go ahead all the same; default: none. */
  readonly admitsBefore?: (stream: Stream) => number;
  /**
   * Streams applied one transaction at a time in this instance (see startup/consumer.ts); sub-batches of its
   * partitions that wait meanwhile go together into the next one (pipeline/coalesce.ts), up to
   * backlogBatchRecords however far behind each partition is (partition-policy.ts `transactionCap`).
   */
  readonly serialStreams?: ReadonlySet<Stream>;
  /**
   * How many transactions each other stream has in flight at once in this instance (the graph
   * writer's slots); its sub-batches that wait meanwhile go together into the next one. Default 1.
   */
  readonly writesPerStream?: number;
  /** Called after a sub-batch of a stream was applied and its offset committed. */
  readonly onCommitted?: (stream: Stream) => void;
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
