import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { StatementResult } from "../../cypher/statement.js";
import { type Fate, fateReason } from "../../model/fate.js";
import type { Metrics, Stream } from "../../ports.js";

export const METRIC_PREFIX = "agp_";

/** Everything the service exports, on one registry; the core sees only the Metrics interface. */
export interface PrometheusMetrics extends Metrics {
  readonly registry: Registry;
  recordConsumed(topic: string, partition: number, count: number): void;
  recordRebalance(): void;
  setLag(topic: string, partition: number, lag: number): void;
  dropLag(topic: string, partition: number): void;
  setOldestDeferredAge(topic: string, seconds: number): void;
  setDrift(kind: string, count: number): void;
  recordDeadLetterPublished(topic: string): void;
}

export function createPrometheusMetrics(): PrometheusMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
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
    help: "Neo4j write transactions retried after a transient error.",
    registers: [registry],
  });
  const rebalances = new Counter({
    name: p("rebalances_total"),
    help: "Consumer group joins (each rebalance ends in one).",
    registers: [registry],
  });
  const lag = new Gauge({
    name: p("consumer_lag"),
    help: "Broker high watermark minus the group's committed offset, per owned partition.",
    labelNames: ["topic", "partition"],
    registers: [registry],
  });
  const lastApplied = new Gauge({
    name: p("last_applied_timestamp_seconds"),
    help: "Kafka timestamp of the last record applied, per topic.",
    labelNames: ["topic"],
    registers: [registry],
  });
  const oldestDeferred = new Gauge({
    name: p("oldest_deferred_age_seconds"),
    help: "Age of the oldest record waiting in a retry topic (0 when none waits).",
    labelNames: ["topic"],
    registers: [registry],
  });
  const drift = new Gauge({
    name: p("reconcile_drift"),
    help: "Differences the last reconciliation found between the registry topic and the graph, by kind.",
    labelNames: ["kind"],
    registers: [registry],
  });
  const dlqPublished = new Counter({
    name: p("dead_letter_published_total"),
    help: "Records written to a dead-letter topic.",
    labelNames: ["topic"],
    registers: [registry],
  });

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
    },
    recordBatch(stream, size, seconds) {
      batchSize.observe({ stream }, size);
      batchDuration.observe({ stream }, seconds);
    },
    recordTransactionRetry: () => txRetries.inc(),
    recordApplied(topic, timestampMs) {
      if (Number.isFinite(timestampMs)) lastApplied.set({ topic }, timestampMs / 1000);
    },
    recordConsumed: (topic, _partition, count) => consumed.inc({ topic }, count),
    recordRebalance: () => rebalances.inc(),
    setLag: (topic, partition, value) => lag.set({ topic, partition: String(partition) }, value),
    dropLag: (topic, partition) => lag.remove({ topic, partition: String(partition) }),
    setOldestDeferredAge: (topic, seconds) => oldestDeferred.set({ topic }, seconds),
    setDrift: (kind, count) => drift.set({ kind }, count),
    recordDeadLetterPublished: (topic) => dlqPublished.inc({ topic }),
  };
}
