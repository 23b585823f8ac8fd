import { describe, expect, it } from "vitest";
import { JUDGE_PROGRESS, OLDEST_MARK } from "../../src/cypher/event-time-judge.js";
import type { Statement } from "../../src/cypher/statement.js";
import { advanceRegistryWatermark, NO_REGISTRY_WATERMARK } from "../../src/model/event-time-findings.js";
import { findingId } from "../../src/model/findings.js";
import { createEventTimeJudge, judgedDatabases, judgementStatements } from "../../src/pipeline/event-time-judge.js";
import type { GraphWriter } from "../../src/ports.js";

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

describe("the watermark the group's lag polls give", () => {
  const poll = (at: number, ...ends: number[]) => ({ at, ends: new Map(ends.map((end, p) => [p, end])) });
  const at = (...offsets: number[]) => new Map(offsets.map((offset, p) => [p, offset]));

  it("every registry partition at its end: the poll's time less the allowed lateness; one behind: nothing yet", () => {
    expect(advanceRegistryWatermark(NO_REGISTRY_WATERMARK, poll(10_000, 4, 4, 4), at(4, 4, 4), 5_000).watermark).toBe(
      5_000,
    );
    expect(advanceRegistryWatermark(NO_REGISTRY_WATERMARK, poll(10_000, 4, 7, 4), at(4, 4, 4), 5_000).watermark).toBe(
      Number.NEGATIVE_INFINITY,
    );
    expect(advanceRegistryWatermark(NO_REGISTRY_WATERMARK, poll(10_000), at(), 0).watermark).toBe(10_000);
  });

  it("under a steady stream that is never at its end: the last poll whose ends the group has committed past", () => {
    let state = NO_REGISTRY_WATERMARK;
    state = advanceRegistryWatermark(state, poll(1_000, 10, 20), at(5, 15), 500);
    expect(state.watermark).toBe(Number.NEGATIVE_INFINITY);
    state = advanceRegistryWatermark(state, poll(2_000, 14, 26), at(10, 19), 500);
    expect(state.watermark).toBe(Number.NEGATIVE_INFINITY);
    // Past the first poll's ends (10, 20), not the second's (14, 26).
    state = advanceRegistryWatermark(state, poll(3_000, 18, 30), at(12, 22), 500);
    expect(state.watermark).toBe(500);
    expect(state.polls.map((p) => p.at)).toEqual([2_000, 3_000]);
    // Past the third's: the two before it go with it.
    state = advanceRegistryWatermark(state, poll(4_000, 22, 35), at(18, 30), 500);
    expect(state.watermark).toBe(2_500);
    expect(state.polls.map((p) => p.at)).toEqual([4_000]);
  });

  it("never goes down, and a partition added since a poll holds nothing the old poll did not name", () => {
    const ahead = advanceRegistryWatermark(NO_REGISTRY_WATERMARK, poll(5_000, 3), at(3), 0);
    expect(advanceRegistryWatermark(ahead, poll(6_000, 9), at(4), 0).watermark).toBe(5_000);
    expect(advanceRegistryWatermark(NO_REGISTRY_WATERMARK, poll(1_000, 3), at(3, 0), 0).watermark).toBe(1_000);
    // A partition the group has no position on yet holds the poll that names it.
    expect(advanceRegistryWatermark(NO_REGISTRY_WATERMARK, poll(1_000, 3, 2), at(3), 0).watermark).toBe(
      Number.NEGATIVE_INFINITY,
    );
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

describe("the registry history's retention", () => {
  /** A graph with nothing to judge, the judge's progress at `through`, that keeps what it is asked to apply. */
  function graphAt(through: number) {
    const applied: Statement[] = [];
    const graph: GraphWriter = {
      read: async (_database, cypher) =>
        cypher === JUDGE_PROGRESS ? [{ judged_through: through }] : cypher === OLDEST_MARK ? [{ oldest: null }] : [],
      apply: async (_database, statements) => {
        applied.push(...statements);
        return statements.map((statement) => ({
          name: statement.name,
          records: [{ agents: 0, removed: 0 }],
          counters: {} as never,
        }));
      },
      trial: async () => {},
      ping: async () => {},
      close: async () => {},
    };
    return { graph, applied };
  }
  const judgeWith = (graph: GraphWriter, clock: { now: () => number }, historyRetentionMs: number) =>
    createEventTimeJudge({
      graph,
      databases: [{ database: "neo4j", scoped: false, tenant: "default" }],
      watermark: async () => Number.NEGATIVE_INFINITY,
      judges: () => true,
      maxWaitMs: 600_000,
      historyRetentionMs,
      terminals: new Set(),
      clock,
      logger: { info() {}, warn() {}, error() {}, debug() {} } as never,
      recorded() {},
    });

  it("compacts an hour after start, then hourly, below the judged time less the retention", async () => {
    let now = 10_000_000;
    const { graph, applied } = graphAt(9_000_000);
    const judge = judgeWith(graph, { now: () => now }, 1_000_000);
    await judge.round();
    expect(applied).toEqual([]);
    now += 3_600_000;
    await judge.round();
    expect(applied.map((s) => [s.name, s.params.rows])).toEqual([["registry-history", [{ cutoff: 8_000_000 }]]]);
    now += 60_000;
    await judge.round();
    expect(applied).toHaveLength(1);
  });

  it("a retention of 0 keeps every change", async () => {
    let now = 0;
    const { graph, applied } = graphAt(5_000);
    const judge = judgeWith(graph, { now: () => now }, 0);
    now += 7_200_000;
    await judge.round();
    expect(applied).toEqual([]);
  });
});
