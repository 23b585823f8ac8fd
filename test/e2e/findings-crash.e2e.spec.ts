import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { LIST_FINDINGS } from "../../src/cypher/findings.js";
import { finding } from "../../src/model/findings.js";
import { escalation, outcome, snapshot } from "../support/builders.js";
import { Harness } from "../support/harness.js";

/**
 * The findings outbox across a SIGKILL: `run` commits an undeclared escalation's finding but cannot
 * publish it (its topic is gone), is killed, and the next `run` publishes it at start-up.
 */
const started = new Set<ChildProcess>();

function run(env: Record<string, string>): { child: ChildProcess; exit: Promise<number | null>; log: () => string } {
  const child = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
    env: { ...process.env, ...env, LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout?.on("data", (chunk) => (log += chunk));
  child.stderr?.on("data", (chunk) => (log += chunk));
  started.add(child);
  const exit = new Promise<number | null>((resolve) =>
    child.on("close", (code) => {
      started.delete(child);
      resolve(code);
    }),
  );
  return { child, exit, log: () => log };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const found = await probe().catch(() => undefined);
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("findings across a SIGKILL between commit and publish", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("findings-crash");
    await harness.clearGraph();
  });
  afterAll(async () => {
    for (const child of started) child.kill("SIGKILL");
    await harness?.close();
  });

  it("the committed, unpublished finding is published by the next run", async () => {
    const expected = finding("default", "undeclared-escalation", "cl-agt-001", "cl-agt-002");
    await harness.admin.deleteTopics({ topics: [harness.names.findings] });
    const first = run({ ...harness.env, CREATE_TOPICS_ON_START: "false" });
    await harness.publish([
      snapshot("cl-agt-001", { escalation_path: [] }),
      snapshot("cl-agt-002", { escalation_path: [] }),
      outcome("o-1", "cl-agt-001"),
      outcome("o-2", "cl-agt-002"),
      escalation("o-1", "o-2"),
    ]);
    const read = () =>
      harness.graph().read(harness.config.neo4j.database, LIST_FINDINGS, { tenant: null, open: false });
    const committed = await until("the finding committed", async () => {
      const rows = await read();
      return rows.length > 0 ? rows : undefined;
    });
    expect(committed).toEqual([expect.objectContaining({ finding_id: expected.finding_id, published: false })]);
    first.child.kill("SIGKILL");
    await first.exit;

    const second = run(harness.env);
    const published = await until("the finding on its topic", async () => {
      const values: Promise<unknown>[] = [];
      await readTopicsToEnd(harness.kafka, [harness.names.findings], (record) => {
        values.push(harness.registry.decode(record.value as Buffer));
      });
      const all = await Promise.all(values);
      return all.length > 0 ? all : undefined;
    });
    expect(published.map((value) => ({ ...(value as object) }))).toEqual([expected]);
    await until("the finding marked published", async () =>
      (await read()).every((row) => row.published === true) ? true : undefined,
    );
    // The killed instance's group membership runs out first; a stop is clean once the group is joined.
    await until(
      "the group joined",
      async () => (second.log().includes('"projector running"') ? true : undefined),
      120_000,
    );
    second.child.kill("SIGTERM");
    expect(await second.exit, second.log().slice(-3000)).toBe(0);
  });
});
