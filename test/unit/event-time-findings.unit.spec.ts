import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  episodes,
  inForceAt,
  type JudgedFinding,
  judgeEscalations,
  type Observation,
  type RegistryChange,
} from "../../src/model/event-time-findings.js";
import { findingId } from "../../src/model/findings.js";
import {
  DELIVERY_ORDERS,
  deliver,
  type Log,
  logArbitrary,
  registryWatermark,
  runJudge,
} from "../support/event-time-log.js";
import { oracleFindings } from "../support/findings-oracle.js";

const T = "default";
/** No clock bound: the watermark alone decides. */
const NEVER = Number.NEGATIVE_INFINITY;
const A = "et-agt-001";
const B = "et-agt-002";
const C = "et-agt-003";
const at = (hh: number, mm: number, ss = 0) => Date.UTC(2026, 0, 1, hh, mm, ss);
const change = (agent: string, version: number, occurred: number, declared: string[]): RegistryChange => ({
  tenant_id: T,
  agent_id: agent,
  registry_version: version,
  occurred_at: occurred,
  declared,
});
let outcomes = 0;
const obs = (source: string, target: string, observed: number): Observation => ({
  tenant_id: T,
  source_agent_id: source,
  target_agent_id: target,
  observed_at: observed,
  source_outcome_id: `out-${++outcomes}`,
  target_outcome_id: `out-${++outcomes}`,
});

/** Findings as the oracle's shape: id, kind and what it resolves. */
const ids = (findings: readonly { finding_id: string; kind: string; resolves: string | null }[]) =>
  findings
    .map(({ finding_id, kind, resolves }) => ({ finding_id, kind, resolves }))
    .sort((a, b) => (a.finding_id < b.finding_id ? -1 : 1));

const judgeAll = (history: RegistryChange[], observations: Observation[]) =>
  judgeEscalations({ history, observations, recorded: [], watermark: Number.POSITIVE_INFINITY }).findings;

/** The service before issue 53: the registry as applied so far is the registry at every instant. */
const atApplyTime: typeof judgeEscalations = (input) =>
  judgeEscalations({
    ...input,
    history: input.history.map((c) => ({ ...c, occurred_at: Number.NEGATIVE_INFINITY })),
    watermark: Number.POSITIVE_INFINITY,
  });

describe("the registry in force at an instant", () => {
  it("is the highest version that occurred at or before it; changes of one instant take effect together", () => {
    const history = [change(A, 1, at(10, 0), [B]), change(A, 3, at(10, 1), []), change(A, 2, at(10, 2), [B])];
    expect(inForceAt(history, at(9, 59))).toBeUndefined();
    expect(inForceAt(history, at(10, 0))?.registry_version).toBe(1);
    expect(inForceAt(history, at(10, 1))?.registry_version).toBe(3);
    // A lower version occurring later fills in history but never overrides a higher one in force.
    expect(inForceAt(history, at(10, 5))?.registry_version).toBe(3);
    const tied = [change(A, 1, at(10, 0), [B]), change(A, 2, at(10, 0), [])];
    expect(episodes(tied, B)).toEqual([{ opened_by: null, from: Number.NEGATIVE_INFINITY, ended_by: null }]);
  });

  it("splits an edge's time into undeclared episodes delimited by the source's changes", () => {
    const v1 = change(A, 1, at(10, 0), [B]);
    const v2 = change(A, 2, at(10, 1), []);
    const v3 = change(A, 3, at(10, 2), [B, C]);
    const v4 = change(A, 4, at(10, 3), []);
    expect(episodes([v4, v2, v3, v1], B)).toEqual([
      { opened_by: null, from: Number.NEGATIVE_INFINITY, ended_by: v1 },
      { opened_by: v2, from: at(10, 1), ended_by: v3 },
      { opened_by: v4, from: at(10, 3), ended_by: null },
    ]);
  });
});

describe("undeclared escalations judged at event time (the issue's worked examples)", () => {
  const v1 = change(A, 1, at(10, 0), [B]);
  const v2 = change(A, 2, at(10, 1), []);
  const escalation = obs(A, B, at(10, 0, 30));

  it("A declares B at 10:00, escalates at 10:00:30, drops B at 10:01: no finding, even applied after v2", () => {
    expect(judgeAll([v1, v2], [escalation])).toEqual([]);
    // Judged at apply time (the old behaviour), the same log read as a backlog gives a false finding.
    const log: Log = { changes: [v1, v2], observations: [{ ...escalation, partition: 0 }] };
    expect(ids(runJudge(log, deliver(log, "backlog", [0]), atApplyTime))).toEqual([
      { finding_id: findingId(T, "undeclared-escalation", A, B), kind: "undeclared-escalation", resolves: null },
    ]);
    expect(runJudge(log, deliver(log, "backlog", [0]))).toEqual([]);
  });

  it("a revocation that occurred after the escalation but arrived before it gives no finding", () => {
    expect(judgeAll([v1, v2], [obs(A, B, at(10, 0, 59))])).toEqual([]);
  });

  it("a declaration that occurred at the escalation's instant, arriving after it, gives none either", () => {
    const history = [change(A, 1, at(10, 0), [])];
    const late = change(A, 2, at(10, 5), [B]);
    expect(judgeAll([...history, late], [obs(A, B, at(10, 5))])).toEqual([]);
  });

  it("an escalation after a revocation is a finding about that revocation, with its evidence", () => {
    const e = obs(A, B, at(10, 1, 10));
    const [found, ...rest] = judgeAll([v1, v2], [e]);
    expect(rest).toEqual([]);
    expect(found).toEqual({
      finding_id: findingId(T, "undeclared-escalation", A, B, 2),
      tenant_id: T,
      kind: "undeclared-escalation",
      source_agent_id: A,
      target_agent_id: B,
      resolves: null,
      episode: 2,
      registry_version: 2,
      registry_occurred_at: at(10, 1),
      observed_at: e.observed_at,
      source_outcome_id: e.source_outcome_id,
      target_outcome_id: e.target_outcome_id,
      late: false,
    } satisfies JudgedFinding);
  });

  it("an edge never declared keeps today's single finding and id, and its resolution today's id", () => {
    const history = [change(A, 1, at(10, 0), []), change(A, 2, at(10, 5), [B])];
    const found = judgeAll(history, [obs(A, B, at(9, 0)), obs(A, B, at(10, 1)), obs(A, B, at(10, 2))]);
    expect(ids(found)).toEqual(
      ids([
        { finding_id: findingId(T, "undeclared-escalation", A, B), kind: "undeclared-escalation", resolves: null },
        {
          finding_id: findingId(T, "undeclared-escalation-resolved", A, B),
          kind: "undeclared-escalation-resolved",
          resolves: findingId(T, "undeclared-escalation", A, B),
        },
      ]),
    );
    // Evidence: the first escalation judged; before A's first registration nothing was in force.
    expect(found[0]).toMatchObject({ observed_at: at(9, 0), registry_version: null, registry_occurred_at: null });
    expect(found[1]).toMatchObject({ registry_version: 2, registry_occurred_at: at(10, 5), observed_at: null });
  });

  it("a path cut, restored and cut again by a deregistration: one finding and resolution per episode", () => {
    const history = [
      change(A, 1, at(10, 0), [B]),
      change(A, 2, at(10, 1), []), // cut
      change(A, 3, at(10, 2), [B]), // restored
      change(A, 4, at(10, 3), []), // deregistered (a tombstone declares nothing)
    ];
    const found = judgeAll(history, [obs(A, B, at(10, 1, 30)), obs(A, B, at(10, 2, 30)), obs(A, B, at(10, 4))]);
    expect(ids(found)).toEqual(
      ids([
        { finding_id: findingId(T, "undeclared-escalation", A, B, 2), kind: "undeclared-escalation", resolves: null },
        {
          finding_id: findingId(T, "undeclared-escalation-resolved", A, B, 2),
          kind: "undeclared-escalation-resolved",
          resolves: findingId(T, "undeclared-escalation", A, B, 2),
        },
        { finding_id: findingId(T, "undeclared-escalation", A, B, 4), kind: "undeclared-escalation", resolves: null },
      ]),
    );
  });

  it("judges nothing at or above the watermark, and the same answer comes however the calls are split", () => {
    const history = [change(A, 1, at(10, 0), []), change(A, 2, at(10, 5), [B])];
    const escalations = [obs(A, B, at(10, 1)), obs(A, B, at(10, 6))];
    const first = judgeEscalations({
      history: history.slice(0, 1),
      observations: escalations,
      recorded: [],
      watermark: at(10, 1),
    });
    expect(first).toEqual({ findings: [], judged: [] });
    const second = judgeEscalations({ history, observations: escalations, recorded: [], watermark: at(10, 5) });
    expect(second.judged).toEqual([escalations[0]]);
    expect(second.findings.map((f) => f.kind)).toEqual(["undeclared-escalation"]);
    const third = judgeEscalations({
      history,
      observations: [escalations[1] as Observation],
      recorded: second.findings.map((f) => ({ ...f, resolved: false })),
      watermark: at(10, 5) + 1,
    });
    expect(third.findings.map((f) => f.kind)).toEqual(["undeclared-escalation-resolved"]);
    expect(ids([...second.findings, ...third.findings])).toEqual(ids(judgeAll(history, escalations)));
  });
});

describe("the property test's registry watermark (test/support/event-time-log.ts)", () => {
  it("is the slowest partition's applied event time; a caught-up partition holds nothing back", () => {
    expect(
      registryWatermark(
        [
          { applied_at: 5, caught_up: false },
          { applied_at: 9, caught_up: false },
        ],
        NEVER,
        0,
      ),
    ).toBe(5);
    expect(
      registryWatermark(
        [
          { applied_at: 5, caught_up: true },
          { applied_at: 9, caught_up: false },
        ],
        NEVER,
        0,
      ),
    ).toBe(9);
    expect(registryWatermark([{ applied_at: null, caught_up: false }], NEVER, 0)).toBe(Number.NEGATIVE_INFINITY);
    expect(registryWatermark([{ applied_at: null, caught_up: true }], NEVER, 0)).toBe(Number.POSITIVE_INFINITY);
  });

  it("never lags the clock by more than the allowed lateness", () => {
    expect(registryWatermark([{ applied_at: null, caught_up: false }], 100_000, 30_000)).toBe(70_000);
  });
});

describe("property: whatever the delivery, the judge finds exactly what the oracle finds", () => {
  const agree = (log: Log, found: readonly JudgedFinding[]) => {
    const oracle = oracleFindings(log.changes, log.observations);
    expect(ids(found)).toEqual(ids(oracle));
    const history = log.changes;
    for (const f of found) {
      const expected = oracle.find((o) => o.finding_id === f.finding_id);
      if (f.kind === "undeclared-escalation") {
        // The evidence escalation lies in the episode, and the version is the one in force at it.
        const t = f.observed_at as number;
        expect(expected && expected.from <= t && t < expected.until).toBe(true);
        expect(log.observations.some((o) => o.observed_at === t && o.source_outcome_id === f.source_outcome_id)).toBe(
          true,
        );
        const own = history.filter((c) => c.agent_id === f.source_agent_id);
        expect(f.registry_version).toBe(inForceAt(own, t)?.registry_version ?? null);
      } else {
        expect(f.registry_version).toBe(expected?.registry_version);
      }
    }
  };
  const picks = fc.array(fc.nat({ max: 7 }), { minLength: 1, maxLength: 40 });

  for (const order of DELIVERY_ORDERS)
    it(`delivered ${order}`, () => {
      fc.assert(
        fc.property(logArbitrary, picks, (log, p) => agree(log, runJudge(log, deliver(log, order, p)))),
        { numRuns: 200 },
      );
    }, 60_000);

  it("can fail: judged at apply time, a counterexample is found", () => {
    const result = fc.check(
      fc.property(logArbitrary, picks, (log, p) => {
        const found = runJudge(log, deliver(log, "backlog", p), atApplyTime);
        return JSON.stringify(ids(found)) === JSON.stringify(ids(oracleFindings(log.changes, log.observations)));
      }),
      { numRuns: 300, seed: 53 },
    );
    expect(result.failed).toBe(true);
  });
});
