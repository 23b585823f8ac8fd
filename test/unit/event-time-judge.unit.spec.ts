import { describe, expect, it } from "vitest";
import { watermarkFromLag } from "../../src/model/event-time-findings.js";
import { findingId } from "../../src/model/findings.js";
import { judgedDatabases, judgementStatements } from "../../src/pipeline/event-time-judge.js";

const A = "ju-agt-001";
const B = "ju-agt-002";
const change = (registry_version: number, occurred_at: number, declared: string[]) => ({
  tenant_id: "default",
  agent_id: A,
  registry_version,
  occurred_at,
  declared,
  unjudged: 1,
});
const observation = (observed_at: number, unjudged?: number) => ({
  tenant_id: "default",
  source_agent_id: A,
  target_agent_id: B,
  observed_at,
  source_outcome_id: `o-${observed_at}`,
  target_outcome_id: "o-b",
  ...(unjudged === undefined ? {} : { unjudged }),
});
const base = { changes: [], rejudged: [], recorded: [], judgedThrough: null, scoped: false };

describe("a judge round's page", () => {
  it("an escalation authorised when it happened gives nothing, though the registry revoked it since (a backlog)", () => {
    const { findings, statements } = judgementStatements({
      ...base,
      observations: [observation(30, 5)],
      history: [change(1, 0, [B]), change(2, 60, [])],
      watermark: 100,
    });
    expect(findings).toEqual([]);
    // The mark is cleared only as it was read, and the progress moves to the watermark.
    expect(statements.map((s) => s.name)).toEqual(["judge-marks", "judge-marks"]);
    expect(statements[0]?.params.rows).toEqual([observation(30, 5)]);
    expect(statements[1]?.params.rows).toEqual([{ judged_through: 100 }]);
  });

  it("an escalation in a revoked episode: a finding whose id names the revocation, with its evidence", () => {
    const { findings } = judgementStatements({
      ...base,
      observations: [observation(70, 5)],
      history: [change(1, 0, [B]), change(2, 60, []), change(3, 90, [B])],
      watermark: 100,
    });
    expect(findings.map((f) => [f.finding_id, f.late, f.observed_at, f.registry_version])).toEqual([
      [findingId("default", "undeclared-escalation", A, B, 2), false, 70, 2],
      [findingId("default", "undeclared-escalation-resolved", A, B, 2), false, null, 3],
    ]);
  });

  it("nothing at or above the watermark is decided: the resolution waits for it", () => {
    const { findings } = judgementStatements({
      ...base,
      observations: [observation(70, 5)],
      history: [change(1, 0, [B]), change(2, 60, []), change(3, 90, [B])],
      watermark: 80,
    });
    expect(findings.map((f) => f.kind)).toEqual(["undeclared-escalation"]);
  });

  it("a change older than what was judged is late: the finding it opens and its resolution say so", () => {
    const { findings, statements } = judgementStatements({
      ...base,
      observations: [],
      changes: [change(2, 20, []), change(3, 80, [B])],
      rejudged: [observation(50)],
      history: [change(1, 0, [B]), change(2, 20, []), change(3, 80, [B])],
      judgedThrough: 100,
      watermark: 200,
    });
    expect(findings.map((f) => [f.kind, f.late])).toEqual([
      ["undeclared-escalation", true],
      ["undeclared-escalation-resolved", true],
    ]);
    const cleared = statements.find((s) => s.cypher.includes("c.late"));
    expect(cleared?.params.rows.map((row) => row.late)).toEqual([true, true]);
  });

  it("a finding already recorded is not recorded again, and a declaration ends it", () => {
    const open = findingId("default", "undeclared-escalation", A, B);
    const { findings } = judgementStatements({
      ...base,
      observations: [observation(10, 5)],
      changes: [change(1, 40, [B])],
      history: [change(1, 40, [B])],
      recorded: [
        {
          finding_id: open,
          tenant_id: "default",
          source_agent_id: A,
          target_agent_id: B,
          episode: null,
          resolved: false,
        },
      ],
      watermark: 100,
    });
    expect(findings.map((f) => [f.finding_id, f.resolves])).toEqual([
      [findingId("default", "undeclared-escalation-resolved", A, B), open],
    ]);
  });

  it("when the wait ran out (+∞), the progress is the latest time decided", () => {
    const { judgedThrough } = judgementStatements({
      ...base,
      observations: [observation(70, 5)],
      history: [],
      watermark: Number.POSITIVE_INFINITY,
    });
    expect(judgedThrough).toBe(71);
  });
});

describe("the watermark the group's lag gives", () => {
  it("every registry partition caught up: the poll's time less the allowed lateness; one behind: nothing yet", () => {
    expect(watermarkFromLag([0, 0, 0], 10_000, 5_000)).toBe(5_000);
    expect(watermarkFromLag([0, 3, 0], 10_000, 5_000)).toBe(Number.NEGATIVE_INFINITY);
    expect(watermarkFromLag([], 10_000, 0)).toBe(10_000);
  });

  it("a database serving one tenant names it (its nodes carry no tenant_id); a shared one does not", () => {
    expect(
      judgedDatabases([
        { tenantId: "acme", database: "a" },
        { tenantId: "globex", database: "shared" },
        { tenantId: "initech", database: "shared" },
      ]),
    ).toEqual([
      { database: "a", scoped: false, tenant: "acme" },
      { database: "shared", scoped: true, tenant: null },
    ]);
  });
});
