import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RegistryChange } from "../../src/model/event-time-findings.js";
import {
  historyForWalk,
  type RecordedTerminalFinding,
  recordedForWalk,
  terminalTransitionsAt,
} from "../../src/model/event-time-reach.js";
import { type Finding, terminalFinding } from "../../src/model/findings.js";
import { oracleTerminalFindings } from "../support/terminal-oracle.js";

const A = "tr-agt-001";
const B = "tr-agt-002";
const C = "tr-agt-003";
const T = "tr-agt-900";
const terminals = new Set([T]);

const change = (agent_id: string, registry_version: number, occurred_at: number, declared: string[], retired = false) =>
  ({ tenant_id: "default", agent_id, registry_version, occurred_at, declared, retired }) as RegistryChange;
const v1 = [change(A, 1, 0, [B]), change(B, 1, 0, [T]), change(C, 1, 0, [B])];
const ids = (found: readonly Finding[]) => found.map((f) => f.finding_id);
const cause = (agent_id: string, registry_version: number) => ({ agent_id, registry_version });
const judge = (history: RegistryChange[], instants: number[], recorded: RecordedTerminalFinding[] = []) =>
  terminalTransitionsAt("default", { history, instants, terminals, recorded });
const asRecorded = (found: readonly Finding[], at: number): RecordedTerminalFinding[] =>
  found.map((f) => ({
    finding_id: f.finding_id,
    tenant_id: f.tenant_id,
    kind: f.kind as RecordedTerminalFinding["kind"],
    source_agent_id: f.source_agent_id,
    resolves: f.resolves,
    at: f.registry_occurred_at ?? at,
  }));

describe("terminal-unreachable judged instant by instant, in event time", () => {
  it("a lost path: a finding for the changed agent and each agent upstream, caused by the change, with its time", () => {
    const found = judge([...v1, change(B, 2, 10, [])], [10]);
    expect(ids(found)).toEqual(ids([A, B, C].map((agent) => terminalFinding("default", agent, cause(B, 2)))));
    expect(found[0]).toMatchObject({ registry_version: 2, registry_occurred_at: 10, late: false });
  });

  it("regained: each open finding resolved, whichever change opened it; lost again: new ids", () => {
    const history = [...v1, change(B, 2, 10, []), change(B, 3, 20, [T]), change(B, 4, 30, [])];
    const lost = judge(history, [10]);
    const regained = judge(history, [20], asRecorded(lost, 10));
    expect(regained.map((f) => f.resolves).sort()).toEqual(ids(lost).sort());
    expect(regained.every((f) => f.kind === "terminal-unreachable-resolved")).toBe(true);
    const again = judge(history, [30], asRecorded([...lost, ...regained], 10));
    expect(again.map((f) => f.kind)).toEqual(["terminal-unreachable", "terminal-unreachable", "terminal-unreachable"]);
    expect(new Set([...ids(lost), ...ids(again)]).size).toBe(6);
  });

  it("the same set of changes in any delivery gives the same answer: one call or one per instant", () => {
    const history = [...v1, change(B, 2, 10, []), change(B, 3, 20, [T]), change(C, 2, 25, []), change(B, 4, 30, [])];
    const whole = judge(history, [10, 20, 25, 30]);
    let recorded: RecordedTerminalFinding[] = [];
    const stepwise: Finding[] = [];
    for (const t of [10, 20, 25, 30]) {
      const found = judge(history, [t], recorded);
      stepwise.push(...found);
      recorded = [...recorded, ...asRecorded(found, t)];
    }
    expect(ids(stepwise).sort()).toEqual(ids(whole).sort());
  });

  it("a change that changed nothing causes nothing: a lower version arriving late, or the instant judged again", () => {
    const history = [...v1, change(B, 3, 10, [T]), change(B, 2, 15, [])];
    expect(judge(history, [15])).toEqual([]);
    const lost = judge([...v1, change(B, 2, 10, [])], [10]);
    expect(judge([...v1, change(B, 2, 10, [])], [10], asRecorded(lost, 10))).toEqual([]);
  });

  it("a retired agent gets no finding of its own; its upstream does; a terminal never does", () => {
    const found = judge([...v1, change(T, 1, 0, []), change(B, 2, 10, [], true)], [10]);
    expect(found.map((f) => f.source_agent_id).sort()).toEqual([A, C]);
  });

  it("the cause: the agent's own change, else the lowest changed agent it had a path to", () => {
    const found = judge([...v1, change(A, 2, 10, [C]), change(B, 2, 10, [])], [10]);
    const byAgent = new Map(found.map((f) => [f.source_agent_id, f.target_agent_id]));
    expect(byAgent.get(A)).toBe(A);
    expect(byAgent.get(C)).toBe(B);
  });

  it("an open finding of an agent that reaches is resolved at the next change it lies upstream of, whatever that change does", () => {
    // A reaches T directly and through nothing else; its finding, recorded before event-time judging
    // (no time), is still open. B changes without reaching before or after: A lies upstream of it.
    const history = [change(A, 1, 0, [B, T]), change(B, 1, 0, []), change(B, 2, 10, [C])];
    const legacy: RecordedTerminalFinding = {
      finding_id: "legacy-open",
      tenant_id: "default",
      kind: "terminal-unreachable",
      source_agent_id: A,
      resolves: null,
      at: null,
    };
    const found = judge(history, [10], [legacy]);
    expect(found.map((f) => [f.kind, f.source_agent_id, f.target_agent_id, f.resolves])).toEqual([
      ["terminal-unreachable-resolved", A, B, "legacy-open"],
    ]);
  });

  it("tenants apart: the walk is per tenant, and a change in one is no cause in another", () => {
    const other = terminalTransitionsAt("acme", {
      history: v1.map((c) => ({ ...c, tenant_id: "acme" })),
      instants: [10],
      terminals,
      recorded: [],
    });
    expect(other).toEqual([]);
  });
});

/**
 * Generated histories of one tenant: a handful of agents declaring each other and two terminals, versions
 * out of time order, several changes at one instant, retirements. Each (agent, version) is one change,
 * as in the graph.
 */
const POOL = [A, B, C, "tr-agt-004", "tr-agt-005", T];
const TERMINALS = new Set([T, "tr-agt-901"]);
const historyArbitrary = fc
  .array(
    fc.record({
      agent: fc.constantFrom(...POOL),
      version: fc.integer({ min: 1, max: 6 }),
      at: fc.integer({ min: 0, max: 12 }),
      declared: fc.uniqueArray(fc.constantFrom(...POOL, "tr-agt-901"), { maxLength: 3 }),
      retired: fc.boolean(),
    }),
    { minLength: 1, maxLength: 30 },
  )
  .map((drawn) => [
    ...new Map(
      drawn.map((d) => [
        `${d.agent}|${d.version}`,
        change(d.agent, d.version, d.at, d.retired && d.version > 3 ? [] : d.declared, d.retired && d.version > 3),
      ]),
    ).values(),
  ]);
/** Findings compared whole, but for the late flag: the oracle knows no watermark. */
const comparable = (found: readonly Finding[]) =>
  found
    .map(({ late: _, ...finding }) => finding)
    .sort((a, b) => (a.finding_id < b.finding_id ? -1 : a.finding_id > b.finding_id ? 1 : 0));
const judgeTerminals = (history: RegistryChange[], instants: number[], recorded: RecordedTerminalFinding[] = []) =>
  terminalTransitionsAt("default", { history, instants, terminals: TERMINALS, recorded });
/** The instants in event-time order, judged in pages of the given sizes, each page knowing what the ones before found. */
function judgedInPages(history: RegistryChange[], sizes: readonly number[], judge = judgeTerminals): Finding[] {
  const instants = [...new Set(history.map((c) => c.occurred_at))].sort((a, b) => a - b);
  const found: Finding[] = [];
  for (let start = 0, n = 0; start < instants.length; n++) {
    const size = 1 + ((sizes[n % Math.max(1, sizes.length)] ?? 0) % 4);
    const page = instants.slice(start, start + size);
    start += size;
    found.push(...judge(history, page, asRecorded(found, 0)));
  }
  return found;
}

describe("property: the incremental walk finds exactly what the plain oracle finds", () => {
  const sizes = fc.array(fc.nat({ max: 7 }), { minLength: 1, maxLength: 12 });

  it("every instant in one call", () => {
    fc.assert(
      fc.property(historyArbitrary, (history) => {
        const instants = history.map((c) => c.occurred_at);
        expect(comparable(judgeTerminals(history, instants))).toEqual(
          comparable(oracleTerminalFindings("default", history, TERMINALS)),
        );
      }),
      { numRuns: 1500 },
    );
  });

  it("in pages of instants, each knowing what the ones before recorded; a page judged again finds nothing new", () => {
    fc.assert(
      fc.property(historyArbitrary, sizes, (history, p) => {
        const found = judgedInPages(history, p);
        expect(comparable(found)).toEqual(comparable(oracleTerminalFindings("default", history, TERMINALS)));
        const instants = history.map((c) => c.occurred_at);
        expect(judgeTerminals(history, instants, asRecorded(found, 0))).toEqual([]);
      }),
      { numRuns: 1500 },
    );
  });

  it("from an instant on, the history the judge reads (the changed agents whole, the others' heads) finds what the whole history finds", () => {
    fc.assert(
      fc.property(historyArbitrary, fc.nat(), (history, pick) => {
        const instants = [...new Set(history.map((c) => c.occurred_at))].sort((a, b) => a - b);
        const since = instants[pick % instants.length] as number;
        const from = instants.filter((t) => t >= since);
        const before = instants.filter((t) => t < since);
        const recorded = asRecorded(judgeTerminals(history, before), 0);
        // What cypher/registry-history.ts reads: every change of the agents changed from `since` on, and
        // each other agent's highest version unless it is retired.
        const changedAgents = new Set(history.filter((c) => c.occurred_at >= since).map((c) => c.agent_id));
        const heads = new Map<string, RegistryChange>();
        for (const c of history)
          if ((heads.get(c.agent_id)?.registry_version ?? 0) < c.registry_version) heads.set(c.agent_id, c);
        const read = historyForWalk(
          history.filter((c) => changedAgents.has(c.agent_id)),
          [...heads.values()].filter((c) => !c.retired),
          (c) => c.agent_id,
        );
        expect(judgeTerminals(read, from, recorded)).toEqual(judgeTerminals(history, from, recorded));
      }),
      { numRuns: 1500 },
    );
  });

  /**
   * Findings recorded over part of the history (the rest held back, to arrive late), then the whole
   * judged again from an instant on, given what `read` keeps of the recorded ones: equal to what every
   * finding recorded gives, when `read` is right.
   */
  const rejudgedFrom = (read: (r: RecordedTerminalFinding[], since: number) => RecordedTerminalFinding[]) =>
    fc.property(historyArbitrary, fc.nat(), fc.array(fc.boolean(), { minLength: 1 }), (history, pick, held) => {
      const onTime = history.filter((_, i) => !held[i % held.length]);
      const recorded = asRecorded(judgedInPages(onTime, [0]), 0);
      const instants = [...new Set(history.map((c) => c.occurred_at))].sort((a, b) => a - b);
      const since = instants[pick % instants.length] as number;
      const from = instants.filter((t) => t >= since);
      return (
        JSON.stringify(judgeTerminals(history, from, read(recorded, since))) ===
        JSON.stringify(judgeTerminals(history, from, recorded))
      );
    });

  it("from an instant on, the findings the judge reads (each open then, with its resolutions) decide what every finding recorded decides", () => {
    fc.assert(rejudgedFrom(recordedForWalk), { numRuns: 2000 });
  });

  it("can fail: reading only the findings no resolution answers yet, a counterexample is found", () => {
    const openNow = (recorded: RecordedTerminalFinding[]) =>
      recorded.filter((f) => f.kind === "terminal-unreachable" && !recorded.some((r) => r.resolves === f.finding_id));
    expect(fc.check(rejudgedFrom(openNow), { numRuns: 500, seed: 53 }).failed).toBe(true);
  });

  it("can fail: judged against the registry as delivered so far, a counterexample is found", () => {
    const result = fc.check(
      fc.property(historyArbitrary, sizes, (history, p) => {
        // Pages in event-time order, each judged against the registry as delivered when its own changes
        // were: versions delivered in order, so a page sees no version above its own highest.
        const asDelivered: typeof judgeTerminals = (h, instants, recorded) => {
          const own = h.filter((c) => instants.includes(c.occurred_at)).map((c) => c.registry_version);
          return judgeTerminals(
            h.filter((c) => c.registry_version <= Math.max(...own)),
            instants,
            recorded,
          );
        };
        const found = judgedInPages(history, p, asDelivered);
        return (
          JSON.stringify(comparable(found)) ===
          JSON.stringify(comparable(oracleTerminalFindings("default", history, TERMINALS)))
        );
      }),
      { numRuns: 500, seed: 53 },
    );
    expect(result.failed).toBe(true);
  });
});
