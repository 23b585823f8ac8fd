import type { ManagedTransaction, Transaction } from "neo4j-driver";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../src/adapters/neo4j/migrate.js";
import { REGISTRY_PROJECTION } from "../../src/cypher/s3_1-registry-projection.js";
import type { Statement, StatementResult } from "../../src/cypher/statement.js";
import { unchanged } from "../../src/model/fate.js";
import { projectEscalations } from "../../src/projection/escalations.js";
import { projectOutcomes } from "../../src/projection/outcomes.js";
import { projectRegistry, snapshotRow } from "../../src/projection/registry.js";
import { escalation, outcome, snapshot, tombstone, tool } from "../support/builders.js";
import { GraphView } from "../support/graph-view.js";
import { Harness } from "../support/harness.js";
import { showTransactions } from "../support/show-transactions.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs a plan's statements in an open transaction, as the graph writer does, without committing. */
async function runIn(tx: Transaction | ManagedTransaction, statements: readonly Statement[]) {
  const results: StatementResult[] = [];
  for (const statement of statements) {
    const result = await tx.run(statement.cypher, statement.params);
    results.push({
      name: statement.name,
      records: result.records.map((record) => record.toObject()),
      counters: {
        nodesCreated: 0,
        nodesDeleted: 0,
        relationshipsCreated: 0,
        relationshipsDeleted: 0,
        propertiesSet: 0,
      },
    });
  }
  return results;
}

/**
 * Races between two writers of one node, made deterministic: the first transaction is held open
 * (uncommitted, its locks taken) until the second has started and is either waiting for a lock or done.
 */
describe("races and fences, on real servers", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("races");
    // A spec before this one may have left a shared database's tenant-scoped nodes, which migrate
    // refuses to put one-tenant constraints over (as it should, for a deployment).
    await harness.clearGraph();
    // §6 as the service puts it in place: the specs below write through the statements directly.
    await migrate(harness.driver, [harness.config.neo4j.database]);
  });
  afterEach(() => harness.stopProjectors());
  afterAll(() => harness?.close());

  /** Resolves once some transaction of the database waits for a lock, or `done` settled. */
  async function blockedOrDone(done: Promise<unknown>, timeoutMs = 10_000): Promise<void> {
    let settled = false;
    done.then(
      () => (settled = true),
      () => (settled = true),
    );
    const deadline = Date.now() + timeoutMs;
    while (!settled && Date.now() < deadline) {
      const { records } = await showTransactions(
        harness.driver,
        "SHOW TRANSACTIONS YIELD status WHERE status STARTS WITH 'Blocked' RETURN count(*) AS blocked",
        {},
        { database: harness.config.neo4j.database },
      );
      if (Number(records[0]?.get("blocked")) > 0) return;
      await sleep(50);
    }
  }

  /**
   * An outcome consumed before its agents existed (the Outcome node without PRODUCED, the record
   * deferred), then the agents registered. Returns the writer the spec goes on with.
   */
  async function outcomeBeforeItsAgents(first: ReturnType<typeof outcome>, agents: readonly string[]) {
    const database = harness.config.neo4j.database;
    const writer = harness.graph();
    await writer.apply(database, projectOutcomes([{ i: 0, event: first }]).statements);
    for (const agent of agents)
      await harness.driver.executeQuery(
        REGISTRY_PROJECTION,
        { rows: [snapshotRow({ i: 0, event: snapshot(agent) })] },
        { database },
      );
    return writer;
  }

  it("a correction of an outcome's agent and a late copy of its earlier version: one PRODUCED, from the newest", async () => {
    await harness.clearGraph();
    const database = harness.config.neo4j.database;
    const A = "fin-agt-081";
    const B = "fin-agt-082";
    const first = outcome("o-race", A, { status: "pending" });
    const correction = outcome("o-race", B, { status: "succeeded" });
    // The first version was consumed before its agent existed: Outcome node, no PRODUCED, deferred.
    const writer = await outcomeBeforeItsAgents(first, [A, B]);

    // The correction (its source partition) is applied and holds the outcome; the deferred copy of the
    // first version (the retry partition) runs meanwhile and must see the correction once it commits.
    const session = harness.driver.session({ database });
    let lateFate: unknown;
    try {
      const fresh = await session.beginTransaction();
      await runIn(fresh, projectOutcomes([{ i: 0, event: correction }]).statements);
      const latePlan = projectOutcomes([{ i: 0, event: first, late: true }]);
      const late = writer.apply(database, latePlan.statements);
      await blockedOrDone(late);
      await fresh.commit();
      lateFate = latePlan.fates(await late).get(0);
    } finally {
      await session.close();
    }
    const graph = new GraphView(await harness.dump());
    expect(graph.node("Outcome", "o-race")).toMatchObject({ agent_id: B, status: "succeeded" });
    expect(graph.count("PRODUCED")).toBe(1);
    expect(graph.rel("PRODUCED", B, "Outcome:o-race")).toHaveLength(1);
    expect(lateFate).toEqual({ kind: "stale" });
  });

  it("the same race the other way round: the late copy holds the outcome, the correction waits and wins", async () => {
    await harness.clearGraph();
    const database = harness.config.neo4j.database;
    const A = "fin-agt-088";
    const B = "fin-agt-089";
    const first = outcome("o-race-2", A, { status: "pending" });
    const correction = outcome("o-race-2", B, { status: "succeeded" });
    const writer = await outcomeBeforeItsAgents(first, [A, B]);
    const session = harness.driver.session({ database });
    try {
      const late = await session.beginTransaction();
      await runIn(late, projectOutcomes([{ i: 0, event: first, late: true }]).statements);
      const fresh = writer.apply(database, projectOutcomes([{ i: 0, event: correction }]).statements);
      await blockedOrDone(fresh);
      await late.commit();
      await fresh;
    } finally {
      await session.close();
    }
    const graph = new GraphView(await harness.dump());
    expect(graph.node("Outcome", "o-race-2")).toMatchObject({ agent_id: B, status: "succeeded" });
    expect(graph.count("PRODUCED")).toBe(1);
    expect(graph.rel("PRODUCED", B, "Outcome:o-race-2")).toHaveLength(1);
  });

  // Two transactions linking one outcome take turns on its write lock (the `SET o.…` of a record read
  // in order, `_LOCK_` on the late path), so the second finds the first one's PRODUCED, however the
  // record reached it. A §3.3 that read `existed` without that lock and created the relationship
  // itself left two (tried in the twenty-fourth round; bench/HISTORY.md).
  it.each([
    ["redelivered to another instance", false],
    ["deferred once more, from the retry topic", true],
  ] as const)(
    "an outcome linked by two transactions at once, the second copy %s: one PRODUCED",
    async (_name, late) => {
      await harness.clearGraph();
      const database = harness.config.neo4j.database;
      const A = "fin-agt-091";
      const record = outcome("o-twice", A, { status: "succeeded" });
      // Consumed before its agent existed: the Outcome node without PRODUCED, the record deferred.
      const writer = await outcomeBeforeItsAgents(record, [A]);

      // The deferred copy, back from the retry topic, links it and holds the outcome; the second copy runs meanwhile.
      const session = harness.driver.session({ database });
      let secondFate: unknown;
      try {
        const first = await session.beginTransaction();
        await runIn(first, projectOutcomes([{ i: 0, event: record, late: true }]).statements);
        const plan = projectOutcomes([{ i: 0, event: record, late }]);
        const second = writer.apply(database, plan.statements);
        await blockedOrDone(second);
        await first.commit();
        secondFate = plan.fates(await second).get(0);
      } finally {
        await session.close();
      }
      const graph = new GraphView(await harness.dump());
      expect(graph.count("PRODUCED")).toBe(1);
      expect(graph.rel("PRODUCED", A, "Outcome:o-twice")).toHaveLength(1);
      expect(secondFate).toEqual(unchanged);
    },
  );

  it("a tombstone for an agent the graph never projected fences every lower version, on every path", async () => {
    await harness.clearGraph();
    const X = "fin-agt-083";
    await harness.startProjector();
    await harness.publish([tombstone(X, 3)]);
    await harness.waitForCaughtUp();
    // A re-driven or retried copy of an older snapshot, and the same snapshot published again upstream.
    await harness.publishLate([snapshot(X, { registry_version: 2, tools: [tool("t-late")] })]);
    await harness.publish([snapshot(X, { registry_version: 3, tools: [tool("t-again")] })]);
    await harness.waitForCaughtUp();
    let graph = new GraphView(await harness.dump());
    expect(graph.graph.relationships.filter((line) => line.includes("AUTHORIZED_FOR"))).toEqual([]);
    // The fence is no agent: §4's queries never see it.
    expect(graph.nodeKeys("Agent")).not.toContain(X);

    // Registered again above the deletion: applies, and the fence is spent.
    await harness.publish([snapshot(X, { registry_version: 4, tools: [tool("t4")] })]);
    await harness.waitForCaughtUp();
    await harness.publishLate([snapshot(X, { registry_version: 2, tools: [tool("t-late")] })]);
    await harness.waitForCaughtUp();
    graph = new GraphView(await harness.dump());
    expect(graph.node("Agent", X)).toMatchObject({ registry_version: 4, status: "active" });
    expect(graph.count("AUTHORIZED_FOR")).toBe(1);
    expect(graph.rel("AUTHORIZED_FOR", X, "t4")).toHaveLength(1);
  });

  it("a tombstone checks the version under the agent's lock: a snapshot uncommitted meanwhile is deleted", async () => {
    await harness.clearGraph();
    const database = harness.config.neo4j.database;
    const X = "fin-agt-084";
    const writer = harness.graph();
    // X exists, but only as another agent's escalation target: no version of its own yet.
    await writer.apply(
      database,
      projectRegistry([{ i: 0, event: snapshot("fin-agt-085", { escalation_path: [X] }) }]).statements,
    );
    const session = harness.driver.session({ database });
    try {
      // The agent's first snapshot is being written (not committed) when its deletion arrives.
      const registering = await session.beginTransaction();
      await runIn(
        registering,
        projectRegistry([{ i: 0, event: snapshot(X, { registry_version: 2, tools: [tool("t2")] }) }]).statements,
      );
      const deletion = writer.apply(database, projectRegistry([{ i: 0, event: tombstone(X, 3) }]).statements);
      await blockedOrDone(deletion);
      await registering.commit();
      await deletion;
    } finally {
      await session.close();
    }
    const graph = new GraphView(await harness.dump());
    expect(graph.node("Agent", X)).toMatchObject({ registry_version: 3, status: "deregistered" });
    expect(graph.count("AUTHORIZED_FOR")).toBe(0);
  });

  it("an escalation waits past its window while the outcome it waits on is still being retried, and applies once it does", async () => {
    await harness.clearGraph();
    const A = "fin-agt-086";
    const B = "fin-agt-087";
    const windowMs = 8_000;
    await harness.startProjector({
      RETRY_MAX_AGE_MS: String(windowMs),
      RETRY_BACKOFF_MS: "200",
      RETRY_BACKOFF_MAX_MS: "400",
    });
    await harness.publish([snapshot(B), outcome("o-esc-target", B)]);
    await harness.waitForCaughtUp();
    // The escalation first (its source outcome is missing), the outcome half a window later (its agent
    // is missing): the escalation's window ends while the outcome is still in its own.
    const escalationPublished = Date.now();
    await harness.publish([escalation("o-esc-source", "o-esc-target")]);
    await sleep(windowMs / 2);
    await harness.publish([outcome("o-esc-source", A)]);
    // Past the escalation's window and its upstream mark (a few attempts of 400 ms), before the outcome's.
    const escalationDead = async () =>
      (await harness.deadLetters()).some((letter) => letter.headers["agp-source-topic"]?.endsWith("escalation-edge"));
    while (Date.now() < escalationPublished + windowMs + 2_500 && !(await escalationDead())) await sleep(250);
    await harness.publish([snapshot(A)]);
    await harness.waitForCaughtUp();
    const deadline = Date.now() + 30_000;
    let graph = new GraphView(await harness.dump());
    while (Date.now() < deadline && graph.rel("CAN_ESCALATE_TO", A, B).length === 0) {
      await sleep(250);
      graph = new GraphView(await harness.dump());
    }
    expect((await harness.deadLetters()).map((letter) => letter.headers["agp-error-message"])).toEqual([]);
    expect(graph.rel("PRODUCED", A, "Outcome:o-esc-source")).toHaveLength(1);
    expect(graph.rel("CAN_ESCALATE_TO", A, B)).toEqual([expect.objectContaining({ observed_count: 1 })]);
  });

  // §3.4's increment reads observed_count and writes it back while another transaction may be counting
  // on the same edge. The second transaction waits for the first and counts on top of its commit. (With
  // §3.4's agent locks taken out this still holds: Neo4j locks the relationship for the SET before
  // it evaluates `r.observed_count + 1`. What is pinned here is the count, whatever takes the turn.)
  it.each([
    ["declared by the registry", true],
    ["created by the first transaction", false],
  ] as const)("two transactions counting on one edge %s: both counted", async (_name, declared) => {
    await harness.clearGraph();
    const database = harness.config.neo4j.database;
    const A = "fin-agt-103";
    const B = "fin-agt-104";
    const writer = harness.graph();
    await writer.apply(
      database,
      projectRegistry([
        { i: 0, event: snapshot(A, { escalation_path: declared ? [B] : [] }) },
        { i: 1, event: snapshot(B) },
      ]).statements,
    );
    const outcomes = ["o-c1", "o-c2", "o-c3", "o-c4"].map((id, n) => outcome(id, n % 2 === 0 ? A : B));
    await writer.apply(database, projectOutcomes(outcomes.map((event, i) => ({ i, event }))).statements);
    const session = harness.driver.session({ database });
    try {
      const first = await session.beginTransaction();
      await runIn(first, projectEscalations([{ i: 0, event: escalation("o-c1", "o-c2") }]).statements);
      const second = writer.apply(
        database,
        projectEscalations([{ i: 0, event: escalation("o-c3", "o-c4") }]).statements,
      );
      await blockedOrDone(second);
      await first.commit();
      await second;
    } finally {
      await session.close();
    }
    const graph = new GraphView(await harness.dump());
    expect(graph.rel("CAN_ESCALATE_TO", A, B)).toEqual([expect.objectContaining({ declared, observed_count: 2 })]);
    expect(graph.count("OBSERVED")).toBe(2);
  });
});
