import { describe, expect, it } from "vitest";
import type { RegistryChange } from "../../src/model/event-time-findings.js";
import { type RecordedTerminalFinding, terminalTransitionsAt } from "../../src/model/event-time-reach.js";
import { type Finding, terminalFinding } from "../../src/model/findings.js";

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
