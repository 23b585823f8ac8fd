import { spawn } from "node:child_process";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { generateEventLog, SMALL_WORKLOAD } from "../../workload/generate.js";
import { Harness } from "../support/harness.js";
import { until } from "../support/until.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Samples of one metric family from a Prometheus text exposition. */
function samples(text: string, name: string): { labels: string; value: number }[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .map((line) => {
      const space = line.lastIndexOf(" ");
      return { labels: line.slice(name.length, space), value: Number(line.slice(space + 1)) };
    });
}

describe("operating the service", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("ops");
    await harness.clearGraph();
  });
  afterEach(() => harness.stopProjectors());
  afterAll(() => harness?.close());

  it("exposes lag, consumption, writes by pattern and result, Neo4j counters, batches, rebalances and process metrics", async () => {
    const service = await harness.startProjector();
    const log = generateEventLog(5, SMALL_WORKLOAD);
    await harness.publish(log.registry);
    await harness.waitForCaughtUp();
    // Each stream after the one it depends on, so every source topic has records applied from it
    // (published together, escalations may all overtake their outcomes and apply from the retry topic).
    await harness.publish(log.outcomes);
    await harness.waitForCaughtUp();
    await harness.publish(log.escalations);
    await harness.waitForCaughtUp();
    await harness.sendRaw(harness.names.source["outcome-created"], [{ key: "bad", value: Buffer.from("not avro") }]);
    await harness.waitForCaughtUp();
    await sleep(1500); // one lag refresh

    const url = `http://127.0.0.1:${service.metricsPort}`;
    const text = await (await fetch(`${url}/metrics`)).text();
    const lag = samples(text, "agp_consumer_lag");
    expect(lag.length).toBeGreaterThanOrEqual(6);
    expect(lag.every((s) => s.value === 0)).toBe(true);
    expect(samples(text, "agp_records_consumed_total").reduce((sum, s) => sum + s.value, 0)).toBeGreaterThanOrEqual(
      log.registry.length + log.outcomes.length + log.escalations.length,
    );
    for (const pattern of ["3.1", "3.2", "3.3", "3.4", "outcome", "escalated-to"]) {
      expect(
        samples(text, "agp_writes_total").some(
          (s) => s.labels.includes(`pattern="${pattern}"`) && s.labels.includes('result="applied"') && s.value > 0,
        ),
        pattern,
      ).toBe(true);
    }
    expect(
      samples(text, "agp_records_total").some(
        (s) => s.labels.includes('result="dead-lettered"') && s.labels.includes('reason="not-avro"'),
      ),
    ).toBe(true);
    expect(
      samples(text, "agp_neo4j_updates_total").some(
        (s) => s.labels.includes('update="relationships_created"') && s.value > 0,
      ),
    ).toBe(true);
    // Neo4j reports its own time on each statement: every §3 pattern that wrote has some.
    for (const pattern of ["3.1", "3.3", "3.4"])
      expect(
        samples(text, "agp_neo4j_statement_seconds_count").some(
          (s) => s.labels === `{pattern="${pattern}"}` && s.value > 0,
        ),
        pattern,
      ).toBe(true);
    expect(samples(text, "agp_redeliveries_absorbed_total")[0]?.value).toBeGreaterThan(0);
    expect(samples(text, "agp_batch_duration_seconds_count").length).toBeGreaterThan(0);
    expect(samples(text, "agp_batch_size_records_bucket").length).toBeGreaterThan(0);
    expect(samples(text, "agp_rebalances_total")[0]?.value).toBeGreaterThanOrEqual(1);
    // What the instance cost besides its records: the consumer's fetches and the lag monitor's polls
    // (the catch-up hold asks before the consumer starts), counted by the running service.
    expect(samples(text, "agp_fetches_total")[0]?.value).toBeGreaterThan(0);
    expect(samples(text, "agp_lag_polls_total")[0]?.value).toBeGreaterThan(0);
    // Each stream's write starts at 0 for deadlocks; any other series names its statement and error.
    expect(samples(text, "agp_transaction_retries_total").map((s) => s.labels)).toContain(
      '{pattern="3.3",reason="DeadlockDetected"}',
    );
    for (const retried of samples(text, "agp_transaction_retries_total"))
      expect(retried.labels).toMatch(/^\{pattern="[^"]+",reason="[^"]+"\}$/);
    // Source topics always; a retry topic too when an escalation overtook its outcomes and was deferred.
    const appliedTopics = samples(text, "agp_last_applied_timestamp_seconds").map(
      (s) => /topic="([^"]+)"/.exec(s.labels)?.[1],
    );
    expect(appliedTopics).toEqual(expect.arrayContaining(Object.values(harness.names.source)));
    // Every dead-letter topic's series exists from the start (at 0); the bad outcome is on its own.
    const deadLettered = Object.fromEntries(
      samples(text, "agp_dead_letter_published_total").map((s) => [/topic="([^"]+)"/.exec(s.labels)?.[1], s.value]),
    );
    expect(deadLettered).toEqual({
      [harness.names.deadLetter["registry-mutation"]]: 0,
      [harness.names.deadLetter["outcome-created"]]: 1,
      [harness.names.deadLetter["escalation-edge"]]: 0,
    });
    expect(samples(text, "process_resident_memory_bytes")[0]?.value).toBeGreaterThan(0);

    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: "ok", joined: true, neo4j: true, registry: true });
    await harness.stopProjectors();
  });

  it("drops the lag series of partitions another instance took over", async () => {
    const first = await harness.startProjector();
    const url = `http://127.0.0.1:${first.metricsPort}/metrics`;
    const before = await until(
      "lag series for all 18 partitions",
      async () => {
        const n = samples(await (await fetch(url)).text(), "agp_consumer_lag").length;
        return n === 18 ? n : undefined;
      },
      { timeoutMs: 30_000 },
    );
    await harness.startProjector();
    const after = await until(
      "fewer lag series after a rebalance",
      async () => {
        const n = samples(await (await fetch(url)).text(), "agp_consumer_lag").length;
        return n > 0 && n < before ? n : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(after).toBeLessThan(before);
    await harness.stopProjectors();
  });

  it("SIGTERM stops the process cleanly: exit 0, the group left, no secret in the logs", async () => {
    const secret = harness.env.NEO4J_PASSWORD as string;
    const child = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
      env: { ...process.env, ...harness.env, LOG_LEVEL: "debug", METRICS_PORT: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      await until(
        "the service to start",
        async () => (output.includes('"msg":"projector running"') ? true : undefined),
        { timeoutMs: 60_000 },
      );
      const port = Number(/"metricsPort":(\d+)/.exec(output)?.[1]);
      await until(
        "readiness",
        async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined),
        { timeoutMs: 60_000 },
      );

      const signalled = Date.now();
      child.kill("SIGTERM");
      const code = await exited;
      const seconds = (Date.now() - signalled) / 1000;
      expect(code, output.slice(-2000)).toBe(0);
      expect(seconds).toBeLessThan(25);
      expect(output).toContain('"msg":"stopped"');
      // The stop's line carries the process's tally of records by fate (a scale-in's reader, the bench).
      const stopped = output
        .split("\n")
        .filter((line) => line.includes('"msg":"stopped"'))
        .map((line) => JSON.parse(line) as { records?: Record<string, number> })[0];
      expect(Object.keys(stopped?.records ?? {}).sort()).toEqual([
        "applied",
        "dead-lettered",
        "deferred",
        "stale",
        "unchanged",
      ]);
      const [group] = (await harness.admin.describeGroups([harness.config.kafka.group])).groups;
      expect(group?.members ?? []).toHaveLength(0);
      expect(secret.length).toBeGreaterThan(0);
      expect(output).not.toContain(secret);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("reconcile (§5 scheduled reconciliation, built)", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("reconcile");
    await harness.clearGraph();
  });
  afterAll(() => harness?.close());

  it("finds drift between the registry topic and the graph, and --repair removes it", async () => {
    const { reconcileRegistry } = await import("../../src/reconcile/reconcile.js");
    const { createTopicReader } = await import("../../src/adapters/kafka/read-topic.js");
    const { createAvroDecoder } = await import("../../src/adapters/registry/schema-registry.js");
    const { referenceGraph } = await import("../support/reference-model.js");
    const { diffGraphs } = await import("../../src/model/graph.js");
    const log = generateEventLog(77, SMALL_WORKLOAD);
    await harness.startProjector();
    await harness.publish(log.registry);
    await harness.waitForCaughtUp();
    await harness.stopProjectors();
    const run = (repair: boolean) =>
      reconcileRegistry({
        reader: createTopicReader(harness.kafka),
        topic: harness.names.source["registry-mutation"],
        decoder: createAvroDecoder(harness.registry),
        graph: harness.graph(),
        database: "neo4j",
        tenantId: "default",
        rules: { servedTenants: new Set(["default"]), maxListLength: 1000, maxIdLength: 256, maxTextLength: 4096 },
        repair,
      });
    expect((await run(false)).drift).toEqual([]);

    // Tamper with the projection the way a stray write or a lost update would.
    await harness.driver.executeQuery(
      "MATCH (:Agent {agent_id: 'os-agt-001'})-[r:CAN_ESCALATE_TO|AUTHORIZED_FOR]->() DELETE r",
    );
    await harness.driver.executeQuery("MATCH (a:Agent {agent_id: 'os-agt-004'}) SET a.name = 'renamed by hand'");
    await harness.driver.executeQuery(
      "MATCH (a:Agent) WHERE a.agent_id STARTS WITH 'fin' MATCH (t:Tool {tool_id: 'tool-0'}) MERGE (a)-[:AUTHORIZED_FOR]->(t)",
    );
    const found = await run(false);
    const kinds = new Set(found.drift.map((d) => d.kind));
    expect(kinds).toContain("property");
    expect(kinds).toContain("extra-authorization");
    expect(found.drift.some((d) => d.agent_id === "os-agt-004" && d.detail.startsWith("name:"))).toBe(true);

    const repaired = await run(true);
    expect(repaired.repaired).toBeGreaterThan(0);
    expect((await run(false)).drift).toEqual([]);
    const registryOnly = referenceGraph(log.registry);
    expect(diffGraphs(registryOnly, await harness.dump())).toEqual([]);
  });
});
