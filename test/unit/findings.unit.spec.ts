import { describe, expect, it } from "vitest";
import {
  escalationResolutions,
  finding,
  findingId,
  type ObservedRow,
  undeclaredEscalations,
} from "../../src/model/findings.js";
import { projectEscalations } from "../../src/projection/escalations.js";
import { findingStatements, recordedFindings } from "../../src/projection/findings.js";
import { projectRegistry } from "../../src/projection/registry.js";
import { escalation, snapshot } from "../support/builders.js";

const row = (overrides: Partial<ObservedRow>): ObservedRow => ({
  tenant_id: "default",
  already_counted: false,
  from_agent: "cl-agt-001",
  to_agent: "cl-agt-002",
  observed_count: 1,
  declared: false,
  ...overrides,
});

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

describe("which §3.4 rows become an undeclared-escalation finding", () => {
  it("the first observation counted on an undeclared edge", () => {
    expect(undeclaredEscalations([row({})]).map((f) => f.finding_id)).toEqual([
      findingId("default", "undeclared-escalation", "cl-agt-001", "cl-agt-002"),
    ]);
  });

  it("several first observations of one edge in one statement make one finding, whatever count each row saw", () => {
    const rows = [row({ observed_count: 3 }), row({ observed_count: 1 }), row({ observed_count: 2 })];
    expect(undeclaredEscalations(rows)).toHaveLength(1);
  });

  it("nothing for a declared edge, a redelivered observation, or an edge observed before", () => {
    expect(undeclaredEscalations([row({ declared: true })])).toEqual([]);
    expect(undeclaredEscalations([row({ already_counted: true })])).toEqual([]);
    expect(undeclaredEscalations([row({ observed_count: 2 })])).toEqual([]);
    // Two new observations on an edge that had one: the count went 1 → 3, not from 0.
    expect(undeclaredEscalations([row({ observed_count: 3 }), row({ observed_count: 3 })])).toEqual([]);
  });

  it("a redelivered row next to a new one on a fresh edge still finds the first observation", () => {
    // Impossible in one statement for the same pair, but two pairs of one edge: one counted before (1), one now (2).
    expect(
      undeclaredEscalations([row({ already_counted: true, observed_count: 2 }), row({ observed_count: 2 })]),
    ).toEqual([]);
  });

  it("edges and tenants are told apart", () => {
    const rows = [row({}), row({ to_agent: "cl-agt-003" }), row({ tenant_id: "acme" })];
    expect(undeclaredEscalations(rows)).toHaveLength(3);
  });
});

describe("which §3.2 rows may resolve a finding", () => {
  it("one resolution per declared edge that had observations, repeated targets once", () => {
    const found = escalationResolutions([
      { tenant_id: "default", agent_id: "cl-agt-001", declared_observed: ["cl-agt-002", "cl-agt-002"] },
      { tenant_id: "default", agent_id: "cl-agt-005", declared_observed: [] },
    ]);
    expect(found).toEqual([
      {
        ...finding("default", "undeclared-escalation-resolved", "cl-agt-001", "cl-agt-002"),
        // No declaring change named in the row: no evidence of it.
        registry_version: null,
        registry_occurred_at: null,
      },
    ]);
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

describe("the projections' follow-up", () => {
  const counters = {
    nodesCreated: 0,
    nodesDeleted: 0,
    relationshipsCreated: 0,
    relationshipsDeleted: 0,
    propertiesSet: 0,
  };

  it("§3.4's rows become findings of the tenant of the event they came from, with one database per tenant too", () => {
    const event = { ...escalation("o-1", "o-2"), tenant_id: "acme" };
    const plan = projectEscalations([{ i: 0, event }]);
    const observed = [
      {
        i: 0,
        produced: true,
        same_agent: false,
        already_counted: false,
        from_agent: "cl-agt-001",
        to_agent: "cl-agt-002",
        observed_count: 1,
        declared: false,
      },
    ];
    const statements = plan.followUp?.([{ name: "3.4", records: observed, counters }]);
    expect(statements?.flatMap((statement) => statement.params.rows)).toEqual([
      {
        ...finding("acme", "undeclared-escalation", "cl-agt-001", "cl-agt-002"),
        // The evidence: the escalation that opened it.
        observed_at: event.observed_at,
        source_outcome_id: "o-1",
        target_outcome_id: "o-2",
      },
    ]);
  });

  it("§3.2's rows become candidate resolutions of the snapshot's agent", () => {
    const event = { ...snapshot("cl-agt-001", { escalation_path: ["cl-agt-002"] }), tenant_id: "acme" };
    const plan = projectRegistry([{ i: 0, event }]);
    const results = plan.statements.map((statement) => ({
      name: statement.name,
      records: statement.name === "3.2" ? [{ i: 0, declared_observed: ["cl-agt-002"] }] : [{ i: 0 }],
      counters,
    }));
    expect(plan.followUp?.(results).flatMap((statement) => statement.params.rows)).toEqual([
      {
        ...finding("acme", "undeclared-escalation-resolved", "cl-agt-001", "cl-agt-002"),
        // The evidence: the change that declared the edge.
        registry_version: event.registry_version,
        registry_occurred_at: event.occurred_at,
      },
    ]);
  });
});
