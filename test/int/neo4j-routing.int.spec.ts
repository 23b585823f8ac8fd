import neo4j from "neo4j-driver";
import { afterAll, describe, expect, it } from "vitest";
import { createDriver } from "../../src/adapters/neo4j/graph-writer.js";
import { loadConfig } from "../../src/config.js";
import { generateEventLog } from "../../workload/generate.js";
import { verify } from "../faults/support.js";
import { Harness } from "../support/harness.js";

/**
 * The routing schemes a Neo4j cluster is reached with. With neo4j:// the driver asks the server for a
 * routing table and sends every write session to a server listed as a writer (the leader, in a
 * cluster); a standalone server lists itself. The projector runs end to end through it here.
 */
describe("Neo4j routing URIs", () => {
  let harness: Harness | undefined;
  afterAll(() => harness?.close());

  it("neo4j:// — the routing table names the server's own Bolt address and the projector writes through it", async () => {
    const probe = await Harness.create("routing-probe");
    const routed = probe.config.neo4j.uri.replace(/^bolt(\+s|\+ssc)?:/, "neo4j$1:");
    await probe.close();
    harness = await Harness.create("routing", { NEO4J_URI: routed });
    expect(harness.config.neo4j.uri).toMatch(/^neo4j(\+s|\+ssc)?:\/\//);

    const { records } = await harness.driver.executeQuery(
      "CALL dbms.routing.getRoutingTable({}, $db) YIELD servers RETURN servers",
      { db: harness.config.neo4j.database },
      { database: "system", routing: neo4j.routing.READ },
    );
    const servers = records[0]?.get("servers") as { addresses: string[]; role: string }[];
    const writers = servers.find((s) => s.role === "WRITE")?.addresses ?? [];
    const address = routed.replace(/^neo4j(\+s|\+ssc)?:\/\//, "");
    expect(writers).toEqual([address]);

    await harness.clearGraph();
    const log = generateEventLog(811);
    const events = [...log.registry, ...log.outcomes, ...log.escalations];
    await harness.startProjector();
    await harness.publish(events);
    await harness.waitForCaughtUp(120_000);
    const verified = await verify(harness, events);
    expect(verified.relationships).toBeGreaterThan(0);
  });

  it("neo4j+s:// is accepted as configured: the scheme alone turns TLS on, no conflicting driver option", async () => {
    const config = loadConfig({ NEO4J_URI: "neo4j+s://cluster.example.invalid:7687", NEO4J_PASSWORD: "x" });
    const driver = createDriver(config.neo4j);
    try {
      // No connection is attempted until a query; constructing it is what fails on conflicting TLS settings.
      expect(driver).toBeDefined();
    } finally {
      await driver.close();
    }
  });
});
