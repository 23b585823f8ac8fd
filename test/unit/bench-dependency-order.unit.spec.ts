import { describe, expect, it } from "vitest";
import { workloadSize } from "../../bench/args.js";
import { compareGraphs, countsByType, differenceCount } from "../../bench/lib/correctness.js";
import { dependencyOrderSummary } from "../../bench/loads/dependency-order.js";
import { stagesOf } from "../../bench/peer/correctness.js";
import type { DependencyOrderRun } from "../../bench/results.js";
import { canonicalize } from "../../src/model/graph.js";
import { generateEventLog } from "../../workload/generate.js";

const graph = canonicalize(
  [
    { label: "Agent", props: { agent_id: "a1" } },
    { label: "Agent", props: { agent_id: "a2" } },
    { label: "Outcome", props: { outcome_id: "o1" } },
  ],
  [
    { type: "PRODUCED", from: "Agent:a1", to: "Outcome:o1", props: {} },
    { type: "CAN_ESCALATE_TO", from: "Agent:a1", to: "Agent:a2", props: { declared: true, observed_count: 1 } },
    { type: "ESCALATED_TO", from: "Outcome:o1", to: "Agent:a2", props: {} },
  ],
);

function runOf(system: "projector" | "peer", turn: number, recordsPerSecond: number, missing = 0): DependencyOrderRun {
  const stage = { records: 1, publishSeconds: 0, seconds: 1 };
  return {
    system,
    turn,
    records: 1000,
    seconds: 1000 / recordsPerSecond,
    recordsPerSecond,
    stages: { "registry-mutation": stage, "outcome-created": stage, "escalation-edge": stage },
    cpuSeconds: {},
    cpuSecondsPerRecord: system === "projector" ? 0.001 : 0.002,
    cpuSecondsPerRecordWithNeo4j: null,
    peakRssMiB: system === "projector" ? 200 + turn : 900 + turn,
    graph: countsByType(graph),
    differences: { ...compareGraphs(graph, graph), missingEscalatedTo: missing },
    errors: [],
  };
}

describe("the dependency-order comparison", () => {
  it("publishes the registry, then the outcomes, then the escalations, each stage on its own", () => {
    const log = generateEventLog(3, workloadSize(5, 20, 10));
    const stages = stagesOf("dependency order", log);
    expect(stages.map((stage) => stage.length)).toEqual([
      log.registry.length,
      log.outcomes.length,
      log.escalations.length,
    ]);
    expect(stages[0]).toEqual(log.registry);
    expect(stages[2]).toEqual(log.escalations);
  });

  it("counts the graph a system left by node label and relationship type", () => {
    expect(countsByType(graph)).toEqual({
      nodes: { Agent: 2, Outcome: 1 },
      relationships: { CAN_ESCALATE_TO: 1, ESCALATED_TO: 1, PRODUCED: 1 },
    });
  });

  it("counts every kind of difference from the reference model in one number", () => {
    expect(differenceCount(compareGraphs(graph, graph))).toBe(0);
    const empty = canonicalize([], []);
    const errors = compareGraphs(graph, empty);
    expect(differenceCount(errors)).toBe(
      errors.missingProduced + errors.missingEscalatedTo + errors.wrongObservedCount + errors.wrongDeclared + 3,
    );
    expect(differenceCount(errors)).toBeGreaterThanOrEqual(6);
  });

  it("summarises each system over its turns and gives projector over peer per turn", () => {
    const summary = dependencyOrderSummary(
      [runOf("projector", 1, 6000), runOf("peer", 1, 4000, 3), runOf("projector", 2, 5000), runOf("peer", 2, 5000)],
      countsByType(graph),
    );
    expect(summary.projectorOverPeerPerTurn).toEqual([1.5, 1]);
    expect(summary.projector).toMatchObject({
      recordsPerSecond: 5000,
      cpuSecondsPerRecord: 0.001,
      peakRssMiB: 202,
      differences: 0,
    });
    expect(summary.peer).toMatchObject({ recordsPerSecond: 4000, peakRssMiB: 902, differences: 3 });
    expect(summary.reference.relationships.PRODUCED).toBe(1);
  });

  it("has no peer figures when only the projector ran", () => {
    const summary = dependencyOrderSummary([runOf("projector", 1, 6000)], countsByType(graph));
    expect(summary.peer).toBeNull();
    expect(summary.projectorOverPeerPerTurn).toEqual([null]);
  });
});
