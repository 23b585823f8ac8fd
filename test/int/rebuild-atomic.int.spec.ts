import { type ChildProcess, spawn } from "node:child_process";
import type { Session, Transaction } from "neo4j-driver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CanonicalGraph, diffGraphs } from "../../src/model/graph.js";
import { HEADER } from "../../src/topics.js";
import { generateEventLog, SMALL_WORKLOAD } from "../../workload/generate.js";
import { overlong, snapshot, tool } from "../support/builders.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";
import { showTransactions } from "../support/show-transactions.js";
import { until } from "../support/until.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `rebuild --yes` is all or nothing: wherever it is stopped — killed while it starts, while it reads,
 * inside its write transaction, or by Neo4j failing that transaction past the writer's retry budget —
 * the graph is exactly the one before; when it finishes, exactly the rebuilt one. A record Neo4j
 * refuses and one nobody can read are dead-lettered and reported, and everything else is rebuilt.
 *
 * To stop it inside its write transaction at a known point, the test holds the uniqueness lock of an
 * agent the graph does not have yet but the registry topic does (an uncommitted MERGE of its key):
 * the rebuild blocks on it once it reaches that agent's §3.1 MERGE, after its wipe. No rebuild can
 * commit while the lock is held, so every stop in that window must leave the old graph.
 */
describe("rebuild is all or nothing", () => {
  let harness: Harness;
  let old: CanonicalGraph;
  let expected: CanonicalGraph;
  const late = snapshot("late-agt-001", { tools: [tool("late-tool")], escalation_path: ["human operator"] });

  const children = new Set<ChildProcess>();
  /**
   * The CLI as a child process; one still running after `limitMs` is killed, so a hang fails the test.
   * `logged(pattern)` resolves as soon as its stderr (its log) matches, on the data event itself.
   */
  const cli = (args: string[], env: Record<string, string> = {}, limitMs = 90_000) => {
    const child = spawn(process.execPath, ["bin/agent-graph-projector.js", ...args], {
      env: { ...process.env, ...harness.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.add(child);
    const timer = setTimeout(() => child.kill("SIGKILL"), limitMs);
    let stdout = "";
    let stderr = "";
    const waiting = new Set<() => void>();
    child.stdout?.on("data", (chunk) => (stdout += chunk));
    child.stderr?.on("data", (chunk) => {
      stderr += chunk;
      for (const check of waiting) check();
    });
    const done = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>(
      (resolve) =>
        child.on("close", (code, signal) => {
          clearTimeout(timer);
          children.delete(child);
          for (const check of waiting) check();
          resolve({ code, signal, stdout, stderr });
        }),
    );
    const logged = (pattern: RegExp) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (pattern.test(stderr)) resolve();
          else if (child.exitCode !== null || child.signalCode !== null)
            reject(new Error(`the rebuild ended without logging ${pattern}: ${stderr}`));
          else return;
          waiting.delete(check);
        };
        waiting.add(check);
        check();
      });
    return { child, done, logged };
  };

  /** Transactions other than the one asking, with their status. */
  const transactions = async () =>
    (
      await showTransactions(
        harness.driver,
        "SHOW TRANSACTIONS YIELD transactionId, status, currentQuery WHERE NOT currentQuery STARTS WITH 'SHOW TRANSACTIONS' RETURN status",
      )
    ).records.map((record) => String(record.get("status")));

  /** Holds the uniqueness lock of `late`'s key until released (rolled back: nothing is written). */
  const holdLateAgentKey = async (): Promise<{ session: Session; tx: Transaction }> => {
    const session = harness.driver.session();
    const tx = session.beginTransaction();
    await tx.run("MERGE (a:Agent {agent_id: $id})", { id: late.agent_id });
    return { session, tx };
  };
  const release = async ({ session, tx }: { session: Session; tx: Transaction }) => {
    await tx.rollback();
    await session.close();
    // The killed client's transaction is rolled back by Neo4j once it notices the connection is gone.
    await until("the stopped rebuild's transaction to end", async () => (await transactions()).length === 0, {
      everyMs: 50,
    });
  };

  beforeAll(async () => {
    harness = await Harness.create("rebuild-atomic", {
      MAX_ID_LENGTH: "100000",
      MAX_TEXT_LENGTH: "100000",
      // A machine this busy must not turn a slow transaction into a failure where none is meant.
      NEO4J_TX_TIMEOUT_MS: "120000",
    });
    await harness.clearGraph();
    const log = generateEventLog(2311, {
      ...SMALL_WORKLOAD,
      agents: 60,
      outcomes: 150,
      escalations: 60,
      deregisterRatio: 0.2,
      reregisterRatio: 0.3,
    });
    await harness.startProjector();
    for (const phase of [log.registry, log.outcomes, log.escalations]) {
      await harness.publish(phase);
      await harness.waitForCaughtUp(180_000);
    }
    await harness.stopProjectors();
    // A snapshot the projector never applied, so the rebuilt graph differs from the one before.
    await harness.publish([late]);
    expected = referenceGraph([...log.registry, late, ...log.outcomes, ...log.escalations]);
    // And a graph that drifted from the registry, which the rebuild restores.
    await harness.driver.executeQuery("MATCH (:Agent)-[r:AUTHORIZED_FOR]->() WITH r LIMIT 5 DELETE r");
    await harness.driver.executeQuery("MATCH (a:Agent) WHERE a.status = 'active' WITH a LIMIT 3 SET a.name = 'stray'");
    await harness.driver.executeQuery(
      "MATCH (:Agent)-[r:CAN_ESCALATE_TO]->(:Agent) WHERE r.declared = true WITH r LIMIT 3 SET r.declared = false",
    );
    old = await harness.dump();
    expect(diffGraphs(expected, old)).not.toEqual([]);
  }, 600_000);
  afterAll(async () => {
    for (const child of children) child.kill("SIGKILL");
    await harness?.close();
  });

  // Each kill point is told the running rebuild and resolves when it is there. The rebuild logs each
  // step as it starts (at info); the kill follows that line within milliseconds, while reading a topic
  // takes a consumer group's join at least. (Watching for the reader's consumer group instead missed
  // it on a fast machine: the group can come and go between two polls of the group list.)
  type Running = ReturnType<typeof cli>;
  const killPoints: { name: string; at: (rebuild: Running) => Promise<void> }[] = [
    { name: "while it starts", at: async () => void (await sleep(300)) },
    { name: "while it reads the registry topic", at: (rebuild) => rebuild.logged(/"msg":"rebuild: reading"/) },
    {
      name: "inside its write transaction, after the wipe",
      at: async (rebuild) => {
        await rebuild.logged(/"msg":"rebuild: writing"/);
        await until("a blocked transaction", async () => (await transactions()).some((s) => s.startsWith("Blocked")), {
          everyMs: 50,
        });
      },
    },
  ];

  it.each(killPoints)(
    "SIGKILL $name leaves exactly the graph before",
    async ({ name, at }) => {
      const lock = await holdLateAgentKey();
      try {
        const rebuild = cli(["rebuild", "--yes"], { LOG_LEVEL: "info" });
        try {
          await at(rebuild);
        } finally {
          // Killed whatever happened: a rebuild left running would commit once the lock is released.
          rebuild.child.kill("SIGKILL");
        }
        const result = await rebuild.done;
        expect(result.signal, result.stderr).toBe("SIGKILL");
        if (name.startsWith("while it reads")) expect(result.stderr).not.toMatch(/"msg":"rebuild: read"/);
      } finally {
        await release(lock);
      }
      expect(diffGraphs(old, await harness.dump())).toEqual([]);
    },
    120_000,
  );

  it("Neo4j failing the write past the writer's retry budget: exit 1, rolled back, the graph before", async () => {
    const lock = await holdLateAgentKey();
    let result: Awaited<ReturnType<typeof cli>["done"]>;
    try {
      // Each attempt waits on the lock until its transaction times out (a transient failure, retried
      // until the writer's budget is spent).
      result = await cli(["rebuild", "--yes"], { REBUILD_TX_TIMEOUT_MS: "1500" }).done;
    } finally {
      await release(lock);
    }
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/rebuild of tenant "default" failed and was rolled back/);
    expect(result.stdout).toMatch(/default\s*│\s*neo4j\s*│\s*failed/);
    expect(diffGraphs(old, await harness.dump())).toEqual([]);
  }, 120_000);

  it("a record Neo4j refuses and one nobody can read are dead-lettered and reported; the rest is rebuilt exactly", async () => {
    const topic = harness.names.source["registry-mutation"];
    const poison = snapshot("poison-agt-001", { tools: [tool(overlong("-tool"))] });
    await harness.sendRaw(topic, [
      { ...(await harness.encode(poison)), headers: { "x-trace": "poison" } },
      { key: "garbled-agt-001", value: Buffer.from("not avro at all"), headers: { "x-trace": "garbled" } },
    ]);

    const result = await cli(["rebuild", "--yes", "--json"]).done;
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as {
      tenants: { tenant: string; status: string; rejected: number }[];
      deadLettered: { key: string; reason: string }[];
    };
    expect(report.tenants).toMatchObject([{ tenant: "default", status: "rebuilt", rejected: 1 }]);
    expect(report.deadLettered.map(({ key, reason }) => [key, reason]).sort()).toEqual([
      ["default/poison-agt-001", "neo4j-rejected"],
      ["garbled-agt-001", "not-avro"],
    ]);
    const letters = (await harness.deadLetters()).filter((letter) => letter.headers[HEADER.sourceTopic] === topic);
    expect(letters.map((letter) => [letter.headers["x-trace"], letter.headers[HEADER.errorClass]]).sort()).toEqual([
      ["garbled", "not-avro"],
      ["poison", "neo4j-rejected"],
    ]);
    expect(diffGraphs(expected, await harness.dump())).toEqual([]);
  }, 120_000);
});
