import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { StatementName, StatementResult } from "../../cypher/statement.js";
import { DEFER_REASONS, type Fate, fateReason, REJECT_REASONS } from "../../model/fate.js";
import { FINDING_KINDS } from "../../model/findings.js";
import { ageSeconds } from "../../pipeline/unapplied-age.js";
import type { ConsumerMetrics, DecoderMetrics, FindingMetrics, Metrics, PauseReason } from "../../ports.js";
import { STREAMS, type Stream } from "../../topics.js";

export const METRIC_PREFIX = "agp_";
const PAUSE_REASONS: readonly PauseReason[] = ["failure", "catch-up-hold", "retry-not-due"];

/** Everything the service exports, on one registry; the core sees only the Metrics interface. */
export interface PrometheusMetrics extends Metrics, ConsumerMetrics, FindingMetrics, DecoderMetrics {
  readonly registry: Registry;
  /**
   * When (epoch ms, Neo4j's clock) the oldest escalation or registry change of a database still waiting
   * for the event-time judge was marked, as the judge saw it at its last round; undefined: none waits,
   * or this instance does not judge.
   */
  setOldestUnjudged(database: string, markedAt: number | undefined): void;
  recordConsumed(topic: string, partition: number, count: number): void;
  recordRebalance(): void;
  /** The lag monitor asked the broker for the group's lag (the catch-up hold's checks and the gauges' refresh). */
  recordLagPoll(): void;
  setLag(topic: string, partition: number, lag: number): void;
  dropLag(topic: string, partition: number): void;
  /**
   * The retry partition's head record that is not yet due was first seen at `firstSeenMs`; its age is
   * computed at each scrape. `undefined` when nothing waits there (or the partition is not ours).
   */
  setOldestDeferred(topic: string, partition: number, firstSeenMs: number | undefined): void;
  /** The partition is paused for `reason` (failure, catch-up-hold, retry-not-due); `undefined`: resumed. */
  setPaused(topic: string, partition: number, reason: PauseReason | undefined): void;
  /** Infrastructure failures in a row on the partition; 0 after a batch succeeds. */
  setConsecutiveFailures(topic: string, partition: number, count: number): void;
  setDrift(tenant: string, kind: string, count: number): void;
  /** The last readiness check's answer (see /readyz). */
  setReady(ready: boolean): void;
  recordDeadLetterPublished(topic: string): void;
  /** The records this process has taken to each fate since it started, summed over streams and reasons. */
  recordsByFate(): Promise<Record<string, number>>;
}

export type { PauseReason } from "../../ports.js";

/** Histogram buckets for freshness: from a sub-second live path up to a day-old backlog. */
const FRESHNESS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600, 10800, 86400];

/**
 * Node's default process metrics keep their usual names (`process_resident_memory_bytes`,
 * `nodejs_eventloop_lag_p99_seconds`, …) so that stock Node.js dashboards work; the service's own
 * metrics carry the `agp_` prefix.
 */
/** The first statement of each stream's write transaction: what a retry's `pattern` label names. */
const STREAM_WRITE_PATTERNS: readonly StatementName[] = [
  "3.1",
  "3.1-tombstone",
  "reachability",
  "3.3",
  "outcome",
  "3.4",
];

export function createPrometheusMetrics(
  build: {
    version: string;
    nodeVersion?: string;
    retryMaxAgeMs?: number;
    /** Topics whose counters start at 0 (consumed: source and retry topics). */
    topics?: { consumed: readonly string[]; deadLetter: readonly string[] };
    /** Served tenants, whose findings counters start at 0. */
    tenants?: readonly string[];
  } = { version: "unknown" },
  now: () => number = Date.now,
): PrometheusMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const p = (name: string) => `${METRIC_PREFIX}${name}`;
  const consumed = new Counter({
    name: p("records_consumed_total"),
    help: "Records fetched from Kafka, by topic.",
    labelNames: ["topic"],
    registers: [registry],
  });
  const records = new Counter({
    name: p("records_total"),
    help: "Records by stream and fate (applied, unchanged, stale, deferred, dead-lettered) and reason.",
    labelNames: ["stream", "result", "reason"],
    registers: [registry],
  });
  const writes = new Counter({
    name: p("writes_total"),
    help: "Records per spec write pattern (3.1, 3.2, 3.3, 3.4, outcome, escalated-to) by result.",
    labelNames: ["pattern", "result"],
    registers: [registry],
  });
  const neo4jUpdates = new Counter({
    name: p("neo4j_updates_total"),
    help: "Neo4j result-summary counters per statement: nodes and relationships created and deleted, properties set.",
    labelNames: ["pattern", "update"],
    registers: [registry],
  });
  const statementSeconds = new Histogram({
    name: p("neo4j_statement_seconds"),
    help: "Neo4j's own time per statement (until its first row, plus until its last), by spec write pattern.",
    labelNames: ["pattern"],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const absorbed = new Counter({
    name: p("redeliveries_absorbed_total"),
    help: "Escalation observations already counted: the :OBSERVED marker made their redelivery a no-op.",
    registers: [registry],
  });
  const batchSize = new Histogram({
    name: p("batch_size_records"),
    help: "Records per applied batch.",
    labelNames: ["stream"],
    buckets: [1, 10, 50, 100, 250, 500, 1000, 2500, 5000],
    registers: [registry],
  });
  const batchDuration = new Histogram({
    name: p("batch_duration_seconds"),
    help: "Time to decode, apply and acknowledge one batch.",
    labelNames: ["stream"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const txRetries = new Counter({
    name: p("transaction_retries_total"),
    help: "Neo4j write transactions retried after a transient error, by the transaction's first statement and the error (DeadlockDetected, ServiceUnavailable, ...).",
    labelNames: ["pattern", "reason"],
    registers: [registry],
  });
  // What each instance costs besides its records (bench/README, the accounting of scale-out): fetches,
  // the lag monitor's admin requests, and the pauses of its partitions.
  const fetches = new Counter({
    name: p("fetches_total"),
    help: "Fetches the Kafka consumer ran (kafkajs FETCH events), whether or not they returned records.",
    registers: [registry],
  });
  const lagPolls = new Counter({
    name: p("lag_polls_total"),
    help: "Answers to the lag monitor's requests for the group's lag (catch-up hold checks and the lag gauges' refresh).",
    registers: [registry],
  });
  const pauses = new Counter({
    name: p("partition_pauses_total"),
    help: "Partitions paused, by reason: failure (infrastructure), catch-up-hold, retry-not-due.",
    labelNames: ["reason"],
    registers: [registry],
  });
  const rebalances = new Counter({
    name: p("rebalances_total"),
    help: "Consumer group joins (each rebalance ends in one).",
    registers: [registry],
  });
  const lag = new Gauge({
    name: p("consumer_lag"),
    help: "Partition end offset (last stable offset) minus the group's committed offset, per owned partition.",
    labelNames: ["topic", "partition"],
    registers: [registry],
  });
  const lastApplied = new Gauge({
    name: p("last_applied_timestamp_seconds"),
    help: "Kafka timestamp of the last record applied, per topic.",
    labelNames: ["topic"],
    registers: [registry],
  });
  /**
   * A per-partition age, now minus a time in ms, computed at each scrape so that it grows while
   * nothing changes: `null` reads 0, `undefined` drops the series.
   */
  const ageGauge = (name: string, help: string) => {
    const since = new Map<string, { topic: string; partition: string; at: number | null }>();
    new Gauge({
      name,
      help,
      labelNames: ["topic", "partition"],
      registers: [registry],
      collect() {
        this.reset();
        const nowMs = now();
        for (const { topic, partition, at } of since.values()) this.set({ topic, partition }, ageSeconds(at, nowMs));
      },
    });
    return (topic: string, partition: number, at: number | null | undefined) => {
      const key = `${topic}/${partition}`;
      if (at === undefined) since.delete(key);
      else since.set(key, { topic, partition: String(partition), at });
    };
  };
  const setOldestDeferred = ageGauge(
    p("oldest_deferred_age_seconds"),
    "Per retry partition, age (now minus first seen) of the first record waiting to fall due; absent when none waits.",
  );
  const setOldestUnapplied = ageGauge(
    p("oldest_unapplied_record_age_seconds"),
    "Per owned source partition, now minus the Kafka timestamp of the oldest record fetched and not yet applied; 0 when none waits. Records not yet fetched are not in it (see agp_consumer_lag).",
  );
  const paused = new Gauge({
    name: p("partition_paused"),
    help: "1 while the partition is paused, by reason: failure (infrastructure), catch-up-hold, retry-not-due.",
    labelNames: ["topic", "partition", "reason"],
    registers: [registry],
  });
  const pausedReason = new Map<string, PauseReason>();
  const consecutiveFailures = new Gauge({
    name: p("partition_consecutive_failures"),
    help: "Infrastructure failures in a row on the partition (0 once a batch succeeds).",
    labelNames: ["topic", "partition"],
    registers: [registry],
  });
  const freshness = new Histogram({
    name: p("freshness_seconds"),
    help: "Per stream, the graph's commit time minus the applied event's own time (occurred_at, created_at, observed_at).",
    labelNames: ["stream"],
    buckets: FRESHNESS_BUCKETS,
    registers: [registry],
  });
  const drift = new Gauge({
    name: p("reconcile_drift"),
    help: "Differences the last reconciliation found between the registry topic and the graph, by tenant and kind.",
    labelNames: ["tenant", "kind"],
    registers: [registry],
  });
  new Gauge({
    name: p("build_info"),
    help: "Always 1; the labels name the running version and Node.js version.",
    labelNames: ["version", "node_version"],
    registers: [registry],
  }).set({ version: build.version, node_version: build.nodeVersion ?? process.version }, 1);
  const ready = new Gauge({
    name: p("ready"),
    help: "1 when the last readiness check passed (group joined, Neo4j and the registry answering), else 0.",
    registers: [registry],
  });
  ready.set(0);
  if (build.retryMaxAgeMs !== undefined)
    new Gauge({
      name: p("retry_max_age_seconds"),
      help: "RETRY_MAX_AGE_MS in seconds: how long a deferred record may wait before it is dead-lettered.",
      registers: [registry],
    }).set(build.retryMaxAgeMs / 1000);
  const dlqPublished = new Counter({
    name: p("dead_letter_published_total"),
    help: "Records written to a dead-letter topic.",
    labelNames: ["topic"],
    registers: [registry],
  });
  const findings = new Counter({
    name: p("findings_total"),
    help: "Governance findings recorded in the graph for the first time (published to the findings topic after), by tenant and kind.",
    labelNames: ["tenant", "kind"],
    registers: [registry],
  });
  const unpublished = new Gauge({
    name: p("findings_unpublished"),
    help: "Governance findings recorded in the graph and not yet published to the findings topic, per tenant, as the publisher last counted them (after each attempt).",
    labelNames: ["tenant"],
    registers: [registry],
  });
  const oldestUnpublished = new Map<string, number>();
  new Gauge({
    name: p("findings_oldest_unpublished_seconds"),
    help: "Per tenant, now minus detected_at of the oldest governance finding in the graph not yet on the findings topic, as the publisher last counted (after each attempt, and each FINDINGS_SWEEP_INTERVAL_MS); 0 when none waits.",
    labelNames: ["tenant"],
    registers: [registry],
    collect() {
      this.reset();
      const nowMs = now();
      for (const tenant of build.tenants ?? []) this.set({ tenant }, 0);
      for (const [tenant, at] of oldestUnpublished) this.set({ tenant }, ageSeconds(at, nowMs));
    },
  });
  const oldestUnjudged = new Map<string, number | undefined>();
  new Gauge({
    name: p("findings_judge_wait_seconds"),
    help: "Per database, how long the oldest escalation or registry change not yet judged at event time has waited since it was applied, as the judging instance (the owner of registry partition 0) saw it at its last round (every FINDINGS_JUDGE_INTERVAL_MS); 0 when none waits and on the other instances.",
    labelNames: ["database"],
    registers: [registry],
    collect() {
      this.reset();
      const nowMs = now();
      for (const [database, at] of oldestUnjudged) this.set({ database }, at === undefined ? 0 : ageSeconds(at, nowMs));
    },
  });
  const lastCommit = new Gauge({
    name: p("last_commit_timestamp_seconds"),
    help: "Wall-clock time of the last offset commit per owned partition (the time it was assigned, before the first).",
    labelNames: ["topic", "partition"],
    registers: [registry],
  });
  const schemaIdMisses = new Counter({
    name: p("schema_id_misses_total"),
    help: "Records whose schema id the registry does not know (or does not serve as Avro); dead-lettered as unknown-schema-id or unsupported-schema.",
    registers: [registry],
  });
  const schemaIdLookupMisses = new Counter({
    name: p("schema_id_miss_lookups_total"),
    help: "Registry requests for a schema id it did not know: at most one per id per SCHEMA_MISS_TTL_MS, however many records name it.",
    registers: [registry],
  });
  // Every series an alert reads with increase() or rate() exists from the start at 0: a series born at
  // its first increment reads as no increase, and the first burst after a start would go unseen.
  for (const topic of build.topics?.deadLetter ?? []) dlqPublished.inc({ topic }, 0);
  for (const topic of build.topics?.consumed ?? []) consumed.inc({ topic }, 0);
  for (const tenant of build.tenants ?? []) for (const kind of FINDING_KINDS) findings.inc({ tenant, kind }, 0);
  for (const tenant of build.tenants ?? []) unpublished.set({ tenant }, 0);
  for (const reason of PAUSE_REASONS) pauses.inc({ reason }, 0);
  // Deadlocks are the retry a busy graph has; each stream's write starts at 0 for them (other
  // reasons appear with their first retry: which errors Neo4j and the network give is open-ended).
  for (const pattern of STREAM_WRITE_PATTERNS) txRetries.inc({ pattern, reason: "DeadlockDetected" }, 0);
  for (const stream of STREAMS) {
    for (const result of ["applied", "unchanged", "stale"]) records.inc({ stream, result, reason: "" }, 0);
    for (const reason of DEFER_REASONS) records.inc({ stream, result: "deferred", reason }, 0);
    for (const reason of REJECT_REASONS) records.inc({ stream, result: "dead-lettered", reason }, 0);
  }

  return {
    registry,
    recordFate(stream: Stream, patterns: readonly string[], fate: Fate, count = 1) {
      const reason = fateReason(fate);
      records.inc({ stream, result: fate.kind, reason }, count);
      for (const pattern of patterns) writes.inc({ pattern, result: fate.kind }, count);
      if (stream === "escalation-edge" && fate.kind === "unchanged") absorbed.inc(count);
    },
    recordStatement(result: StatementResult) {
      const c = result.counters;
      const updates: [string, number][] = [
        ["nodes_created", c.nodesCreated],
        ["nodes_deleted", c.nodesDeleted],
        ["relationships_created", c.relationshipsCreated],
        ["relationships_deleted", c.relationshipsDeleted],
        ["properties_set", c.propertiesSet],
      ];
      for (const [update, n] of updates) neo4jUpdates.inc({ pattern: result.name, update }, n);
      if (result.serverMs !== undefined) statementSeconds.observe({ pattern: result.name }, result.serverMs / 1000);
    },
    recordBatch(stream, size, seconds) {
      batchSize.observe({ stream }, size);
      batchDuration.observe({ stream }, seconds);
    },
    recordTransactionRetry: (pattern, reason) => txRetries.inc({ pattern, reason }),
    recordApplied(topic, timestampMs) {
      if (Number.isFinite(timestampMs)) lastApplied.set({ topic }, timestampMs / 1000);
    },
    recordFreshness(stream, seconds) {
      const child = freshness.labels({ stream });
      for (const value of seconds) child.observe(value);
    },
    recordFinding: (tenant, kind) => findings.inc({ tenant, kind }),
    setUnpublishedFindings(byTenant) {
      // A served tenant with nothing left reads 0, not its last count.
      for (const tenant of new Set([...(build.tenants ?? []), ...byTenant.keys()]))
        unpublished.set({ tenant }, byTenant.get(tenant) ?? 0);
    },
    setOldestUnjudged: (database, markedAt) => void oldestUnjudged.set(database, markedAt),
    recordsByFate: async () =>
      (await records.get()).values.reduce<Record<string, number>>((totals, { labels, value }) => {
        totals[String(labels.result)] = (totals[String(labels.result)] ?? 0) + value;
        return totals;
      }, {}),
    setOldestUnpublishedFinding(detectedAtByTenant) {
      oldestUnpublished.clear();
      for (const [tenant, at] of detectedAtByTenant) oldestUnpublished.set(tenant, at);
    },
    recordConsumed: (topic, _partition, count) => consumed.inc({ topic }, count),
    recordFetch: () => fetches.inc(),
    recordLagPoll: () => lagPolls.inc(),
    recordRebalance: () => rebalances.inc(),
    setLag: (topic, partition, value) => lag.set({ topic, partition: String(partition) }, value),
    dropLag: (topic, partition) => lag.remove({ topic, partition: String(partition) }),
    setOldestDeferred,
    setPaused(topic, partition, reason) {
      const key = `${topic}/${partition}`;
      const before = pausedReason.get(key);
      if (before === reason) return;
      if (before) paused.remove({ topic, partition: String(partition), reason: before });
      if (reason) {
        pauses.inc({ reason });
        pausedReason.set(key, reason);
        paused.set({ topic, partition: String(partition), reason }, 1);
      } else pausedReason.delete(key);
    },
    setConsecutiveFailures: (topic, partition, count) =>
      consecutiveFailures.set({ topic, partition: String(partition) }, count),
    setDrift: (tenant, kind, count) => drift.set({ tenant, kind }, count),
    setReady: (ok) => ready.set(ok ? 1 : 0),
    recordDeadLetterPublished: (topic) => dlqPublished.inc({ topic }),
    recordSchemaIdMiss: () => schemaIdMisses.inc(),
    recordSchemaIdLookupMiss: () => schemaIdLookupMisses.inc(),
    setOldestUnapplied,
    setLastCommit(topic, partition, atMs) {
      if (atMs === undefined) lastCommit.remove({ topic, partition: String(partition) });
      else lastCommit.set({ topic, partition: String(partition) }, atMs / 1000);
    },
  };
}
