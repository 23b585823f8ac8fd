import type { StatementResult } from "../cypher/statement.js";
import { blame, boundedText, classify, errorMessage, neo4jCode } from "../errors.js";
import { deadLettered, type Fate, fateReason, Rejection } from "../model/fate.js";
import type { ValidationRules } from "../model/validate.js";
import {
  type Clock,
  type Decoder,
  type GraphWriter,
  type Logger,
  type Metrics,
  type RecordSink,
  type SinkItem,
  type Sleep,
  type SourceRecord,
  systemSleep,
  type UpstreamMark,
  type UpstreamProgress,
} from "../ports.js";
import { recordedFindings } from "../projection/findings.js";
import type { Indexed } from "../projection/plan.js";
import type { Stream } from "../topics.js";
import {
  backoffMs,
  decideDeferral,
  nextDeferral,
  type RetryEnvelope,
  type RetryPolicy,
  retryEnvelope,
} from "./retry.js";
import { type EventOf, STREAM_RULES, type StreamRules, toEvent } from "./stream-rules.js";

export type { RetryPolicy } from "./retry.js";

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
  /**
   * The group's position upstream, which decides when a deferred record past its window may be
   * dead-lettered (retry.ts). Without it, a record is dead-lettered as soon as its window ends.
   */
  readonly upstream?: UpstreamProgress;
  /**
   * false (FINDINGS_ENABLED=false): no finding is judged or recorded — the plans' follow-ups, which
   * record them, are not run, and registry batches are not judged against the terminals.
   */
  readonly recordFindings?: boolean;
  /** Told when a committed batch recorded findings, so they are published (adapters/kafka/finding-publisher.ts). */
  readonly findings?: { recorded(): void };
  /** Waits between the attempts at a batch that failed with an unrecognised error; injectable for tests. */
  readonly sleep?: Sleep;
}

/**
 * How often a batch that fails with an error nobody recognises (errors.ts: `unknown`) is tried in all
 * before it is narrowed down like a rejected one, and the first wait between tries (doubled each time).
 */
export const UNKNOWN_ERROR_ATTEMPTS = 3;
const UNKNOWN_ERROR_WAIT_MS = 1_000;

export type BatchSummary = Readonly<Record<Fate["kind"], number>>;

/**
 * Applies one batch of one partition: decode and validate each record, project the valid ones per
 * tenant database into statements, run them in one transaction, and give every record its fate.
 * Deferred and dead-lettered records are handed to the sink before this resolves, so the caller may
 * commit the batch's offsets afterwards. Infrastructure failures (Neo4j, registry or broker down)
 * throw; record problems never do.
 */
export async function processBatch<S extends Stream>(
  stream: S,
  records: readonly SourceRecord[],
  deps: BatchDeps,
  progress: () => void = () => {},
): Promise<BatchSummary> {
  const started = deps.clock.now();
  const fates = new Map<number, Fate>();
  const byDatabase = new Map<string, Indexed<EventOf<S>>[]>();

  const decoded = await Promise.all(records.map((record) => toEvent(stream, record, deps)));
  const envelopes = records.map((record) => retryEnvelope(record.headers));
  // Read before any transaction of this batch runs: a record past its window is dead-lettered only if
  // the upstream had been applied up to its mark before the attempt that failed (retry.ts).
  const marked = envelopes.some((envelope) => envelope.mark !== undefined);
  const committedAtStart = marked && deps.upstream ? await deps.upstream.committed(stream) : undefined;
  const retryEndsAtStart = marked && deps.upstream ? await deps.upstream.retryEnds(stream) : undefined;
  decoded.forEach((result, i) => {
    if (result instanceof Rejection) {
      fates.set(i, deadLettered(result.reason, boundedText(result.message)));
      return;
    }
    const database = deps.databases.get(result.tenant_id) as string;
    const events = byDatabase.get(database) ?? [];
    events.push({ i, event: result, late: (envelopes[i] as RetryEnvelope).late });
    byDatabase.set(database, events);
  });

  for (const [database, events] of byDatabase) {
    // Several tenants in one database: every key carries the tenant (cypher/tenant.ts).
    const scoped = [...deps.databases.values()].filter((served) => served === database).length > 1;
    await applyIsolatingPoison(stream, { database, scoped }, events, deps, fates, progress);
  }
  const committedAt = deps.clock.now();

  const sinkItems: SinkItem[] = [];
  const finalFates: Fate[] = [];
  let endsNow: UpstreamMark | undefined;
  for (const [i, record] of records.entries()) {
    let fate = fates.get(i) ?? deadLettered("invalid-field", "no statement produced a result for this record");
    if (fate.kind === "deferred") {
      const envelope = envelopes[i] as RetryEnvelope;
      const { attempt, firstSeen, notBefore } = nextDeferral(envelope, started, deps.retry);
      const decision = decideDeferral({
        attempt,
        firstSeen,
        now: started,
        // Without the upstream's position there is nothing to wait for: the window alone decides.
        mark: deps.upstream ? envelope.mark : undefined,
        committedAtStart,
        retryEndsAtStart,
        policy: deps.retry,
      });
      if (decision.kind === "dead-letter" || (decision.kind === "final-check" && !deps.upstream)) {
        fate = deadLettered(
          "precondition-timeout",
          `${fate.reason} after ${attempt} attempt(s) over ${Math.round((started - firstSeen) / 1000)}s`,
        );
      } else {
        let upstreamMark = decision.kind === "retry" ? decision.mark : undefined;
        if (decision.kind === "final-check" && deps.upstream) {
          endsNow ??= await deps.upstream.ends(stream);
          upstreamMark = endsNow;
        }
        sinkItems.push({
          kind: "retry",
          record,
          stream,
          attempt,
          notBefore,
          firstSeen,
          reason: fate.reason,
          ...(upstreamMark ? { upstreamMark } : {}),
        });
      }
    }
    if (fate.kind === "dead-lettered") sinkItems.push({ kind: "dead-letter", record, stream, fate });
    finalFates.push(fate);
  }
  const handedOn = sinkItems.length > 0 ? await deps.sink.send(sinkItems) : undefined;

  // Counted once the batch's outcome is durable (a failed hand-off retries the batch, which would
  // count it again), and as it ended: a deferred record the retry topic would not take is dead-lettered.
  const fateCounts = new Map<string, { fate: Fate; count: number }>();
  const summary: Record<Fate["kind"], number> = { applied: 0, unchanged: 0, stale: 0, deferred: 0, "dead-lettered": 0 };
  for (const [i, record] of records.entries()) {
    let fate = finalFates[i] as Fate;
    const tooLarge = handedOn?.tooLarge.get(record);
    if (tooLarge !== undefined) fate = deadLettered("record-too-large", tooLarge);
    if (fate.kind === "dead-lettered")
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
    summary[fate.kind] += 1;
    const fateKey = `${fate.kind}:${fateReason(fate)}`;
    const counted = fateCounts.get(fateKey);
    if (counted) counted.count += 1;
    else fateCounts.set(fateKey, { fate, count: 1 });
  }
  for (const { fate, count } of fateCounts.values())
    deps.metrics.recordFate(stream, STREAM_RULES[stream].patterns, fate, count);

  const last = records.at(-1);
  if (last && summary.applied + summary.unchanged + summary.stale > 0)
    deps.metrics.recordApplied(last.topic, Number(last.timestamp));
  if (summary.applied > 0)
    deps.metrics.recordFreshness(stream, freshness(stream, records, decoded, fates, committedAt));
  deps.metrics.recordBatch(stream, records.length, (deps.clock.now() - started) / 1000);
  return summary;
}

/** A tenant database, and whether several tenants share it (then every key carries the tenant). */
interface WriteTarget {
  readonly database: string;
  readonly scoped: boolean;
}

/**
 * Applies a database's events in one transaction. When a failure may be the records' (errors.ts
 * `blame`: Neo4j refused the data, a transaction too heavy for its memory or time limit, or — after
 * UNKNOWN_ERROR_ATTEMPTS — an error nobody recognises), the events are split in halves, applied in
 * order, until each failing record stands alone; those are dead-lettered with Neo4j's code and every
 * other record is applied. Splitting is safe: every statement is an idempotent MERGE and the
 * projections give the same graph wherever batch boundaries fall. The infrastructure's failures
 * propagate: the partition pauses, or on a fatal one the service stops. `progress` hears of every
 * answer Neo4j gives meanwhile: narrowing a heavy batch down may take minutes, and a partition that
 * is being narrowed is not wedged (liveness reads it).
 */
async function applyIsolatingPoison<S extends Stream>(
  stream: S,
  target: WriteTarget,
  events: readonly Indexed<EventOf<S>>[],
  deps: BatchDeps,
  fates: Map<number, Fate>,
  progress: () => void,
): Promise<void> {
  const sleep = deps.sleep ?? systemSleep;
  for (let attempt = 1; ; attempt++) {
    try {
      await applyEvents(stream, target, events, deps, fates);
      return;
    } catch (error) {
      recordFaultOrThrow(error);
      progress();
      if (classify(error) === "unknown" && attempt < UNKNOWN_ERROR_ATTEMPTS) {
        deps.logger.warn(
          {
            stream,
            database: target.database,
            records: events.length,
            attempt,
            error: boundedText(errorMessage(error)),
          },
          "unrecognised Neo4j error; trying the batch again before narrowing it down",
        );
        await sleep(backoffMs(attempt, UNKNOWN_ERROR_WAIT_MS));
        continue;
      }
      deps.logger.warn(
        {
          stream,
          database: target.database,
          records: events.length,
          code: neo4jCode(error),
          error: boundedText(errorMessage(error)),
        },
        "Neo4j refused the batch; narrowing it down to the records it refuses",
      );
      await narrow(stream, target, events, deps, fates, error, progress);
      return;
    }
  }
}

/** Throws on a failure the records are not to blame for, so the partition pauses or the service stops. */
function recordFaultOrThrow(error: unknown): void {
  const blamed = blame(error);
  if (blamed === "infrastructure" || blamed === "service") throw error;
}

async function narrow<S extends Stream>(
  stream: S,
  target: WriteTarget,
  events: readonly Indexed<EventOf<S>>[],
  deps: BatchDeps,
  fates: Map<number, Fate>,
  error: unknown,
  progress: () => void,
): Promise<void> {
  if (events.length === 1) {
    // An unrecognised or load-dependent error on a lone record may still be Neo4j's own trouble: blame
    // the record only while Neo4j answers (a failed ping throws, and the partition pauses).
    if (blame(error) === "records-while-up") await deps.graph.ping();
    const code = neo4jCode(error) ?? (error instanceof Error ? error.name : "error");
    fates.set(
      (events[0] as Indexed<EventOf<S>>).i,
      deadLettered("neo4j-rejected", boundedText(`${code}: ${errorMessage(error)}`)),
    );
    return;
  }
  const half = Math.ceil(events.length / 2);
  for (const part of [events.slice(0, half), events.slice(half)]) {
    try {
      await applyEvents(stream, target, part, deps, fates);
      progress();
    } catch (partError) {
      recordFaultOrThrow(partError);
      progress();
      await narrow(stream, target, part, deps, fates, partError, progress);
    }
  }
}

async function applyEvents<S extends Stream>(
  stream: S,
  target: WriteTarget,
  events: readonly Indexed<EventOf<S>>[],
  deps: BatchDeps,
  fates: Map<number, Fate>,
): Promise<void> {
  const rules: StreamRules<EventOf<S>> = STREAM_RULES[stream];
  const recordFindings = deps.recordFindings !== false;
  const plan = rules.project(events, target.scoped);
  if (plan.statements.length === 0) return;
  const followUp = recordFindings ? plan.followUp : undefined;
  const results: StatementResult[] = await deps.graph.apply(target.database, plan.statements, followUp);
  for (const result of results) deps.metrics.recordStatement(result);
  const findings = recordedFindings(results);
  for (const { tenant, kind } of findings) deps.metrics.recordFinding(tenant, kind);
  if (findings.length > 0) deps.findings?.recorded();
  for (const [i, fate] of plan.fates(results)) fates.set(i, fate);
}

/**
 * Seconds from each applied record's own time (its event's `occurred_at`, `created_at` or
 * `observed_at`; the Kafka timestamp for a tombstone) to `committedAt`. A retried record keeps its
 * event's time, so the wait in the retry topic counts.
 */
function freshness<S extends Stream>(
  stream: S,
  records: readonly SourceRecord[],
  decoded: readonly (EventOf<S> | Rejection)[],
  fates: ReadonlyMap<number, Fate>,
  committedAt: number,
): number[] {
  const rules: StreamRules<EventOf<S>> = STREAM_RULES[stream];
  const seconds: number[] = [];
  decoded.forEach((event, i) => {
    if (event instanceof Rejection || fates.get(i)?.kind !== "applied") return;
    const own = rules.eventTime(event, records[i] as SourceRecord);
    if (Number.isFinite(own)) seconds.push(Math.max(0, committedAt - own) / 1000);
  });
  return seconds;
}
