import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { snapshot } from "../support/builders.js";
import { Harness } from "../support/harness.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const GAUGE = "agp_oldest_unapplied_record_age_seconds";

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

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
});
