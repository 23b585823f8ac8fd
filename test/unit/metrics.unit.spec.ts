import { describe, expect, it } from "vitest";
import { createPrometheusMetrics } from "../../src/adapters/metrics/prometheus.js";

/** Reads one sample's value from the exposition text; undefined when the series is absent. */
async function sample(text: Promise<string>, series: string): Promise<number | undefined> {
  const line = (await text).split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("Prometheus metrics", () => {
  it("keeps Node's default process metrics under their usual names, and exports build_info", async () => {
    const metrics = createPrometheusMetrics({ version: "1.2.3", nodeVersion: "v20.0.0" });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);
    expect(text).not.toMatch(/^agp_process_/m);
    expect(text).toContain('agp_build_info{version="1.2.3",node_version="v20.0.0"} 1');
  });

  it("observes freshness per stream into a histogram", async () => {
    const metrics = createPrometheusMetrics();
    metrics.recordFreshness("outcome-created", [0.2, 3, 400]);
    const text = metrics.registry.metrics();
    expect(await sample(text, 'agp_freshness_seconds_count{stream="outcome-created"}')).toBe(3);
    expect(await sample(text, 'agp_freshness_seconds_bucket{le="0.25",stream="outcome-created"}')).toBe(1);
    expect(await sample(text, 'agp_freshness_seconds_bucket{le="5",stream="outcome-created"}')).toBe(2);
    expect(await sample(text, 'agp_freshness_seconds_sum{stream="outcome-created"}')).toBeCloseTo(403.2);
  });

  it("ages the oldest deferred record per partition at scrape time, and forgets a drained partition", async () => {
    let now = 100_000;
    const metrics = createPrometheusMetrics(undefined, () => now);
    metrics.setOldestDeferred("t.retry", 0, 40_000);
    metrics.setOldestDeferred("t.retry", 1, 90_000);
    const series = (p: number) => `agp_oldest_deferred_age_seconds{topic="t.retry",partition="${p}"}`;
    expect(await sample(metrics.registry.metrics(), series(0))).toBe(60);
    expect(await sample(metrics.registry.metrics(), series(1))).toBe(10);
    now = 130_000;
    // Partition 1 drains: partition 0's age is untouched by it, and still grows.
    metrics.setOldestDeferred("t.retry", 1, undefined);
    expect(await sample(metrics.registry.metrics(), series(0))).toBe(90);
    expect(await sample(metrics.registry.metrics(), series(1))).toBeUndefined();
  });

  it("reports a paused partition with one reason at a time, and consecutive failures", async () => {
    const metrics = createPrometheusMetrics();
    metrics.setPaused("t", 2, "catch-up-hold");
    metrics.setPaused("t", 2, "failure");
    metrics.setConsecutiveFailures("t", 2, 3);
    let text = metrics.registry.metrics();
    expect(await sample(text, 'agp_partition_paused{topic="t",partition="2",reason="failure"}')).toBe(1);
    expect(await sample(text, 'agp_partition_paused{topic="t",partition="2",reason="catch-up-hold"}')).toBeUndefined();
    expect(await sample(text, 'agp_partition_consecutive_failures{topic="t",partition="2"}')).toBe(3);
    metrics.setPaused("t", 2, undefined);
    metrics.setConsecutiveFailures("t", 2, 0);
    text = metrics.registry.metrics();
    expect(await sample(text, 'agp_partition_paused{topic="t",partition="2",reason="failure"}')).toBeUndefined();
    expect(await sample(text, 'agp_partition_consecutive_failures{topic="t",partition="2"}')).toBe(0);
  });

  it("counts pauses as they start (not again while one lasts), fetches and lag polls, from 0", async () => {
    const metrics = createPrometheusMetrics();
    let text = metrics.registry.metrics();
    expect(await sample(text, 'agp_partition_pauses_total{reason="catch-up-hold"}')).toBe(0);
    expect(await sample(text, "agp_fetches_total")).toBe(0);
    metrics.setPaused("t", 2, "catch-up-hold");
    metrics.setPaused("t", 2, "catch-up-hold");
    metrics.setPaused("t", 3, "catch-up-hold");
    metrics.setPaused("t", 2, "failure");
    metrics.setPaused("t", 2, undefined);
    metrics.setPaused("t", 2, "catch-up-hold");
    metrics.recordFetch();
    metrics.recordFetch();
    metrics.recordLagPoll();
    text = metrics.registry.metrics();
    expect(await sample(text, 'agp_partition_pauses_total{reason="catch-up-hold"}')).toBe(3);
    expect(await sample(text, 'agp_partition_pauses_total{reason="failure"}')).toBe(1);
    expect(await sample(text, 'agp_partition_pauses_total{reason="retry-not-due"}')).toBe(0);
    expect(await sample(text, "agp_fetches_total")).toBe(2);
    expect(await sample(text, "agp_lag_polls_total")).toBe(1);
  });

  it("keeps drift per tenant", async () => {
    const metrics = createPrometheusMetrics();
    metrics.setDrift("acme", "missing-grant", 2);
    metrics.setDrift("globex", "missing-grant", 0);
    const text = metrics.registry.metrics();
    expect(await sample(text, 'agp_reconcile_drift{tenant="acme",kind="missing-grant"}')).toBe(2);
    expect(await sample(text, 'agp_reconcile_drift{tenant="globex",kind="missing-grant"}')).toBe(0);
  });
  it("starts every counter series at 0, so that increase() sees the first burst after a start", async () => {
    const metrics = createPrometheusMetrics({
      version: "t",
      topics: { consumed: ["t.outcome-created"], deadLetter: ["t.outcome-created.dlq"] },
    });
    const text = metrics.registry.metrics();
    expect(await sample(text, 'agp_dead_letter_published_total{topic="t.outcome-created.dlq"}')).toBe(0);
    expect(await sample(text, 'agp_records_consumed_total{topic="t.outcome-created"}')).toBe(0);
    for (const reason of ["not-avro", "precondition-timeout"])
      expect(
        await sample(text, `agp_records_total{stream="escalation-edge",result="dead-lettered",reason="${reason}"}`),
      ).toBe(0);
    expect(
      await sample(text, 'agp_records_total{stream="outcome-created",result="deferred",reason="agent-missing"}'),
    ).toBe(0);
    expect(await sample(text, 'agp_records_total{stream="registry-mutation",result="applied",reason=""}')).toBe(0);
  });

  it("counts records with an unknown schema id and the registry requests they cost, from 0", async () => {
    const metrics = createPrometheusMetrics();
    expect(await sample(metrics.registry.metrics(), "agp_schema_id_misses_total")).toBe(0);
    expect(await sample(metrics.registry.metrics(), "agp_schema_id_miss_lookups_total")).toBe(0);
    for (let n = 0; n < 3; n++) metrics.recordSchemaIdMiss();
    metrics.recordSchemaIdLookupMiss();
    expect(await sample(metrics.registry.metrics(), "agp_schema_id_misses_total")).toBe(3);
    expect(await sample(metrics.registry.metrics(), "agp_schema_id_miss_lookups_total")).toBe(1);
  });

  it("counts transaction retries by the transaction's first statement and the error", async () => {
    const metrics = createPrometheusMetrics();
    // Each stream's write starts at 0 for deadlocks; other errors appear with their first retry.
    const start = metrics.registry.metrics();
    for (const pattern of ["3.1", "3.1-tombstone", "reachability", "3.3", "outcome", "3.4"])
      expect(await sample(start, `agp_transaction_retries_total{pattern="${pattern}",reason="DeadlockDetected"}`)).toBe(
        0,
      );
    expect(
      await sample(start, 'agp_transaction_retries_total{pattern="3.4",reason="ServiceUnavailable"}'),
    ).toBeUndefined();
    metrics.recordTransactionRetry("3.3", "DeadlockDetected");
    metrics.recordTransactionRetry("3.3", "DeadlockDetected");
    metrics.recordTransactionRetry("3.4", "ServiceUnavailable");
    const text = metrics.registry.metrics();
    expect(await sample(text, 'agp_transaction_retries_total{pattern="3.3",reason="DeadlockDetected"}')).toBe(2);
    expect(await sample(text, 'agp_transaction_retries_total{pattern="3.4",reason="ServiceUnavailable"}')).toBe(1);
  });

  it("keeps the wall-clock time of each owned partition's last commit, and forgets a revoked partition", async () => {
    const metrics = createPrometheusMetrics();
    metrics.setLastCommit("t", 0, 1_700_000_000_000);
    metrics.setLastCommit("t", 1, 1_700_000_060_000);
    const series = (p: number) => `agp_last_commit_timestamp_seconds{topic="t",partition="${p}"}`;
    expect(await sample(metrics.registry.metrics(), series(0))).toBe(1_700_000_000);
    metrics.setLastCommit("t", 1, undefined);
    expect(await sample(metrics.registry.metrics(), series(1))).toBeUndefined();
  });

  it("ages the oldest unapplied record per partition at scrape time: 0 when none waits, gone when revoked", async () => {
    let now = 100_000;
    const metrics = createPrometheusMetrics(undefined, () => now);
    const series = (p: number) => `agp_oldest_unapplied_record_age_seconds{topic="t",partition="${p}"}`;
    metrics.setOldestUnapplied("t", 0, null);
    metrics.setOldestUnapplied("t", 1, 95_000);
    expect(await sample(metrics.registry.metrics(), series(0))).toBe(0);
    expect(await sample(metrics.registry.metrics(), series(1))).toBe(5);
    // Stuck: the same batch, a later scrape, a larger age.
    now = 112_500;
    expect(await sample(metrics.registry.metrics(), series(1))).toBe(17.5);
    metrics.setOldestUnapplied("t", 1, null);
    expect(await sample(metrics.registry.metrics(), series(1))).toBe(0);
    metrics.setOldestUnapplied("t", 1, undefined);
    expect(await sample(metrics.registry.metrics(), series(1))).toBeUndefined();
    expect(await sample(metrics.registry.metrics(), series(0))).toBe(0);
  });

  it("ages each tenant's oldest unpublished finding at scrape time: 0 for a served tenant with none waiting", async () => {
    let now = 100_000;
    const metrics = createPrometheusMetrics({ version: "x", tenants: ["default", "acme"] }, () => now);
    const series = (tenant: string) => `agp_findings_oldest_unpublished_seconds{tenant="${tenant}"}`;
    expect(await sample(metrics.registry.metrics(), series("default"))).toBe(0);
    metrics.setOldestUnpublishedFinding(new Map([["acme", 70_000]]));
    expect(await sample(metrics.registry.metrics(), series("acme"))).toBe(30);
    expect(await sample(metrics.registry.metrics(), series("default"))).toBe(0);
    // Still waiting, a later scrape: older, though the publisher has not counted again.
    now = 160_000;
    expect(await sample(metrics.registry.metrics(), series("acme"))).toBe(90);
    metrics.setOldestUnpublishedFinding(new Map());
    expect(await sample(metrics.registry.metrics(), series("acme"))).toBe(0);
  });
  it("ages the oldest mark waiting for the event-time judge at scrape time: 0 when none waits", async () => {
    let now = 100_000;
    const metrics = createPrometheusMetrics({ version: "x", tenants: ["default"] }, () => now);
    const series = 'agp_findings_judge_wait_seconds{database="neo4j"}';
    expect(await sample(metrics.registry.metrics(), series)).toBeUndefined();
    metrics.setOldestUnjudged("neo4j", 40_000);
    expect(await sample(metrics.registry.metrics(), series)).toBe(60);
    now = 130_000;
    expect(await sample(metrics.registry.metrics(), series)).toBe(90);
    metrics.setOldestUnjudged("neo4j", undefined);
    now = 200_000;
    expect(await sample(metrics.registry.metrics(), series)).toBe(0);
  });
});
