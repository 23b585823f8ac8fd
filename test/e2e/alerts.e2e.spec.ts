import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { createPrometheusMetrics } from "../../src/adapters/metrics/prometheus.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const PROMTOOL = "/usr/bin/promtool";
const RULES = "helm/agent-graph-projector/alerts/agent-graph-projector.rules.yml";
const TESTS = "test/alerts/agent-graph-projector.test.yml";

const promtool = (...args: string[]) => spawnSync(PROMTOOL, args, { cwd: root, encoding: "utf8" });

/** Alert names, their runbook_url and the agp_ metrics their expressions read, from the rules file. */
function alerts(): { name: string; runbook: string; metrics: string[] }[] {
  const text = readFileSync(join(root, RULES), "utf8");
  return text
    .split(/\n\s+- alert: /)
    .slice(1)
    .map((block) => ({
      name: block.split("\n")[0]?.trim() ?? "",
      runbook: /runbook_url: "([^"]+)"/.exec(block)?.[1] ?? "",
      metrics: [
        ...new Set([...block.matchAll(/\bagp_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, ""))),
      ],
    }));
}

/**
 * The alerting rules, checked by the real promtool (the Debian prometheus package): syntax, and a unit
 * test per alert that fires on trouble and stays quiet on a healthy neighbour. Every alert links to its
 * section of docs/runbook.md, and reads only metrics the service exports.
 */
describe("alerting rules", () => {
  beforeAll(() => {
    if (!existsSync(PROMTOOL)) {
      execFileSync("bash", [join(root, "scripts/packaging/install-prometheus.sh")], { stdio: "inherit" });
    }
  });

  it("promtool check rules passes", () => {
    const result = promtool("check", "rules", RULES);
    expect(result.status, `${result.stdout}${result.stderr}`).toBe(0);
    expect(result.stdout).toContain(`SUCCESS: ${alerts().length} rules found`);
  });

  it("promtool test rules passes, with a test for every alert", () => {
    const result = promtool("test", "rules", TESTS);
    expect(result.status, `${result.stdout}${result.stderr}`).toBe(0);
    const tests = readFileSync(join(root, TESTS), "utf8");
    for (const { name } of alerts()) expect(tests, `no promtool test for ${name}`).toContain(`alertname: ${name}`);
  });

  it("covers what the issue asks for, each alert linking to its own runbook section", () => {
    const names = alerts().map((alert) => alert.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "AgpConsumerLagGrowing",
        "AgpPartitionStalled",
        "AgpDeadLetters",
        "AgpDeferredNearWindow",
        "AgpTransactionRetryStorm",
        "AgpInstanceNotReady",
        "AgpReconcileDrift",
        "AgpGraphStale",
        "AgpPartitionSilent",
        "AgpCatchUpHoldLong",
        "AgpNoInstance",
        "AgpCrashLooping",
        "AgpUndeclaredEscalation",
        "AgpGroupLagGrowing",
        "AgpFindingsUnpublishedGrowing",
      ]),
    );
    const runbook = readFileSync(join(root, "docs/runbook.md"), "utf8");
    const sections = [...runbook.matchAll(/^## (\S+)$/gm)].map((m) => m[1]);
    expect(sections.sort()).toEqual([...names].sort());
    for (const { name, runbook: url } of alerts()) expect(url).toBe(`docs/runbook.md#${name.toLowerCase()}`);
  });

  it("keeps namespace and job in every aggregation, so that two releases are never summed", () => {
    const text = readFileSync(join(root, RULES), "utf8");
    const groupings = [...text.matchAll(/\bby \(([^)]*)\)/g)].map((m) => m[1] ?? "");
    expect(groupings.length).toBeGreaterThan(0);
    for (const labels of groupings) expect(labels).toMatch(/^namespace, job\b/);
  });

  it("deploy/alerts is the chart's alerts folder itself, not a copy that could drift", () => {
    expect(readFileSync(join(root, "deploy/alerts", RULES.split("/").at(-1) ?? ""), "utf8")).toBe(
      readFileSync(join(root, RULES), "utf8"),
    );
  });

  it("reads only metrics the service exports", async () => {
    const metrics = createPrometheusMetrics({ version: "test", retryMaxAgeMs: 3_600_000 });
    const exported = new Set((await metrics.registry.getMetricsAsJSON()).map((metric) => metric.name));
    for (const { name, metrics: used } of alerts()) {
      for (const metric of used) expect(exported, `${name} reads ${metric}`).toContain(metric);
    }
  });
});
