import type { Statement, StatementResult } from "../cypher/statement.js";
import type { ProjectorEvent } from "../model/events.js";
import { deadLettered, type Fate, fateReason, Rejection } from "../model/fate.js";
import {
  type ValidationRules,
  validateEscalationEdge,
  validateOutcomeCreated,
  validateRegistrySnapshot,
  validateRegistryTombstone,
} from "../model/validate.js";
import type {
  Clock,
  Decoder,
  GraphWriter,
  Logger,
  Metrics,
  RecordSink,
  SinkItem,
  SourceRecord,
  Stream,
} from "../ports.js";
import { projectEscalations } from "../projection/escalations.js";
import { projectOutcomes } from "../projection/outcomes.js";
import type { Indexed, Plan } from "../projection/plan.js";
import { projectRegistry } from "../projection/registry.js";
import { HEADER, headerNumber, headerString } from "./headers.js";

export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly maxAgeMs: number;
  readonly backoffMs: number;
  readonly backoffMaxMs: number;
}

export interface BatchDeps {
  readonly decoder: Decoder;
  readonly graph: GraphWriter;
  readonly sink: RecordSink;
  readonly metrics: Metrics;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly rules: ValidationRules;
  /** Served tenant id → Neo4j database. */
  readonly databases: ReadonlyMap<string, string>;
  readonly defaultTenant: string;
  readonly retry: RetryPolicy;
}

export type BatchSummary = Readonly<Record<Fate["kind"], number>>;

/** The spec patterns each stream's records go through, for the writes-by-pattern metric. */
export const STREAM_PATTERNS: Readonly<Record<Stream, readonly string[]>> = {
  "registry-mutation": ["3.1", "3.2"],
  "outcome-created": ["outcome", "3.3"],
  "escalation-edge": ["escalated-to", "3.4"],
};

/**
 * Applies one batch of one partition: decode and validate each record, project the valid ones per
 * tenant database into statements, run them in one transaction, and give every record its fate.
 * Deferred and dead-lettered records are handed to the sink before this resolves, so the caller may
 * commit the batch's offsets afterwards. Infrastructure failures (Neo4j, registry or broker down)
 * throw; record problems never do.
 */
export async function processBatch(
  stream: Stream,
  records: readonly SourceRecord[],
  deps: BatchDeps,
): Promise<BatchSummary> {
  const started = deps.clock.now();
  const fates = new Map<number, Fate>();
  const byDatabase = new Map<string, Indexed<ProjectorEvent>[]>();

  const decoded = await Promise.all(records.map((record) => toEvent(stream, record, deps)));
  decoded.forEach((result, i) => {
    if (result instanceof Rejection) {
      fates.set(i, deadLettered(result.reason, result.message));
      return;
    }
    const database = deps.databases.get(result.tenant_id) as string;
    const events = byDatabase.get(database) ?? [];
    events.push({ i, event: result });
    byDatabase.set(database, events);
  });

  for (const [database, events] of byDatabase) {
    const plan = project(stream, events);
    if (plan.statements.length === 0) continue;
    const results: StatementResult[] = await deps.graph.apply(database, plan.statements as Statement[]);
    for (const result of results) deps.metrics.recordStatement(result);
    for (const [i, fate] of plan.fates(results)) fates.set(i, fate);
  }
  const committedAt = deps.clock.now();

  // Counted per distinct fate, not per record: a batch has thousands of records and few outcomes.
  const fateCounts = new Map<string, { fate: Fate; count: number }>();
  const sinkItems: SinkItem[] = [];
  const summary: Record<Fate["kind"], number> = { applied: 0, unchanged: 0, stale: 0, deferred: 0, "dead-lettered": 0 };
  records.forEach((record, i) => {
    let fate = fates.get(i) ?? deadLettered("invalid-field", "no statement produced a result for this record");
    if (fate.kind === "deferred") {
      const attempt = (headerNumber(record.headers, HEADER.attempt) ?? 0) + 1;
      const firstSeen = headerNumber(record.headers, HEADER.firstSeen) ?? started;
      if (attempt >= deps.retry.maxAttempts || started - firstSeen >= deps.retry.maxAgeMs) {
        fate = deadLettered(
          "precondition-timeout",
          `${fate.reason} after ${attempt} attempt(s) over ${Math.round((started - firstSeen) / 1000)}s`,
        );
      } else {
        const delay = Math.min(deps.retry.backoffMs * 2 ** (attempt - 1), deps.retry.backoffMaxMs);
        sinkItems.push({
          kind: "retry",
          record,
          stream,
          attempt,
          notBefore: started + delay,
          firstSeen,
          reason: fate.reason,
        });
      }
    }
    if (fate.kind === "dead-lettered") {
      sinkItems.push({ kind: "dead-letter", record, stream, fate });
      deps.logger.warn(
        {
          topic: record.topic,
          partition: record.partition,
          offset: record.offset,
          reason: fate.reason,
          error: fate.message,
        },
        "record dead-lettered",
      );
    }
    summary[fate.kind] += 1;
    const fateKey = `${fate.kind}:${fateReason(fate)}`;
    const counted = fateCounts.get(fateKey);
    if (counted) counted.count += 1;
    else fateCounts.set(fateKey, { fate, count: 1 });
  });
  for (const { fate, count } of fateCounts.values())
    deps.metrics.recordFate(stream, STREAM_PATTERNS[stream], fate, count);
  if (sinkItems.length > 0) await deps.sink.send(sinkItems);

  const last = records.at(-1);
  if (last && summary.applied + summary.unchanged + summary.stale > 0)
    deps.metrics.recordApplied(last.topic, Number(last.timestamp));
  if (summary.applied > 0) deps.metrics.recordFreshness(stream, freshness(records, decoded, fates, committedAt));
  deps.metrics.recordBatch(stream, records.length, (deps.clock.now() - started) / 1000);
  return summary;
}

/**
 * Seconds from each applied record's own time (its event's `occurred_at`, `created_at` or
 * `observed_at`; the Kafka timestamp for a tombstone) to `committedAt`. A retried record keeps its
 * event's time, so the wait in the retry topic counts.
 */
function freshness(
  records: readonly SourceRecord[],
  decoded: readonly (ProjectorEvent | Rejection)[],
  fates: ReadonlyMap<number, Fate>,
  committedAt: number,
): number[] {
  const seconds: number[] = [];
  decoded.forEach((event, i) => {
    if (event instanceof Rejection || fates.get(i)?.kind !== "applied") return;
    const own =
      event.kind === "registry-snapshot"
        ? event.occurred_at
        : event.kind === "outcome-created"
          ? event.created_at
          : event.kind === "escalation-edge"
            ? event.observed_at
            : Number(records[i]?.timestamp);
    if (Number.isFinite(own)) seconds.push(Math.max(0, committedAt - own) / 1000);
  });
  return seconds;
}

async function toEvent(stream: Stream, record: SourceRecord, deps: BatchDeps): Promise<ProjectorEvent | Rejection> {
  const key = record.key === null ? null : record.key.toString("utf8");
  if (record.value === null) {
    if (stream !== "registry-mutation")
      return new Rejection("not-avro", "a null value (tombstone) is only meaningful on the registry topic");
    const tenant = headerString(record.headers, HEADER.tenantId) ?? deps.defaultTenant;
    return validateRegistryTombstone(key, tenant, deps.rules);
  }
  const value = await deps.decoder.decode(stream, record.value);
  if (value instanceof Rejection) return value;
  switch (stream) {
    case "registry-mutation":
      return validateRegistrySnapshot(value, deps.rules);
    case "outcome-created":
      return validateOutcomeCreated(value, deps.rules);
    case "escalation-edge":
      return validateEscalationEdge(value, deps.rules);
  }
}

function project(stream: Stream, events: readonly Indexed<ProjectorEvent>[]): Plan {
  switch (stream) {
    case "registry-mutation":
      return projectRegistry(
        events as Indexed<Extract<ProjectorEvent, { kind: "registry-snapshot" | "registry-tombstone" }>>[],
      );
    case "outcome-created":
      return projectOutcomes(events as Indexed<Extract<ProjectorEvent, { kind: "outcome-created" }>>[]);
    case "escalation-edge":
      return projectEscalations(events as Indexed<Extract<ProjectorEvent, { kind: "escalation-edge" }>>[]);
  }
}
