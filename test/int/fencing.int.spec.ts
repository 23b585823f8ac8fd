import { spawn } from "node:child_process";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { REGISTRY_PROJECTION } from "../../src/cypher/s3_1-registry-projection.js";
import { registryKey } from "../../src/model/registry-key.js";
import { snapshotRow } from "../../src/projection/registry.js";
import { outcome, snapshot, tool } from "../support/builders.js";
import { GraphView } from "../support/graph-view.js";
import { Harness } from "../support/harness.js";
import { until } from "../support/until.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Version fencing on the paths that bring a record back late: two writers on one agent at once, a
 * deferred outcome retried after a newer record of it, and `dlq redrive` of a registry record.
 */
describe("fencing on every path, on real servers", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("fencing");
  });
  afterEach(() => harness.stopProjectors());
  afterAll(() => harness?.close());

  it("§3.1's version guard holds under two concurrent transactions on one agent", async () => {
    await harness.clearGraph();
    const A = "fin-agt-070";
    const rows = (version: number, toolId: string) => ({
      rows: [snapshotRow({ i: 0, event: snapshot(A, { registry_version: version, tools: [tool(toolId)] }) })],
    });
    await harness.driver.executeQuery(REGISTRY_PROJECTION, rows(1, "t1"));
    const first = harness.driver.session();
    const second = harness.driver.session();
    try {
      const newer = await first.beginTransaction();
      expect((await newer.run(REGISTRY_PROJECTION, rows(5, "t5"))).records).toHaveLength(1);
      // The older snapshot's transaction starts while the newer one is uncommitted: it has to wait for
      // the agent's lock and then see version 5, not the committed version 1 it would read without it.
      const older = second.beginTransaction();
      const olderResult = (async () => {
        const tx = await older;
        const result = await tx.run(REGISTRY_PROJECTION, rows(3, "t3"));
        await tx.commit();
        return result.records.length;
      })();
      await sleep(1000);
      await newer.commit();
      expect(await olderResult).toBe(0);
    } finally {
      await first.close();
      await second.close();
    }
    const graph = new GraphView(await harness.dump());
    expect(graph.node("Agent", A)).toMatchObject({ registry_version: 5 });
    expect(graph.count("AUTHORIZED_FOR")).toBe(1);
    expect(graph.rel("AUTHORIZED_FOR", A, "t5")).toHaveLength(1);
  });

  it("a deferred outcome retried after a newer record of it changes neither its values nor its producer", async () => {
    await harness.clearGraph();
    const A = "fin-agt-071";
    const B = "fin-agt-072";
    // The first retry waits 3 s: long enough for the agent and the newer records to arrive first.
    await harness.startProjector({ RETRY_BACKOFF_MS: "3000", RETRY_BACKOFF_MAX_MS: "3000" });
    await harness.publish([
      outcome("o-status", A, { status: "pending", created_at: Date.UTC(2026, 0, 2) }),
      outcome("o-agent", B, { status: "pending", created_at: Date.UTC(2026, 0, 2) }),
    ]);
    await sleep(500);
    await harness.publish([snapshot(A)]);
    await until(
      "the agent's snapshot",
      async () => new GraphView(await harness.dump()).node("Agent", A) !== undefined,
      { timeoutMs: 30_000 },
    );
    await harness.publish([
      outcome("o-status", A, { status: "succeeded", created_at: Date.UTC(2026, 0, 3) }),
      outcome("o-agent", A, { status: "succeeded", created_at: Date.UTC(2026, 0, 3) }),
    ]);
    await harness.waitForCaughtUp();
    const graph = new GraphView(await harness.dump());
    for (const id of ["o-status", "o-agent"]) {
      expect(graph.node("Outcome", id)).toMatchObject({
        agent_id: A,
        status: "succeeded",
        created_at: Date.UTC(2026, 0, 3),
      });
      expect(graph.rel("PRODUCED", A, `Outcome:${id}`)).toHaveLength(1);
    }
    expect(graph.count("PRODUCED")).toBe(2);
  });

  it("dlq redrive of a registry snapshot goes through the retry topic: fenced, and never the compacted topic's latest value", async () => {
    await harness.clearGraph();
    const A = "fin-agt-073";
    // Dead-lettered for a list longer than this deployment allows.
    await harness.startProjector({ MAX_LIST_LENGTH: "1" });
    await harness.publish([snapshot(A, { registry_version: 2, tools: [tool("t1"), tool("t2")] })]);
    await harness.waitForCaughtUp();
    await harness.stopProjectors();
    await harness.startProjector();
    await harness.publish([snapshot(A, { registry_version: 3, tools: [tool("t3")] })]);
    await harness.waitForCaughtUp();

    const redrive = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, ["bin/agent-graph-projector.js", "dlq", "redrive", "--all"], {
        env: { ...process.env, ...harness.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (chunk) => (out += chunk));
      child.stderr.on("data", (chunk) => (out += chunk));
      child.on("close", (code) => resolve({ code, out }));
    });
    expect(redrive.code, redrive.out).toBe(0);
    expect(redrive.out).toContain("re-drove 1 record(s)");
    await harness.waitForCaughtUp();

    const graph = new GraphView(await harness.dump());
    expect(graph.node("Agent", A)).toMatchObject({ registry_version: 3 });
    expect(graph.rel("AUTHORIZED_FOR", A, "t3")).toHaveLength(1);
    expect(graph.count("AUTHORIZED_FOR")).toBe(1);

    // The compacted source topic still ends with version 3 for this key; the retry topic has the copy.
    const versions: { topic: string; offset: string }[] = [];
    await readTopicsToEnd(
      harness.kafka,
      [harness.names.source["registry-mutation"], harness.names.retry["registry-mutation"]],
      (record) => {
        if (record.key?.toString() === registryKey("default", A))
          versions.push({ topic: record.topic, offset: record.offset });
      },
    );
    expect(versions.filter((v) => v.topic === harness.names.source["registry-mutation"])).toHaveLength(2);
    expect(versions.filter((v) => v.topic === harness.names.retry["registry-mutation"])).toHaveLength(1);
  });
});
