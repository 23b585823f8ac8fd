import { expect } from "vitest";
import type { ProjectorEvent } from "../../src/model/events.js";
import { escalation, outcome, snapshot, tombstone, tool, workflow } from "./builders.js";
import type { GraphView } from "./graph-view.js";

/**
 * Scenarios written once over "a graph that consumes steps of events": the unit suite runs them on the
 * reference model, the integration suite through the projector into Neo4j. Each step is consumed in
 * order; `deliveries` (a parameter of every run) repeats each step, as at-least-once delivery may.
 */
export interface Scenario {
  readonly name: string;
  readonly steps: readonly (readonly ProjectorEvent[])[];
  check(graph: GraphView): void;
}

const A = "fin-agt-010";
const B = "fin-agt-011";
const C = "ops-agt-020";

export const checklistScenarios: readonly Scenario[] = [
  {
    name: "§7 a removed tool deletes AUTHORIZED_FOR and a removed workflow deletes OWNS_WORKFLOW",
    steps: [
      [
        snapshot(A, {
          registry_version: 1,
          tools: [tool("t1"), tool("t2")],
          owned_workflows: [workflow("w1"), workflow("w2")],
        }),
      ],
      [snapshot(A, { registry_version: 2, tools: [tool("t2")], owned_workflows: [workflow("w2")] })],
    ],
    check(graph) {
      expect(graph.rel("AUTHORIZED_FOR", A, "t1")).toHaveLength(0);
      expect(graph.rel("AUTHORIZED_FOR", A, "t2")).toHaveLength(1);
      expect(graph.rel("OWNS_WORKFLOW", A, "w1")).toHaveLength(0);
      expect(graph.rel("OWNS_WORKFLOW", A, "w2")).toHaveLength(1);
      expect(graph.node("Tool", "t1")).toMatchObject({ tool_id: "t1", name: "Tool t1" });
    },
  },
  {
    name: "§7 a removed escalation target flips declared to false",
    steps: [
      [snapshot(A, { registry_version: 1, escalation_path: [B, C] })],
      [snapshot(A, { registry_version: 2, escalation_path: [C] })],
    ],
    check(graph) {
      expect(graph.rel("CAN_ESCALATE_TO", A, B)).toEqual([{ declared: false, observed_count: 0 }]);
      expect(graph.rel("CAN_ESCALATE_TO", A, C)).toEqual([{ declared: true, observed_count: 0 }]);
    },
  },
  {
    name: "§7 an observed-only edge keeps declared false",
    steps: [
      [snapshot(A, { escalation_path: [C] }), snapshot(B)],
      [outcome("o-a", A), outcome("o-b", B)],
      [escalation("o-a", "o-b", 50)],
      [snapshot(A, { registry_version: 2, escalation_path: [C] })],
    ],
    check(graph) {
      const [edge] = graph.rel("CAN_ESCALATE_TO", A, B);
      expect(edge).toMatchObject({ declared: false, observed_count: 1 });
    },
  },
  {
    name: "§7 human terminals never become Agent nodes",
    steps: [[snapshot(A, { escalation_path: ["human operator", "Human compliance owner", B] })]],
    check(graph) {
      expect(graph.nodeKeys("Agent").sort()).toEqual([A, B]);
      expect(graph.node("Agent", B)).toEqual({ agent_id: B });
    },
  },
  {
    name: "§7 an agent with an empty tools list keeps its workflows and escalation path",
    steps: [[snapshot(A, { tools: [], owned_workflows: [workflow("w1")], escalation_path: [B] })]],
    check(graph) {
      expect(graph.rel("OWNS_WORKFLOW", A, "w1")).toHaveLength(1);
      expect(graph.rel("CAN_ESCALATE_TO", A, B)).toHaveLength(1);
      expect(graph.node("Agent", A)).toMatchObject({ status: "active", registry_version: 1 });
    },
  },
  {
    name: "§7 a null escalation_path revokes every declared edge",
    steps: [
      [snapshot(A, { registry_version: 1, escalation_path: [B, C] })],
      [snapshot(A, { registry_version: 2, escalation_path: null })],
    ],
    check(graph) {
      expect(graph.rel("CAN_ESCALATE_TO", A, B)).toEqual([{ declared: false, observed_count: 0 }]);
      expect(graph.rel("CAN_ESCALATE_TO", A, C)).toEqual([{ declared: false, observed_count: 0 }]);
    },
  },
  {
    name: "§7 observed_count is idempotent under redelivery of the same outcome pair",
    steps: [
      [snapshot(A, { escalation_path: [B] }), snapshot(B)],
      [outcome("o-1", A), outcome("o-2", B), outcome("o-3", B)],
      [escalation("o-1", "o-2", 10), escalation("o-1", "o-2", 10)],
      [escalation("o-1", "o-2", 10), escalation("o-1", "o-3", 20)],
      [escalation("o-1", "o-3", 20)],
    ],
    check(graph) {
      expect(graph.rel("CAN_ESCALATE_TO", A, B)).toEqual([
        { declared: true, observed_count: 2, last_observed_at: Date.UTC(2026, 0, 1) + 20_000 },
      ]);
      expect(graph.count("OBSERVED")).toBe(2);
      expect(graph.count("ESCALATED_TO")).toBe(2);
    },
  },
  {
    name: "§7 declared and observed halves never reset each other",
    steps: [
      [snapshot(A), snapshot(B)],
      [outcome("o-1", A), outcome("o-2", B)],
      [escalation("o-1", "o-2", 10)],
      [snapshot(A, { registry_version: 2, escalation_path: [B] })],
      [snapshot(A, { registry_version: 3, escalation_path: [] })],
    ],
    check(graph) {
      expect(graph.rel("CAN_ESCALATE_TO", A, B)).toEqual([
        { declared: false, observed_count: 1, last_observed_at: Date.UTC(2026, 0, 1) + 10_000 },
      ]);
    },
  },
  {
    name: "an older registry snapshot changes nothing (version guard); an equal one re-applies",
    steps: [
      [snapshot(A, { registry_version: 5, tools: [tool("t2")], escalation_path: [C] })],
      [snapshot(A, { registry_version: 3, tools: [tool("t1"), tool("t2")], escalation_path: [B, C], name: "old" })],
      [snapshot(A, { registry_version: 5, tools: [tool("t2")], escalation_path: [C] })],
    ],
    check(graph) {
      expect(graph.rel("AUTHORIZED_FOR", A, "t1")).toHaveLength(0);
      expect(graph.rel("CAN_ESCALATE_TO", A, B)).toHaveLength(0);
      expect(graph.node("Agent", A)).toMatchObject({ registry_version: 5, name: `Agent ${A}` });
    },
  },
  {
    name: "several snapshots of one agent in one batch end in the highest version's state",
    steps: [
      [
        snapshot(A, { registry_version: 2, tools: [tool("t2")] }),
        snapshot(A, { registry_version: 4, tools: [tool("t4")], escalation_path: [B] }),
        snapshot(A, { registry_version: 3, tools: [tool("t3")], escalation_path: [C] }),
      ],
    ],
    check(graph) {
      expect(graph.rel("AUTHORIZED_FOR", A, "t4")).toHaveLength(1);
      expect(graph.count("AUTHORIZED_FOR")).toBe(1);
      expect(graph.rel("CAN_ESCALATE_TO", A, C)).toHaveLength(0);
      expect(graph.node("Agent", A)).toMatchObject({ registry_version: 4 });
    },
  },
  {
    name: "a tombstone deregisters the agent and removes its grants and declarations",
    steps: [
      [snapshot(A, { tools: [tool("t1")], owned_workflows: [workflow("w1")], escalation_path: [B] })],
      [tombstone(A), tombstone(C)],
    ],
    check(graph) {
      expect(graph.node("Agent", A)).toMatchObject({ status: "deregistered", registry_version: 2 });
      expect(graph.count("AUTHORIZED_FOR") + graph.count("OWNS_WORKFLOW")).toBe(0);
      expect(graph.rel("CAN_ESCALATE_TO", A, B)).toEqual([{ declared: false, observed_count: 0 }]);
      expect(graph.node("Agent", C)).toBeUndefined();
    },
  },
  {
    name: "a late tombstone does not deregister an agent registered again at a higher version",
    steps: [
      [snapshot(A, { registry_version: 1, tools: [tool("t1")], escalation_path: [B] })],
      [tombstone(A, 2)],
      [snapshot(A, { registry_version: 3, tools: [tool("t3")], escalation_path: [C] })],
      [tombstone(A, 2)],
    ],
    check(graph) {
      expect(graph.node("Agent", A)).toMatchObject({ status: "active", registry_version: 3 });
      expect(graph.node("Agent", A)?.registry_deleted).toBeUndefined();
      expect(graph.rel("AUTHORIZED_FOR", A, "t3")).toHaveLength(1);
      expect(graph.rel("CAN_ESCALATE_TO", A, C)).toEqual([{ declared: true, observed_count: 0 }]);
      expect(graph.rel("CAN_ESCALATE_TO", A, B)).toEqual([{ declared: false, observed_count: 0 }]);
    },
  },
  {
    name: "a late copy of the snapshot a tombstone deleted restores nothing, even at the same version",
    steps: [
      [snapshot(A, { registry_version: 4, tools: [tool("t1")], escalation_path: [B] })],
      [tombstone(A, 4)],
      [snapshot(A, { registry_version: 4, tools: [tool("t1")], escalation_path: [B] })],
      [snapshot(A, { registry_version: 3, tools: [tool("t0")], escalation_path: [C] })],
    ],
    check(graph) {
      expect(graph.node("Agent", A)).toMatchObject({
        status: "deregistered",
        registry_version: 4,
        registry_deleted: true,
      });
      expect(graph.count("AUTHORIZED_FOR")).toBe(0);
      expect(graph.rel("CAN_ESCALATE_TO", A, B)).toEqual([{ declared: false, observed_count: 0 }]);
      expect(graph.rel("CAN_ESCALATE_TO", A, C)).toHaveLength(0);
    },
  },
  {
    name: "a tombstone for an agent never projected fences every snapshot at or below its version, and is no agent",
    steps: [
      [snapshot(B, { escalation_path: [A] })],
      [tombstone(A, 3)],
      [snapshot(A, { registry_version: 2, tools: [tool("t1")], escalation_path: [C] })],
      [snapshot(A, { registry_version: 3, tools: [tool("t2")] })],
    ],
    check(graph) {
      // A stays what B's escalation path made it: a bare target, no registry properties, no grants.
      expect(graph.node("Agent", A)).toEqual({ agent_id: A });
      expect(graph.count("AUTHORIZED_FOR")).toBe(0);
      expect(graph.rel("CAN_ESCALATE_TO", A, C)).toHaveLength(0);
      expect(graph.nodeKeys("Agent").sort()).toEqual([A, B].sort());
    },
  },
  {
    name: "an outcome re-emitted with another status and agent keeps the newest record's values and producer",
    steps: [
      [snapshot(A), snapshot(B)],
      [outcome("o-1", A, { status: "pending", created_at: Date.UTC(2026, 0, 2) })],
      [outcome("o-1", B, { status: "succeeded", created_at: Date.UTC(2026, 0, 3) })],
    ],
    check(graph) {
      expect(graph.node("Outcome", "o-1")).toMatchObject({
        agent_id: B,
        status: "succeeded",
        created_at: Date.UTC(2026, 0, 3),
      });
      expect(graph.rel("PRODUCED", B, "Outcome:o-1")).toHaveLength(1);
      expect(graph.count("PRODUCED")).toBe(1);
    },
  },
  {
    name: "a tool two agents' snapshots name differently takes the most recent edit's name, in any order",
    steps: [
      [snapshot(B, { tools: [{ tool_id: "t9", name: "newer" }], occurred_at: Date.UTC(2026, 1, 2) })],
      [snapshot(A, { tools: [{ tool_id: "t9", name: "older" }], occurred_at: Date.UTC(2026, 1, 1) })],
      [snapshot(C, { owned_workflows: [workflow("w9")], occurred_at: Date.UTC(2026, 1, 3) })],
      [
        snapshot(A, {
          registry_version: 2,
          owned_workflows: [{ ...workflow("w9"), version: "2.0" }],
          occurred_at: Date.UTC(2026, 1, 3),
        }),
      ],
    ],
    check(graph) {
      expect(graph.node("Tool", "t9")).toMatchObject({ name: "newer", registry_edited_by: B });
      // A tie on occurred_at goes to the greater agent_id (ops-agt-020 > fin-agt-010).
      expect(graph.node("Workflow", "w9")).toMatchObject({ version: "1.0", registry_edited_by: C });
      // A's second snapshot names no tool: its grant goes, the node keeps the newest edit's name.
      expect(graph.rel("AUTHORIZED_FOR", B, "t9")).toHaveLength(1);
      expect(graph.count("AUTHORIZED_FOR")).toBe(1);
    },
  },
  {
    name: "an escalation between two outcomes of one agent changes no CAN_ESCALATE_TO edge",
    steps: [[snapshot(A)], [outcome("o-1", A), outcome("o-2", A)], [escalation("o-1", "o-2")]],
    check(graph) {
      expect(graph.count("ESCALATED_TO")).toBe(1);
      expect(graph.count("CAN_ESCALATE_TO")).toBe(0);
      expect(graph.count("OBSERVED")).toBe(0);
      expect(graph.rel("PRODUCED", A, "Outcome:o-1")).toHaveLength(1);
    },
  },
];
