import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createGroupAdmin, resetOffsets } from "../../src/adapters/kafka/group-admin.js";
import { createTopicReader } from "../../src/adapters/kafka/read-topic.js";
import { createAvroDecoder } from "../../src/adapters/registry/schema-registry.js";
import { CONSTRAINT_NAMES } from "../../src/cypher/s6-constraints.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import { diffGraphs } from "../../src/model/graph.js";
import { rebuildRegistry } from "../../src/operations/rebuild.js";
import { governanceReport } from "../../src/report.js";
import { STREAMS } from "../../src/topics.js";
import { generateEventLog, prng, SMALL_WORKLOAD } from "../../workload/generate.js";
import { escalation, outcome, snapshot } from "../support/builders.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";

const inOrder = (log: ReturnType<typeof generateEventLog>): ProjectorEvent[] => [
  ...log.registry,
  ...log.outcomes,
  ...log.escalations,
];

describe("the projector on real Kafka, registry and Neo4j", () => {
  let harness: Harness;

  beforeAll(async () => {
    harness = await Harness.create("projector");
    await harness.clearGraph();
  });
  afterEach(() => harness.stopProjectors());
  afterAll(() => harness?.close());

  it("creates the §6 constraints at start-up, before any write", async () => {
    await harness.driver.executeQuery("DROP CONSTRAINT agent_agent_id IF EXISTS");
    await harness.startProjector();
    const { records } = await harness.driver.executeQuery("SHOW CONSTRAINTS YIELD name RETURN collect(name) AS names");
    expect(records[0]?.get("names")).toEqual(expect.arrayContaining([...CONSTRAINT_NAMES]));
    await harness.stopProjectors();
  });

  it("redelivery: the log published twice plus a random 30% a third time equals publishing it once", async () => {
    const log = inOrder(generateEventLog(7));
    const random = prng(99);
    await harness.clearGraph();
    await harness.startProjector();
    for (const phase of [
      log.filter((e) => e.kind.startsWith("registry")),
      log.filter((e) => e.kind === "outcome-created"),
      log.filter((e) => e.kind === "escalation-edge"),
    ]) {
      await harness.publish(phase);
      await harness.publish(phase);
      await harness.publish(phase.filter(() => random() < 0.3));
      await harness.waitForCaughtUp();
    }
    expect(diffGraphs(referenceGraph(log), await harness.dump())).toEqual([]);

    // Replay: rewind the group to the start and consume everything again.
    const before = await harness.dump();
    await harness.stopProjectors();
    await resetOffsets(
      harness.admin,
      harness.config.kafka.group,
      STREAMS.map((s) => harness.names.source[s]),
      { earliest: true },
    );
    await harness.startProjector();
    await harness.waitForCaughtUp();
    expect(diffGraphs(before, await harness.dump())).toEqual([]);

    // §7: wipe the registry projection and rebuild it from the registry topic; compared as multisets.
    await harness.stopProjectors();
    await rebuildRegistry({
      graph: harness.graph(),
      admin: createGroupAdmin(harness.admin),
      reader: createTopicReader(harness.kafka),
      sink: harness.sink(),
      groupId: harness.config.kafka.group,
      topic: harness.names.source["registry-mutation"],
      decoder: createAvroDecoder(harness.registry),
      tenants: harness.config.tenants,
      shared: new Set(),
      rules: { servedTenants: new Set(["default"]), maxListLength: 1000, maxIdLength: 256, maxTextLength: 4096 },
    });
    expect(await harness.dump()).toEqual(before);
    await harness.startProjector();
    await harness.waitForCaughtUp();
    expect(await harness.dump()).toEqual(before);
    await harness.stopProjectors();
  });

  it("property: generated logs (registry, then outcomes, then escalations) project to the reference model's graph", async () => {
    const seeds = (process.env.PROPERTY_SEEDS ?? "101,202,303").split(",").map(Number);
    await harness.startProjector();
    for (const seed of seeds) {
      await harness.clearGraph();
      const log = generateEventLog(seed, {
        ...SMALL_WORKLOAD,
        agents: 8 + (seed % 7),
        outcomes: 40,
        escalations: 25,
        editsPerAgent: 1 + (seed % 2),
      });
      const events = inOrder(log);
      for (const phase of ["registry", "outcome", "escalation"]) {
        await harness.publish(events.filter((e) => e.kind.startsWith(phase)));
        await harness.waitForCaughtUp();
      }
      const diff = diffGraphs(referenceGraph(events), await harness.dump());
      expect(diff, `seed ${seed}`).toEqual([]);
    }
    await harness.stopProjectors();
  });

  it("§4 queries return the expected rows on a fixture graph (terminals excluded from reachability)", async () => {
    await harness.clearGraph();
    await harness.startProjector();
    const fixture: ProjectorEvent[] = [
      snapshot("os-agt-001", { escalation_path: ["human operator"] }),
      snapshot("os-agt-004", { escalation_path: ["Human compliance owner"] }),
      snapshot("fin-agt-010", { escalation_path: ["fin-agt-011", "human operator"] }),
      snapshot("fin-agt-011", { escalation_path: ["os-agt-004"] }),
      snapshot("ops-agt-020", { escalation_path: ["fin-agt-099"] }),
      snapshot("ops-agt-021", { escalation_path: ["os-agt-001"] }),
    ];
    await harness.publish(fixture);
    await harness.waitForCaughtUp();
    await harness.publish([
      outcome("fx-1", "fin-agt-010", { status: "escalated", correlation_id: "c-1", created_at: 1_000 }),
      outcome("fx-2", "fin-agt-011", { created_at: 2_000 }),
      outcome("fx-3", "ops-agt-020", { created_at: 3_000 }),
      outcome("fx-4", "fin-agt-010", { created_at: 4_000 }),
    ]);
    await harness.waitForCaughtUp();
    await harness.publish([
      escalation("fx-1", "fx-2", 10),
      escalation("fx-3", "fx-4", 20),
      escalation("fx-3", "fx-4", 20),
    ]);
    await harness.waitForCaughtUp();
    const report = await governanceReport(harness.graph(), "neo4j", ["os-agt-001", "os-agt-004"], {
      id: "fin-agt-010",
      limit: 50,
    });
    expect(report.produced?.rows).toEqual([
      { outcome_id: "fx-4", status: "succeeded", correlation_id: null },
      { outcome_id: "fx-1", status: "escalated", correlation_id: "c-1" },
    ]);
    expect(report.undeclaredEscalations).toEqual([
      {
        from_agent: "ops-agt-020",
        to_agent: "fin-agt-010",
        observed_count: 1,
        last_observed_at: Date.UTC(2026, 0, 1) + 20_000,
      },
    ]);
    expect(report.declaredNeverExercised).toEqual([
      { from_agent: "fin-agt-011", to_agent: "os-agt-004" },
      { from_agent: "ops-agt-020", to_agent: "fin-agt-099" },
      { from_agent: "ops-agt-021", to_agent: "os-agt-001" },
    ]);
    // fin-agt-099 is only someone's escalation target: it has no path onward, and neither has ops-agt-020.
    expect(report.agentsWithoutReachableTerminal).toEqual([
      { agent_without_reachable_terminal: "fin-agt-099" },
      { agent_without_reachable_terminal: "ops-agt-020" },
    ]);
    await harness.stopProjectors();
  });
});
