/** What one benchmark run measures, as written to the results file. */
import type { RunAccounting } from "./lib/accounting.js";
import type { GraphCounts, GraphErrors } from "./lib/correctness.js";
import type { CpuSeconds } from "./lib/cpu.js";
import type { FindingsFreshness } from "./lib/findings-freshness.js";
import type { TimelineSecond } from "./lib/freshness.js";

export interface RunResult {
  readonly instances: number;
  readonly seconds: number;
  readonly records: number;
  readonly recordsPerSecond: number;
  readonly perTopic: Record<string, { records: number; seconds: number; recordsPerSecond: number }>;
  readonly batchP50Ms: number | null;
  readonly batchP99Ms: number | null;
  readonly batchP50MsByStream: Record<string, number | null>;
  readonly batchP99MsByStream: Record<string, number | null>;
  readonly transactions: number;
  /** Per spec write pattern, its statements and Neo4j's own seconds on them (not in results before it existed). */
  readonly neo4jStatements?: Record<string, { statements: number; seconds: number }>;
  readonly transactionRetries: number;
  /** The retries by the transaction's first statement and the error, "3.3 DeadlockDetected" (not in results before it existed). */
  readonly transactionRetriesBy?: Record<string, number>;
  readonly deferred: number;
  readonly deadLettered: number;
  readonly rebalances: number;
  readonly peakRssMiB: number[];
  readonly fingerprint: Record<string, number>;
  readonly errors: string[];
  /** CPU seconds per process from the first join to zero lag (bench/lib/cpu.ts). */
  readonly cpuSeconds: CpuSeconds;
  /** CPU per record and what the instances did besides (bench/lib/accounting.ts; not in results before it existed). */
  readonly accounting?: RunAccounting;
}

export interface FreshnessQuantiles {
  readonly p50: number | null;
  readonly p99: number | null;
}

export type HistogramFreshness = FreshnessQuantiles & { observations: number; maxAtMost: number | null };
export type RecordFreshness = FreshnessQuantiles & { records: number; max: number | null };

export type CapacitySource = "check-before" | "single-instance-runs" | "given";

/** What one window of a scaled load cost: the longest any partition's commits paused, and its records' freshness. */
export interface ScaleWindow {
  readonly commitPauseSeconds: number;
  readonly records: RecordFreshness;
}

/** A steady load during which the group was scaled (`--freshness-scale`, bench/lib/scale-plan.ts). */
export interface ScaleResult {
  readonly plan: readonly { readonly atSeconds: number; readonly instances: number }[];
  /** Each step's window: the records published in this many seconds after it. */
  readonly windowSeconds: number;
  /** From the measured window's start to the first step. */
  readonly before: ScaleWindow;
  readonly steps: readonly (ScaleWindow & { readonly atSeconds: number; readonly instances: number })[];
  readonly rebalancesSeenByFirstInstance: number;
  /** Records on the load's three source topics at its end. */
  readonly recordsOnTopics: number;
  /** Records each instance took to a final fate (its "stopped" line; null when it logged none), the first instance first. */
  readonly processedPerInstance: readonly (number | null)[];
  readonly deferred: number;
  /** Processed less the records on the topics: redelivered after a revocation; null when a tally is missing. */
  readonly appliedTwice: number | null;
}

/** One steady-load run: freshness in seconds, from the service's histogram and from the records' own times. */
export interface FreshnessResult {
  readonly rate: number;
  readonly fractionOfCapacity: number | null;
  /** The capacity `rate` is a fraction of (records/s). */
  readonly capacity: number | null;
  /**
   * Where `capacity` came from: a backlog run right before this load (a capacity check), the median
   * of the run's single-instance runs, or --freshness-capacity. Absent in results from before the
   * checks: the single-instance runs.
   */
  readonly capacityFrom?: CapacitySource;
  /** Present when the group was scaled during the load; the load's other counters are then the first instance's. */
  readonly scale?: ScaleResult;
  /** The capacity check right after this load (records/s), when checks ran. */
  readonly capacityAfter?: number | null;
  /** The achieved rate over the capacity checked before and after the load. */
  readonly achievedOfCapacity?: { readonly before: number | null; readonly after: number | null };
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly published: number;
  readonly achievedRate: number;
  /** What published the load (lib/load-producer.ts); absent in results from before it could be Java: kafkajs. */
  readonly loadProducer?: "java" | "kafkajs";
  readonly drainSeconds: number;
  /** Records no commit had covered when the drain gave up (2 min), counted at that time (a lower bound): 0 unless overloaded. */
  readonly unsettledAtEnd: number;
  readonly offsetPollErrors: number;
  /** agp_freshness_seconds over the measured window (scrape after − scrape before); max is a bucket bound. */
  readonly histogram: Record<"outcome-created" | "escalation-edge", HistogramFreshness>;
  /** Committed offset seen (polled every 200 ms) − the time each record was stamped and published. */
  readonly records: Record<"all" | "outcome-created" | "escalation-edge", RecordFreshness>;
  /**
   * The largest agp_oldest_unapplied_record_age_seconds seen on the stream's partitions, scraped
   * every second from the measured window's start to the drain's end (not in results before it existed).
   */
  readonly oldestUnappliedMaxSeconds: Record<"outcome-created" | "escalation-edge", number | null>;
  /**
   * Second by second of the measured window, by the time records were published: how many, and the
   * slowest one's freshness (not in results before it existed).
   */
  readonly timeline?: Record<"outcome-created" | "escalation-edge", TimelineSecond[]>;
  /**
   * The share of new escalations drawn on a declared path (the rest between random outcomes, nearly
   * all governance findings); the log's is 1 − undeclaredRatio. Before it existed, every escalation
   * was drawn at random.
   */
  readonly escalationsOnDeclaredPaths?: number;
  readonly metricsScrapeErrors: number;
  readonly deferred: number;
  readonly transactionRetries: number;
  /** The retries by the transaction's first statement and the error, "3.3 DeadlockDetected" (not in results before it existed). */
  readonly transactionRetriesBy?: Record<string, number>;
  /**
   * Per spec write pattern, how many statements ran in the window and Neo4j's own seconds on them
   * (agp_neo4j_statement_seconds); and the batches applied (not in results before they existed).
   */
  readonly neo4jStatements?: Record<string, { statements: number; seconds: number }>;
  readonly transactions?: number;
  /**
   * Governance findings recorded in the window (agp_findings_total), and those still unpublished at
   * its end (agp_findings_unpublished): a load whose findings stopped being judged or published would
   * be lighter than the one a user runs (not in results before it existed).
   */
  readonly findingsRecorded?: number;
  readonly findingsUnpublishedAtEnd?: number;
  /**
   * The findings whose event time (an undeclared escalation's observed_at, a resolution's registry
   * occurred_at) fell in the measured window, read back from the load's own findings topic: seconds
   * to their first publication (Kafka timestamp) and to detected_at; how long the run waited after
   * the drain for the last of them, whether the topic then held all the projector recorded, the
   * allowed lateness the projector was given (not in results before it existed).
   */
  readonly findings?: FindingsFreshness & {
    readonly waitedSeconds: number;
    readonly recordedByProjector: number;
    readonly complete: boolean;
    readonly allowedLatenessMs: number;
    readonly undecoded: number;
  };
  readonly batchP50Ms: number | null;
  readonly batchP99Ms: number | null;
  readonly peakRssMiB: number;
  readonly cpuSeconds: CpuSeconds;
  readonly loadAverageAtEnd: number[];
  readonly errors: string[];
}

export interface DependencyOrderStage {
  readonly records: number;
  /** Seconds the bench took to publish the stage (the consumer reads meanwhile). */
  readonly publishSeconds: number;
  /** From the stage's first publish to zero lag on it. */
  readonly seconds: number;
}

/** One system's run of the like-for-like comparison: the log published in dependency order (bench/loads/dependency-order.ts). */
export interface DependencyOrderRun {
  readonly system: "projector" | "peer";
  readonly turn: number;
  readonly records: number;
  /** From the registry's first publish to zero lag after the escalations. */
  readonly seconds: number;
  readonly recordsPerSecond: number;
  readonly stages: Record<"registry-mutation" | "outcome-created" | "escalation-edge", DependencyOrderStage>;
  /** CPU seconds per process over the same window (`projector` or `connect` is the system's own). */
  readonly cpuSeconds: CpuSeconds;
  /** The system's own process, per record. */
  readonly cpuSecondsPerRecord: number | null;
  /** The system's own process and Neo4j's, per record. */
  readonly cpuSecondsPerRecordWithNeo4j: number | null;
  readonly peakRssMiB: number;
  /** The graph it left: nodes per label, relationships per type. */
  readonly graph: GraphCounts;
  /** That graph against the reference model of the log (bench/lib/correctness.ts). */
  readonly differences: GraphErrors;
  readonly errors: string[];
}
