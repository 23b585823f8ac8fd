import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { TENANT_CONSTRAINT_NAMES } from "../../src/cypher/s6-constraints.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import { canonicalize, diffGraphs } from "../../src/model/graph.js";
import { registryKey } from "../../src/model/registry-key.js";
import { governanceReport } from "../../src/report.js";
import { StartupError } from "../../src/startup/deadline.js";
import { HEADER } from "../../src/topics.js";
import { type EventLog, generateEventLog, SMALL_WORKLOAD } from "../../workload/generate.js";
import { snapshot } from "../support/builders.js";
import { expectedReport } from "../support/expected-report.js";
import { GraphView } from "../support/graph-view.js";
import { Harness } from "../support/harness.js";
import { ReferenceModel, referenceGraph } from "../support/reference-model.js";

const TERMINALS = ["os-agt-001", "os-agt-004"];

/** One tenant's log, with outcome ids renamed to `out-<n>` so that both tenants use the same ones. */
function tenantLog(seed: number, tenantId: string): ProjectorEvent[] {
  const log: EventLog = generateEventLog(seed, { ...SMALL_WORKLOAD, tenantId, outcomeUpdateRatio: 0.2 });
  const rename = (id: string) => id.replace(`out-${seed}-`, "out-");
  return [
    ...log.registry,
    ...log.outcomes.map((o) => ({ ...o, outcome_id: rename(o.outcome_id) })),
    ...log.escalations.map((e) => ({
      ...e,
      source_outcome_id: rename(e.source_outcome_id),
      target_outcome_id: rename(e.target_outcome_id),
    })),
  ];
}

/** The reference model's graph of one tenant, as it lies in a database several tenants share. */
function scopedModel(events: readonly ProjectorEvent[], tenant: string): ReferenceModel {
  const model = new ReferenceModel(tenant);
  const phase = (event: ProjectorEvent) =>
    event.kind === "outcome-created" ? 1 : event.kind === "escalation-edge" ? 2 : 0;
  for (const event of [...events].sort((a, b) => phase(a) - phase(b))) model.apply(event);
  return model;
}

/**
 * Two tenants in one database, with the same agent, tool, workflow and outcome ids: every node
 * carries its tenant, nothing is shared, and each tenant's §4 report is its own graph's.
 */
describe("tenants sharing one database, on real servers", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("tenants", { TENANTS: "acme,globex" });
    await harness.clearGraph();
  });
  afterAll(async () => {
    // The database as a one-tenant service expects it: no tenant's nodes, no composite constraints.
    await harness?.clearGraph();
    for (const name of TENANT_CONSTRAINT_NAMES)
      await harness?.driver.executeQuery(`DROP CONSTRAINT ${name} IF EXISTS`, {}, { database: "neo4j" });
    await harness?.close();
  });

  it("two tenants with identical ids never share a node, a count, a declared flag or a report row", async () => {
    const acme = tenantLog(11, "acme");
    const globex = tenantLog(12, "globex");
    await harness.startProjector();
    await harness.publish([...acme, ...globex].filter((e) => e.kind.startsWith("registry")));
    await harness.waitForCaughtUp();
    await harness.publish([...acme, ...globex].filter((e) => !e.kind.startsWith("registry")));
    await harness.waitForCaughtUp();

    const graph = await harness.dump();
    const [acmeNodes, acmeRels] = scopedModel(acme, "acme").parts();
    const [globexNodes, globexRels] = scopedModel(globex, "globex").parts();
    const expected = canonicalize([...acmeNodes, ...globexNodes], [...acmeRels, ...globexRels]);
    expect(diffGraphs(expected, graph)).toEqual([]);
    // The ids do collide: the same agent and outcome ids exist once per tenant.
    const view = new GraphView(graph);
    expect(view.node("Agent", "acme/os-agt-001")).toMatchObject({ tenant_id: "acme" });
    expect(view.node("Agent", "globex/os-agt-001")).toMatchObject({ tenant_id: "globex" });
    expect(view.node("Outcome", "acme/out-0")).toBeDefined();
    expect(view.node("Outcome", "globex/out-0")).toBeDefined();

    for (const [tenant, events] of [
      ["acme", acme],
      ["globex", globex],
    ] as const) {
      const agent = (events.find((e) => e.kind === "outcome-created") as { agent_id: string }).agent_id;
      const report = await governanceReport(
        harness.graph(),
        "neo4j",
        TERMINALS,
        { id: agent, limit: 50 },
        {
          id: tenant,
          scoped: true,
        },
      );
      expect(report, tenant).toEqual(expectedReport(referenceGraph(events), TERMINALS, agent, 50));
    }
    await harness.stopProjectors();
  });

  it("a tombstone deregisters only its tenant's agent; one that names no tenant is dead-lettered", async () => {
    await harness.startProjector();
    const agent = "os-agt-001";
    const before = new GraphView(await harness.dump());
    const version = Number(before.node("Agent", `acme/${agent}`)?.registry_version) + 1;
    const topic = harness.names.source["registry-mutation"];
    await harness.sendRaw(topic, [
      { key: registryKey("acme", agent), value: null, headers: { [HEADER.registryVersion]: String(version) } },
      { key: agent, value: null, headers: { [HEADER.registryVersion]: String(version + 5) } },
    ]);
    await harness.waitForCaughtUp();
    const after = new GraphView(await harness.dump());
    expect(after.node("Agent", `acme/${agent}`)).toMatchObject({ status: "deregistered", registry_version: version });
    expect(after.node("Agent", `globex/${agent}`)).toEqual(before.node("Agent", `globex/${agent}`));

    const dead: string[] = [];
    await readTopicsToEnd(harness.kafka, [harness.names.deadLetter["registry-mutation"]], (record) => {
      dead.push(`${record.key?.toString()} ${record.headers[HEADER.errorMessage]?.toString()}`);
    });
    expect(dead).toEqual([expect.stringMatching(/^os-agt-001 a tombstone must name its tenant/)]);
    await harness.stopProjectors();
  });

  it("a database that changes between shared and one tenant's is refused at start-up, in one line naming it", async () => {
    // The graph the tests above left: two tenants' nodes, identical ids. Served by one tenant, the
    // spec's unscoped MERGEs would take one tenant's nodes for another's (and §6 cannot be created).
    const alone = harness.startProjector({ TENANTS: "acme" });
    await expect(alone).rejects.toThrow(StartupError);
    await expect(alone).rejects.toThrow(
      /^Neo4j at \S+: database "neo4j" serves one tenant but holds Agent nodes of tenant "(acme|globex)", projected while several tenants shared it/,
    );

    // The other way round: a node a one-tenant service wrote has no tenant to be scoped by.
    await harness.clearGraph();
    await harness.driver.executeQuery("CREATE (:Agent {agent_id: 'unscoped-agent'})", {}, { database: "neo4j" });
    const shared = harness.startProjector();
    await expect(shared).rejects.toThrow(
      /^Neo4j at \S+: database "neo4j" is shared by several tenants but holds Agent nodes without tenant_id/,
    );
  });

  it("database names are compared as Neo4j compares them: acme=neo4j,globex=NEO4J is one shared database", async () => {
    await harness.clearGraph();
    await harness.startProjector({ TENANTS: "acme=neo4j,globex=NEO4J" });
    await harness.publish([
      snapshot("case-agt-001", { tenant_id: "acme", name: "of acme" }),
      snapshot("case-agt-001", { tenant_id: "globex", name: "of globex" }),
    ]);
    await harness.waitForCaughtUp();
    const view = new GraphView(await harness.dump());
    expect(view.node("Agent", "acme/case-agt-001")).toMatchObject({ tenant_id: "acme", name: "of acme" });
    expect(view.node("Agent", "globex/case-agt-001")).toMatchObject({ tenant_id: "globex", name: "of globex" });
    await harness.stopProjectors();
  });
});
