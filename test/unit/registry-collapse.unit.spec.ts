import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RegistryEvent } from "../../src/model/events.js";
import { collapseRegistry, projectRegistry } from "../../src/projection/registry.js";
import { snapshot, tombstone, tool } from "../support/builders.js";
import { ReferenceModel } from "../support/reference-model.js";

const agents = ["fin-agt-001", "fin-agt-002", "ops-agt-003"];

const registryEvent = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .record({
        agent: fc.constantFrom(...agents),
        version: fc.integer({ min: 1, max: 6 }),
        tools: fc.subarray(["t1", "t2", "t3"]),
        path: fc.option(fc.subarray(agents)),
      })
      .map(
        ({ agent, version, tools, path }): RegistryEvent =>
          snapshot(agent, { registry_version: version, tools: tools.map(tool), escalation_path: path }),
      ),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({ agent: fc.constantFrom(...agents), version: fc.integer({ min: 1, max: 6 }) })
      .map(({ agent, version }): RegistryEvent => tombstone(agent, version)),
  },
);

describe("collapseRegistry", () => {
  it("leaves the graph as applying every event in order would, for any prefix state and batch", () => {
    fc.assert(
      fc.property(
        fc.array(registryEvent, { maxLength: 6 }),
        fc.array(registryEvent, { maxLength: 12 }),
        (before, batch) => {
          const inOrder = new ReferenceModel();
          const collapsed = new ReferenceModel();
          for (const event of before) {
            inOrder.apply(event);
            collapsed.apply(event);
          }
          for (const event of batch) inOrder.apply(event);
          const { rounds } = collapseRegistry(batch.map((event, i) => ({ i, event })));
          for (const round of rounds) {
            for (const unit of [...round.tombstones, ...round.snapshots]) collapsed.apply(unit.event);
          }
          expect(collapsed.canonical()).toEqual(inOrder.canonical());
        },
      ),
      { seed: 20261130, numRuns: 500 },
    );
  });

  it("drops snapshots below an earlier version and exact repeats, keeping the last of equals", () => {
    const batch = [
      snapshot("fin-agt-001", { registry_version: 3, name: "b" }),
      snapshot("fin-agt-001", { registry_version: 2, name: "a" }),
      snapshot("fin-agt-001", { registry_version: 3, name: "b" }),
      snapshot("fin-agt-001", { registry_version: 1, name: "d" }),
      snapshot("fin-agt-002", { registry_version: 1 }),
    ].map((event, i) => ({ i, event }));
    const { rounds, superseded } = collapseRegistry(batch);
    expect(rounds.map((round) => round.snapshots.map((unit) => unit.i))).toEqual([[2, 4]]);
    expect(superseded.sort()).toEqual([0, 1, 3]);
  });

  it("keeps rising snapshots of one agent in successive rounds, so intermediate effects are not lost", () => {
    const batch = [
      snapshot("fin-agt-001", { registry_version: 1, escalation_path: ["fin-agt-002"] }),
      snapshot("fin-agt-001", { registry_version: 2, escalation_path: [] }),
    ].map((event, i) => ({ i, event }));
    expect(collapseRegistry(batch).rounds.map((round) => round.snapshots.map((unit) => unit.i))).toEqual([[0], [1]]);
  });

  it("splits a tombstone between snapshots of one agent into ordered rounds", () => {
    const batch = [
      snapshot("fin-agt-001"),
      tombstone("fin-agt-001", 2),
      snapshot("fin-agt-001", { registry_version: 3 }),
    ];
    const plan = projectRegistry(batch.map((event, i) => ({ i, event })));
    expect(plan.statements.map((statement) => statement.name)).toEqual([
      "3.1",
      "3.2",
      "3.1-tombstone",
      "3.1",
      "3.2",
      "registry-history",
    ]);
  });
});
