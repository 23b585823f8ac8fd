import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { outcome, snapshot } from "../support/builders.js";
import { Harness } from "../support/harness.js";
import { showTransactions } from "../support/show-transactions.js";
import { until } from "../support/until.js";

const GAUGE = "agp_oldest_unapplied_record_age_seconds";

/** The gauge's samples by topic and partition, from the service's own /metrics. */
async function ages(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${GAUGE}{`)) continue;
    const topic = /topic="([^"]+)"/.exec(line)?.[1];
    const partition = /partition="([^"]+)"/.exec(line)?.[1];
    out.set(`${topic}/${partition}`, Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return out;
}

/**
 * The age of the oldest record fetched and not yet applied, per source partition: 0 on every owned
 * partition from the start, growing while a batch cannot be written (here: an agent's uniqueness lock
 * held by an open transaction, so the registry batch's MERGE waits on it), and 0 again once applied.
 */
describe("the oldest unapplied record's age", () => {
  let harness: Harness;
  beforeAll(async () => {
    // The projector's transaction waits on the lock for the whole test rather than timing out.
    harness = await Harness.create("freshness", { NEO4J_TX_TIMEOUT_MS: "120000" });
    await harness.clearGraph();
  });
  afterEach(() => harness.stopProjectors());
  afterAll(() => harness?.close());

  it("grows while a fetched batch is held back from Neo4j, and returns to 0 once it is applied", async () => {
    const service = await harness.startProjector();
    const sources = Object.values(harness.names.source);
    const partitions = harness.config.topics.partitions;
    const owned = await until("a series at 0 for every owned source partition", async () => {
      const seen = await ages(service.metricsPort);
      const keys = sources.flatMap((topic) => Array.from({ length: partitions }, (_, p) => `${topic}/${p}`));
      return keys.every((key) => seen.get(key) === 0) ? seen : undefined;
    });
    // Retry partitions have the oldest-deferred gauge; this one speaks of source partitions only.
    expect([...owned.keys()].every((key) => sources.some((topic) => key.startsWith(`${topic}/`)))).toBe(true);

    const agent = "fresh-agt-001";
    const session = harness.driver.session({ database: harness.config.neo4j.database });
    const lock = session.beginTransaction();
    let released = false;
    try {
      await lock.run("MERGE (:Agent {agent_id: $id})", { id: agent });
      await harness.publish([snapshot(agent)]);
      const registryTopic = harness.names.source["registry-mutation"];
      const heldAge = async () => {
        const seen = await ages(service.metricsPort);
        return Math.max(...[...seen].filter(([key]) => key.startsWith(`${registryTopic}/`)).map(([, age]) => age));
      };
      const first = await until("the held batch's age", async () => {
        const age = await heldAge();
        return age > 0 ? age : undefined;
      });
      // A stall shows as a growing age: every scrape reads it anew while the batch waits.
      const later = await until("the age to grow", async () => {
        const age = await heldAge();
        return age >= first + 1.5 ? age : undefined;
      });
      expect(later).toBeGreaterThan(first);
      const { records } = await harness.driver.executeQuery(
        "MATCH (a:Agent {agent_id: $id}) RETURN count(a) AS n",
        { id: agent },
        { database: harness.config.neo4j.database },
      );
      expect(Number(records[0]?.get("n")), "the batch is still unapplied").toBe(0);

      await lock.rollback();
      released = true;
      await harness.waitForCaughtUp();
      const after = await until("every partition back at 0", async () => {
        const seen = await ages(service.metricsPort);
        return [...seen.values()].every((age) => age === 0) ? seen : undefined;
      });
      expect(after.size).toBe(owned.size);
      const applied = await harness.driver.executeQuery(
        "MATCH (a:Agent {agent_id: $id}) RETURN a.name AS name",
        { id: agent },
        { database: harness.config.neo4j.database },
      );
      expect(applied.records[0]?.get("name")).toBe(`Agent ${agent}`);
    } finally {
      if (!released) await lock.rollback().catch(() => {});
      await session.close();
    }
  });

  it("a partition whose batch waits on a lock holds back no other partition", async () => {
    await harness.startProjector();
    const partitions = harness.config.topics.partitions;
    expect(partitions, "the test needs other partitions than the blocked one").toBeGreaterThanOrEqual(3);
    const hot = "lane-agt-000";
    const others = Array.from({ length: partitions - 1 }, (_, i) => `lane-agt-${String(i + 1).padStart(3, "0")}`);
    await harness.publish([hot, ...others].map((agent) => snapshot(agent)));
    await harness.waitForCaughtUp();

    const database = { database: harness.config.neo4j.database };
    const outcomes = async () =>
      new Set(
        (
          await harness.driver.executeQuery(
            "MATCH (o:Outcome) WHERE o.outcome_id STARTS WITH 'lane-' RETURN o.outcome_id AS id",
            {},
            database,
          )
        ).records.map((record) => String(record.get("id"))),
      );
    const topic = harness.names.source["outcome-created"];
    const send = async (id: string, agent: string, partition: number) =>
      harness.sendRaw(topic, [{ ...(await harness.encode(outcome(id, agent))), partition }]);

    // An open transaction holds the hot agent's lock: §3.3's PRODUCED for its outcome waits on it.
    const session = harness.driver.session(database);
    const lock = session.beginTransaction();
    let released = false;
    try {
      await lock.run("MATCH (a:Agent {agent_id: $id}) SET a.held = true", { id: hot });
      await send("lane-o-hot", hot, 0);
      await until("the hot agent's batch to wait on the lock", async () => {
        const { records } = await showTransactions(harness.driver, "SHOW TRANSACTIONS YIELD status RETURN status");
        return records.some((record) => String(record.get("status")).startsWith("Blocked")) ? true : undefined;
      });
      // Published after the blocked batch was fetched: only a later fetch brings them.
      for (const [i, agent] of others.entries()) await send(`lane-o-${i + 1}`, agent, i + 1);
      const expected = others.map((_, i) => `lane-o-${i + 1}`);
      const applied = await until(
        "every other partition's outcome, while the lock is held",
        async () => {
          const seen = await outcomes();
          return expected.every((id) => seen.has(id)) ? seen : undefined;
        },
        { timeoutMs: 30_000 },
      );
      expect(applied.has("lane-o-hot"), "the blocked outcome waits for the lock").toBe(false);

      await lock.rollback();
      released = true;
      await harness.waitForCaughtUp();
      expect((await outcomes()).has("lane-o-hot")).toBe(true);
    } finally {
      if (!released) await lock.rollback().catch(() => {});
      await session.close();
    }
  });
});
