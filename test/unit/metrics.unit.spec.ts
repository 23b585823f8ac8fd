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

  it("keeps drift per tenant", async () => {
    const metrics = createPrometheusMetrics();
    metrics.setDrift("acme", "missing-grant", 2);
    metrics.setDrift("globex", "missing-grant", 0);
    const text = metrics.registry.metrics();
    expect(await sample(text, 'agp_reconcile_drift{tenant="acme",kind="missing-grant"}')).toBe(2);
    expect(await sample(text, 'agp_reconcile_drift{tenant="globex",kind="missing-grant"}')).toBe(0);
  });
});
