import type { Statement, StatementResult } from "./cypher/statement.js";
import type { Fate, Rejection } from "./model/fate.js";
import type { FindingKind } from "./model/findings.js";
import type { Stream } from "./topics.js";

/** A Kafka record as the core sees it; kafkajs types stay in the Kafka adapter. */
export interface SourceRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly timestamp: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, Buffer | undefined>>;
}

/** Decodes a Confluent-framed Avro value through our reader schema for the stream. */
export interface Decoder {
  /** Throws a TransientError when the registry cannot be reached; a bad record is a Rejection. */
  decode(stream: Stream, value: Buffer): Promise<Record<string, unknown> | Rejection>;
}

/**
 * Statements derived from the results of those before them, run after them in the same transaction
 * (the findings outbox); their results follow the others'.
 */
export type FollowUp = (results: readonly StatementResult[]) => readonly Statement[];

/** Runs statements in one write transaction on a tenant's database, retrying transient failures. */
export interface GraphWriter {
  apply(database: string, statements: readonly Statement[], followUp?: FollowUp): Promise<StatementResult[]>;
  read(database: string, cypher: string, params?: Record<string, unknown>): Promise<Record<string, unknown>[]>;
  /**
   * Runs statements as `apply` does, then rolls the transaction back: whether Neo4j accepts them,
   * leaving the graph as it was. Rejections throw as from `apply`.
   */
  trial(database: string, statements: readonly Statement[]): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A record that is not applied now, on its way to its stream's retry topic or dead-letter topic. */
export type SinkItem =
  | {
      readonly kind: "retry";
      readonly record: SourceRecord;
      readonly stream: Stream;
      readonly attempt: number;
      readonly notBefore: number;
      readonly firstSeen: number;
      readonly reason: string;
      /** Set once the record's window has run out: see pipeline/retry.ts. */
      readonly upstreamMark?: UpstreamMark;
    }
  | {
      readonly kind: "dead-letter";
      readonly record: SourceRecord;
      readonly stream: Stream;
      readonly fate: Extract<Fate, { kind: "dead-lettered" }>;
    };

/**
 * Durably hands records to the retry and dead-letter topics. Resolves only once the broker has
 * acknowledged every item (acks from all in-sync replicas): the caller commits source offsets after it.
 */
export interface RecordSink {
  /** Resolves once every item is durable on its topic; says which deferred ones went elsewhere. */
  send(items: readonly SinkItem[]): Promise<SinkReport>;
}

export interface SinkReport {
  /**
   * Deferred records whose copy the retry topic would not take: dead-lettered as `record-too-large`
   * instead, with this message (the message the dead letter carries).
   */
  readonly tooLarge: ReadonlyMap<SourceRecord, string>;
}

/** Offsets per `topic/partition` of the topics a stream waits on (pipeline/retry.ts). */
export type UpstreamMark = Readonly<Record<string, number>>;

/** Where the group stands on the topics a stream's deferred records wait on. */
export interface UpstreamProgress {
  /** The end offsets of those topics now. */
  ends(stream: Stream): Promise<UpstreamMark>;
  /** The group's committed positions on them (the low watermark where it has committed nothing). */
  committed(stream: Stream): Promise<UpstreamMark>;
  /** The end offsets of their retry topics alone: what the upstream deferred. */
  retryEnds(stream: Stream): Promise<UpstreamMark>;
}

/** Reads topics outside the projector's consumer group; operations (reconcile, rebuild, dlq) use it. */
export interface TopicReader {
  /**
   * Every record of `topics` from their start to the end offsets seen when the read begins, in offset
   * order per partition, as the consumer sees records.
   */
  readToEnd(topics: readonly string[], onRecord: (record: SourceRecord) => void): Promise<void>;
}

/** Where a replay starts: each partition's earliest offset, or its first record at or after a time. */
export type ReadFrom = { readonly earliest: true } | { readonly timestamp: number };

/** A partition whose records a replay or rebuild needs are already gone (retention, DeleteRecords). */
export interface HistoryGap {
  readonly topic: string;
  readonly partition: number;
  /** The log start offset: the first record the broker still has. */
  readonly earliest: string;
  readonly needed: string;
}

/** The consumer group's offsets and the topics' history, for replay and rebuild. */
export interface GroupAdmin {
  /** Throws a GroupActiveError while the group has active members: stop every instance first. */
  assertNoActiveMembers(groupId: string): Promise<void>;
  historyGaps(topics: readonly string[], from: ReadFrom): Promise<HistoryGap[]>;
  /** Refuses (as assertNoActiveMembers) while the group has members; returns the offsets it set. */
  resetOffsets(
    groupId: string,
    topics: readonly string[],
    to: ReadFrom,
  ): Promise<{ topic: string; partition: number; offset: string }[]>;
}

/** Publishes records as they are (key, value, headers), each acknowledged by all in-sync replicas. */
export interface RecordPublisher {
  publish(
    topic: string,
    record: { key: Buffer | null; value: Buffer | null; headers: Readonly<Record<string, Buffer | undefined>> },
  ): Promise<void>;
}

export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Waits `ms`; injected wherever the core or an adapter waits between retries, so tests need not. */
export type Sleep = (ms: number) => Promise<void>;

export const systemSleep: Sleep = (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * `work`, or the error `late()` makes if it has not settled within `ms`. The abandoned work may
 * still settle later; nobody waits for it any more, and its failure is not reported as unhandled.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  work.catch(() => {});
  return Promise.race([work, limit]).finally(() => clearTimeout(timer));
}

/** The narrow metrics surface the core records through; prom-client lives in its adapter. */
export interface Metrics {
  /** `count` records of one batch met the same fate. */
  recordFate(stream: Stream, patterns: readonly string[], fate: Fate, count?: number): void;
  recordStatement(result: StatementResult): void;
  recordBatch(stream: Stream, size: number, seconds: number): void;
  /**
   * A write transaction failed transiently and is tried again: `pattern` names its first statement (the
   * kind of write), `reason` what failed (errors.ts `retryReason`: `DeadlockDetected`, `ServiceUnavailable`, …).
   */
  recordTransactionRetry(pattern: string, reason: string): void;
  recordApplied(topic: string, timestampMs: number): void;
  /** Freshness of applied records: the graph's commit time minus each event's own time, in seconds. */
  recordFreshness(stream: Stream, seconds: readonly number[]): void;
  /** A committed transaction recorded a governance finding for the first time. */
  recordFinding(tenant: string, kind: FindingKind): void;
}

/** What the Avro decoder reports. */
export interface DecoderMetrics {
  /** A record named a schema id the registry does not know (or does not serve as Avro). */
  recordSchemaIdMiss(): void;
  /** The registry was asked for such an id (at most once per id per SCHEMA_MISS_TTL_MS). */
  recordSchemaIdLookupMiss(): void;
}

/** What the findings publisher reports. */
export interface FindingMetrics {
  /** Findings in the graph not yet published, per tenant, as the publisher last counted them. */
  setUnpublishedFindings(byTenant: ReadonlyMap<string, number>): void;
  /**
   * When (`detected_at`, epoch ms, Neo4j's clock) the oldest unpublished finding of each tenant was
   * recorded, as the publisher last counted; a tenant left out has none waiting.
   */
  setOldestUnpublishedFinding(detectedAtByTenant: ReadonlyMap<string, number>): void;
}

/** Why a consumed partition is paused: see pipeline/partition-policy.ts. */
export type PauseReason = "failure" | "catch-up-hold" | "retry-not-due";

/** What the Kafka consumer records about the partitions it owns; the Prometheus adapter fits it. */
export interface ConsumerMetrics {
  recordConsumed(topic: string, partition: number, count: number): void;
  /** kafkajs ran one fetch (its FETCH event): fetches per record is what an idle or a split consumer costs. */
  recordFetch(): void;
  recordRebalance(): void;
  /**
   * The retry partition's head record that is not yet due was first seen at `firstSeenMs`.
   * `undefined` when nothing waits there (or the partition is not ours).
   */
  setOldestDeferred(topic: string, partition: number, firstSeenMs: number | undefined): void;
  /** The partition is paused for `reason`; `undefined`: resumed. */
  setPaused(topic: string, partition: number, reason: PauseReason | undefined): void;
  /** Infrastructure failures in a row on the partition; 0 after a batch succeeds. */
  setConsecutiveFailures(topic: string, partition: number, count: number): void;
  /** Wall-clock time of the partition's last commit (or of its assignment); `undefined`: no longer ours. */
  setLastCommit(topic: string, partition: number, atMs: number | undefined): void;
  /**
   * Kafka timestamp (ms) of the oldest record of the source partition fetched and not yet applied (see
   * pipeline/unapplied-age.ts); `null`: ours, nothing fetched waits; `undefined`: no longer ours.
   */
  setOldestUnapplied(topic: string, partition: number, oldestMs: number | null | undefined): void;
}

export const noopMetrics: Metrics = {
  recordFate() {},
  recordStatement() {},
  recordBatch() {},
  recordTransactionRetry() {},
  recordApplied() {},
  recordFreshness() {},
  recordFinding() {},
};

export interface Logger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}
