import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateEventLog, SMALL_WORKLOAD } from "../../workload/generate.js";
import { Harness } from "../support/harness.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const PROMETHEUS = "/usr/bin/prometheus";
const JOB = "agent-graph-projector";

interface Target {
  refId: string;
  expr: string;
}
interface Panel {
  title: string;
  type: string;
  targets?: Target[];
}

const dashboard = JSON.parse(
  readFileSync(join(root, "helm/agent-graph-projector/dashboards/agent-graph-projector.json"), "utf8"),
) as { panels: Panel[] };
const queries = dashboard.panels.flatMap((panel) =>
  (panel.targets ?? []).map((target) => ({
    name: `${panel.title} [${target.refId}]`,
    // A time series panel shows its range; a stat or table panel the latest value.
    range: panel.type === "timeseries",
    // Grafana's variables, as the dashboard resolves them with "All" selected and a 1 s scrape interval
    // ($__rate_interval is at least four scrape intervals).
    // A scrape without Kubernetes has no namespace label: "All" (.*) matches its absence too.
    expr: target.expr.replaceAll("$namespace", ".*").replaceAll("$job", JOB).replaceAll("$__rate_interval", "4s"),
  })),
);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface PromResult {
  status: string;
  data: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
  error?: string;
}

/**
 * Every expression of the Grafana dashboard, run by a real Prometheus (the Debian package) that scrapes
 * a real projector once a second while it projects a small workload and dead-letters one bad record.
 */
describe("Grafana dashboard queries on a real Prometheus", () => {
  let harness: Harness;
  let prometheus: ChildProcess | undefined;
  let prometheusLog = "";
  let dir: string;
  let base: string;

  let startedAt = 0;
  const query = async (expr: string): Promise<PromResult> => {
    const response = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(expr)}`);
    return (await response.json()) as PromResult;
  };
  /** What a time series panel over the whole test would draw. */
  const queryRange = async (expr: string): Promise<PromResult> => {
    const end = Date.now() / 1000;
    const response = await fetch(
      `${base}/api/v1/query_range?query=${encodeURIComponent(expr)}&start=${startedAt}&end=${end}&step=1`,
    );
    return (await response.json()) as PromResult;
  };

  beforeAll(async () => {
    if (!existsSync(PROMETHEUS)) {
      execFileSync("bash", [join(root, "scripts/packaging/install-prometheus.sh")], { stdio: "inherit" });
    }
    startedAt = Date.now() / 1000;
    harness = await Harness.create("dashboard");
    // The outcomes must find no agent of theirs in the graph, so that they are deferred.
    await harness.clearGraph();
    // Reconciliation on a short schedule (drift per tenant), and deferred records that wait long enough
    // to be seen paused in their retry partitions.
    const service = await harness.startProjector({
      RECONCILE_INTERVAL_MS: "3000",
      RETRY_BACKOFF_MS: "10000",
      RETRY_BACKOFF_MAX_MS: "10000",
    });

    dir = mkdtempSync(join(tmpdir(), "agp-prometheus-"));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    writeFileSync(
      join(dir, "prometheus.yml"),
      [
        "global:",
        "  scrape_interval: 1s",
        "  evaluation_interval: 1s",
        "scrape_configs:",
        `  - job_name: ${JOB}`,
        "    static_configs:",
        `      - targets: ["127.0.0.1:${service.metricsPort}"]`,
        "",
      ].join("\n"),
    );
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${join(dir, "prometheus.yml")}`,
        `--storage.tsdb.path=${join(dir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
        "--log.level=warn",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    prometheus.stdout?.on("data", (chunk) => {
      prometheusLog += chunk;
    });
    prometheus.stderr?.on("data", (chunk) => {
      prometheusLog += chunk;
    });

    // Prometheus up, and scraping the projector.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const up = await query(`up{job="${JOB}"}`).catch(() => undefined);
      if (up?.data?.result[0]?.value[1] === "1") break;
      if (Date.now() > deadline) throw new Error(`Prometheus did not scrape the projector:\n${prometheusLog}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    const log = generateEventLog(11, SMALL_WORKLOAD);
    // Outcomes before their agents: they are deferred, wait in the retry topic, then apply.
    await harness.publish(log.outcomes);
    // Long enough for a group join on a loaded machine.
    const deferredDeadline = Date.now() + 90_000;
    while ((await query(`sum(agp_oldest_deferred_age_seconds{job="${JOB}"})`)).data.result.length === 0) {
      if (Date.now() > deferredDeadline) throw new Error("no outcome was deferred");
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await harness.publish([...log.registry, ...log.escalations]);
    await harness.sendRaw(harness.names.source["outcome-created"], [{ key: "x", value: Buffer.from("not avro") }]);
    await harness.waitForCaughtUp();
    // A few more scrapes, so that rate() and increase() have samples after the work.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  });

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus?.once("exit", resolve));
      prometheus.kill("SIGTERM");
      await exited;
    }
    await harness?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the dashboard has the expected panels", () => {
    expect(queries.length).toBeGreaterThanOrEqual(15);
  });

  it.each(queries)("$name returns data", async ({ expr, range }) => {
    // Series appear as the projector reports them (lag every LAG_REFRESH_MS): poll briefly.
    let last: PromResult | undefined;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      last = await (range ? queryRange(expr) : query(expr));
      expect(last.status, `${expr}: ${last.error ?? ""}`).toBe("success");
      if (last.data.result.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    expect(last?.data.result.length, `no series for ${expr}`).toBeGreaterThan(0);
  });

  it("saw partitions paused and deferred records age while they waited, then both cleared", async () => {
    const paused = await queryRange(`sum by (reason) (agp_partition_paused{job="${JOB}"})`);
    expect(paused.data.result.map((series) => series.metric.reason)).toContain("retry-not-due");
    const oldest = await queryRange(`max(agp_oldest_deferred_age_seconds{job="${JOB}"})`);
    expect(oldest.data.result.length).toBeGreaterThan(0);
    // Caught up: nothing waits in a retry topic and no partition is paused on a failure now.
    expect((await query(`agp_oldest_deferred_age_seconds{job="${JOB}"}`)).data.result).toEqual([]);
    expect((await query(`agp_partition_paused{job="${JOB}", reason="failure"}`)).data.result).toEqual([]);
  });

  it("measures freshness per stream and exports the build and Node versions", async () => {
    const count = await query(`sum by (stream) (agp_freshness_seconds_count{job="${JOB}"})`);
    expect(count.data.result.map((series) => series.metric.stream).sort()).toEqual([
      "escalation-edge",
      "outcome-created",
      "registry-mutation",
    ]);
    const build = await query(`agp_build_info{job="${JOB}"}`);
    expect(build.data.result[0]?.metric.node_version).toBe(process.version);
    const drift = await query(`agp_reconcile_drift{job="${JOB}", tenant="default"}`);
    expect(drift.data.result.length).toBeGreaterThan(0);
  });

  it("counts the workload and the dead-lettered record", async () => {
    const consumed = await query(`sum(agp_records_consumed_total{job="${JOB}"})`);
    expect(Number(consumed.data.result[0]?.value[1])).toBeGreaterThan(100);
    const dead = await query(`sum(agp_records_total{job="${JOB}", result="dead-lettered"})`);
    expect(Number(dead.data.result[0]?.value[1])).toBeGreaterThanOrEqual(1);
    const dlq = await query(`sum(agp_dead_letter_published_total{job="${JOB}"})`);
    expect(Number(dlq.data.result[0]?.value[1])).toBeGreaterThanOrEqual(1);
  });
});
