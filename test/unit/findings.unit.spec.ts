import { describe, expect, it } from "vitest";
import { finding, findingId } from "../../src/model/findings.js";
import { projectEscalations } from "../../src/projection/escalations.js";
import { findingStatements, recordedFindings } from "../../src/projection/findings.js";
import { projectRegistry } from "../../src/projection/registry.js";
import { escalation, snapshot } from "../support/builders.js";

describe("finding ids", () => {
  it("depend on tenant, kind and the two agents only, and tell each apart", () => {
    const id = findingId("default", "undeclared-escalation", "cl-agt-001", "cl-agt-002");
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(findingId("default", "undeclared-escalation", "cl-agt-001", "cl-agt-002")).toBe(id);
    const others = [
      findingId("acme", "undeclared-escalation", "cl-agt-001", "cl-agt-002"),
      findingId("default", "undeclared-escalation-resolved", "cl-agt-001", "cl-agt-002"),
      findingId("default", "undeclared-escalation", "cl-agt-002", "cl-agt-001"),
      // No separator ambiguity: the parts are JSON-encoded.
      findingId("default", "undeclared-escalation", "cl-agt-001cl", "-agt-002"),
    ];
    expect(new Set([id, ...others]).size).toBe(5);
  });

  it("a resolution names the finding it resolves", () => {
    const resolution = finding("default", "undeclared-escalation-resolved", "cl-agt-001", "cl-agt-002");
    expect(resolution.resolves).toBe(
      finding("default", "undeclared-escalation", "cl-agt-001", "cl-agt-002").finding_id,
    );
    expect(finding("default", "undeclared-escalation", "cl-agt-001", "cl-agt-002").resolves).toBeNull();
  });
});

describe("the outbox statements", () => {
  it("standalone findings first, then resolutions, each in id order; nothing when nothing was found", () => {
    const a = finding("default", "undeclared-escalation", "cl-agt-001", "cl-agt-002");
    const b = finding("default", "undeclared-escalation", "cl-agt-003", "cl-agt-004");
    const r = finding("default", "undeclared-escalation-resolved", "cl-agt-001", "cl-agt-002");
    const statements = findingStatements([r, b, a], false);
    expect(statements.map((s) => s.params.rows.map((row) => row.finding_id))).toEqual([
      [a, b].map((f) => f.finding_id).sort(),
      [r.finding_id],
    ]);
    expect(findingStatements([], false)).toEqual([]);
  });

  it("counts only the findings a transaction recorded for the first time", () => {
    const counters = {
      nodesCreated: 0,
      nodesDeleted: 0,
      relationshipsCreated: 0,
      relationshipsDeleted: 0,
      propertiesSet: 0,
    };
    const records = [
      { finding_id: "a", tenant_id: "default", kind: "undeclared-escalation", existed: false },
      { finding_id: "b", tenant_id: "default", kind: "undeclared-escalation", existed: true },
    ];
    expect(
      recordedFindings([
        { name: "findings", records, counters },
        { name: "3.4", records, counters },
      ]),
    ).toEqual([{ tenant: "default", kind: "undeclared-escalation" }]);
  });
});

describe("the projections leave undeclared escalations to the event-time judge", () => {
  it("§3.4 records no finding when it is applied: whether it was authorised is decided at its observed_at", () => {
    const plan = projectEscalations([{ i: 0, event: { ...escalation("o-1", "o-2"), tenant_id: "acme" } }]);
    expect(plan.followUp).toBeUndefined();
    // It marks the observation for the judge instead.
    expect(plan.statements[0]?.cypher).toContain("obs.unjudged");
  });

  it("§3.2 records no finding when it is applied: resolutions and reachability are judged at event time", () => {
    const event = { ...snapshot("cl-agt-001", { escalation_path: ["cl-agt-002"] }), tenant_id: "acme" };
    const plan = projectRegistry([{ i: 0, event }]);
    expect(plan.followUp).toBeUndefined();
    expect(plan.statements.map((statement) => statement.name)).toEqual(["3.1", "3.2", "registry-history"]);
  });
});
