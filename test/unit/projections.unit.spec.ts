import { describe, expect, it } from "vitest";
import { NO_WRITES, type StatementResult } from "../../src/cypher/statement.js";
import { projectEscalations } from "../../src/projection/escalations.js";
import { projectOutcomes } from "../../src/projection/outcomes.js";
import { projectRegistry } from "../../src/projection/registry.js";
import { escalation, outcome, snapshot, tool } from "../support/builders.js";

const result = (name: StatementResult["name"], records: Record<string, unknown>[]): StatementResult => ({
  name,
  records,
  counters: NO_WRITES,
});

describe("projectRegistry", () => {
  it("turns a batch into one §3.1 and one §3.2 statement over the collapsed rows", () => {
    const plan = projectRegistry(
      [
        snapshot("fin-agt-001", {
          event_id: "e1",
          occurred_at: 0,
          registry_version: 1,
          tools: [tool("t1")],
          escalation_path: ["os-agt-001", "human operator"],
        }),
        snapshot("fin-agt-002", { event_id: "e2", occurred_at: 0, registry_version: 7 }),
      ].map((event, i) => ({ i, event })),
    );
    expect(plan.statements.map((s) => s.name)).toEqual(["3.1", "3.2", "registry-history"]);
    // §3.2 runs over the same rows as §3.1, in the same transaction.
    expect(plan.statements[1]?.params).toEqual(plan.statements[0]?.params);
    expect(plan.statements.slice(0, 1).map(({ name, params }) => ({ name, params }))).toMatchInlineSnapshot(`
      [
        {
          "name": "3.1",
          "params": {
            "rows": [
              {
                "agent_id": "fin-agt-001",
                "decision_scope": null,
                "escalation_path": [
                  "os-agt-001",
                  "human operator",
                ],
                "family": "fin",
                "i": 0,
                "name": "Agent fin-agt-001",
                "occurred_at": 0,
                "owned_workflows": [],
                "owner": "team-a",
                "registry_version": 1,
                "status": "active",
                "tenant_id": "default",
                "tools": [
                  {
                    "name": "Tool t1",
                    "tool_id": "t1",
                  },
                ],
              },
              {
                "agent_id": "fin-agt-002",
                "decision_scope": null,
                "escalation_path": null,
                "family": "fin",
                "i": 1,
                "name": "Agent fin-agt-002",
                "occurred_at": 0,
                "owned_workflows": [],
                "owner": "team-a",
                "registry_version": 7,
                "status": "active",
                "tenant_id": "default",
                "tools": [],
              },
            ],
          },
        },
      ]
    `);
    const fates = plan.fates([result("3.1", [{ i: 0 }]), result("3.2", [{ i: 0 }])]);
    expect(Object.fromEntries(fates)).toEqual({ 0: { kind: "applied" }, 1: { kind: "stale" } });
  });

  it("uses parameters only: no event value is spliced into the Cypher text", () => {
    const plan = projectRegistry([{ i: 0, event: snapshot("fin-agt-001", { name: "x' DETACH DELETE n //" }) }]);
    for (const statement of plan.statements) expect(statement.cypher).not.toContain("DETACH DELETE n //");
  });
});

describe("projectOutcomes", () => {
  it("writes each outcome once and defers those whose agent is missing", () => {
    const first = outcome("o-1", "fin-agt-001");
    const events = [first, outcome("o-2", "fin-agt-009"), { ...first }];
    const plan = projectOutcomes(events.map((event, i) => ({ i, event })));
    // Read in order, the Outcome node and §3.3 are one statement: each row unwound and looked up once.
    expect(plan.statements.map((s) => s.name)).toEqual(["3.3"]);
    expect(plan.statements[0]?.cypher).toMatch(
      /^\s*UNWIND \$rows AS row\nMERGE \(o:Outcome [\s\S]*\nMERGE \(a\)-\[:PRODUCED\]->\(o\)\n/,
    );
    expect(plan.statements[0]?.params.rows.map((row) => [row.i, row.outcome_id])).toEqual([
      [0, "o-1"],
      [1, "o-2"],
    ]);
    const fates = plan.fates([result("3.3", [{ i: 0, existed: false }])]);
    expect(Object.fromEntries(fates)).toEqual({
      0: { kind: "applied" },
      1: { kind: "deferred", reason: "agent-missing" },
      2: { kind: "unchanged" },
    });
  });

  it("puts two different events for one outcome in successive rounds", () => {
    const events = [
      outcome("o-1", "fin-agt-001", { status: "pending" }),
      outcome("o-1", "fin-agt-001", { status: "succeeded" }),
    ];
    const plan = projectOutcomes(events.map((event, i) => ({ i, event })));
    expect(plan.statements.map((s) => [s.name, s.params.rows.map((row) => [row.i, row.status])])).toEqual([
      ["3.3", [[0, "pending"]]],
      ["3.3", [[1, "succeeded"]]],
    ]);
    // The node's fields, and the record index that maps the statement's result back to a fate.
    expect(Object.keys(plan.statements[0]?.params.rows[0] ?? {}).sort()).toEqual([
      "agent_id",
      "correlation_id",
      "created_at",
      "i",
      "outcome_id",
      "status",
    ]);
  });

  it("never overwrites an outcome from a late record, and calls one the outcome moved past stale", () => {
    const events = [
      outcome("o-1", "fin-agt-001", { status: "pending" }),
      outcome("o-2", "fin-agt-002", { status: "pending" }),
    ];
    const plan = projectOutcomes(events.map((event, i) => ({ i, event, late: true })));
    expect(plan.statements.map((s) => s.name)).toEqual(["outcome", "3.3"]);
    // §3.3 reads only the outcome id (its agent is the one the Outcome node names).
    expect(Object.keys(plan.statements[1]?.params.rows[0] ?? {}).sort()).toEqual(["i", "outcome_id"]);
    expect(plan.statements[0]?.cypher).toMatch(/ON CREATE SET/);
    // Only the lock property is set (and removed at once): none of the outcome's values.
    expect(plan.statements[0]?.cypher).not.toMatch(/\n\s*SET o\.(?!_LOCK_ = true\nREMOVE o\._LOCK_\n)/);
    expect(plan.statements[0]?.cypher).toMatch(/\n\s*SET o\._LOCK_ = true\nREMOVE o\._LOCK_\n/);
    const fates = plan.fates([
      result("outcome", [
        { i: 0, current: true },
        { i: 1, current: false },
      ]),
      result("3.3", [
        { i: 0, existed: true },
        { i: 1, existed: true },
      ]),
    ]);
    expect(Object.fromEntries(fates)).toEqual({ 0: { kind: "unchanged" }, 1: { kind: "stale" } });
  });
});

describe("projectEscalations", () => {
  it("collapses a repeated pair to one row with its first and last observation", () => {
    const events = [escalation("o-1", "o-2", 30), escalation("o-1", "o-2", 10), escalation("o-3", "o-4", 5)];
    const plan = projectEscalations(events.map((event, i) => ({ i, event })));
    expect(plan.statements.map((statement) => statement.name)).toEqual(["3.4"]);
    const rows = plan.statements[0]?.params.rows;
    expect(rows?.map((row) => [row.i, row.first_observed_at, row.last_observed_at])).toEqual([
      [0, Date.UTC(2026, 0, 1) + 10_000, Date.UTC(2026, 0, 1) + 30_000],
      [2, Date.UTC(2026, 0, 1) + 5_000, Date.UTC(2026, 0, 1) + 5_000],
    ]);
    const fates = plan.fates([result("3.4", [{ i: 0, produced: true, same_agent: false, already_counted: false }])]);
    expect(Object.fromEntries(fates)).toEqual({
      0: { kind: "applied" },
      1: { kind: "unchanged" },
      2: { kind: "deferred", reason: "outcome-missing" },
    });
  });

  it("reads §3.4's count only on rows whose two producers differ", () => {
    const events = [
      escalation("o-1", "o-2"),
      escalation("o-3", "o-4"),
      escalation("o-5", "o-6"),
      escalation("o-7", "o-8"),
    ];
    const plan = projectEscalations(events.map((event, i) => ({ i, event })));
    const fates = plan.fates([
      result("3.4", [
        { i: 0, produced: true, same_agent: false, already_counted: true },
        { i: 1, produced: true, same_agent: true, already_counted: null },
        { i: 2, produced: false, same_agent: null, already_counted: null },
        { i: 3, produced: true, same_agent: false, already_counted: false },
      ]),
    ]);
    expect(Object.fromEntries(fates)).toEqual({
      0: { kind: "unchanged" },
      1: { kind: "applied" },
      2: { kind: "deferred", reason: "producer-missing" },
      3: { kind: "applied" },
    });
  });
});
