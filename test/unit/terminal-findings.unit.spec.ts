import { describe, expect, it } from "vitest";
import { NO_WRITES, type Statement, type StatementResult } from "../../src/cypher/statement.js";
import {
  type AppliedChange,
  findingId,
  type ReachAfter,
  type ReachBefore,
  terminalFinding,
  terminalTransitions,
} from "../../src/model/findings.js";
import { agentKey, type Hops, outsideTargets, reachingAgents } from "../../src/model/reach.js";
import { projectRegistry } from "../../src/projection/registry.js";
import { snapshot, tombstone } from "../support/builders.js";

const A = "tu-agt-001";
const B = "tu-agt-002";
const C = "tu-agt-003";
const T = "tu-agt-900";

const was = (agent_id: string, reachable: boolean, causes: string[] = [agent_id]): ReachBefore => ({
  tenant_id: "default",
  agent_id,
  causes,
  reachable,
});
const now = (agent_id: string, reachable: boolean, overrides: Partial<ReachAfter> = {}): ReachAfter => ({
  tenant_id: "default",
  agent_id,
  reachable,
  deregistered: false,
  open: [],
  ...overrides,
});
const change = (agent_id: string, registry_version: number, tenant_id = "default"): AppliedChange => ({
  tenant_id,
  agent_id,
  registry_version,
});

describe("terminal-unreachable: which transitions a registry change caused", () => {
  it("a lost path gives a finding to the changed agent and to each agent upstream of it, caused by the change", () => {
    const found = terminalTransitions(
      [was(B, true), was(A, true, [B])],
      [now(B, false), now(A, false)],
      [change(B, 2)],
    );
    expect(found).toEqual([
      terminalFinding("default", B, { agent_id: B, registry_version: 2 }),
      terminalFinding("default", A, { agent_id: B, registry_version: 2 }),
    ]);
    expect(found[1]).toMatchObject({
      kind: "terminal-unreachable",
      source_agent_id: A,
      target_agent_id: B,
      resolves: null,
    });
  });

  it("a path regained resolves the agent's open finding, whichever change opened it", () => {
    const open = terminalFinding("default", A, { agent_id: B, registry_version: 2 }).finding_id;
    const found = terminalTransitions([was(A, false, [C])], [now(A, true, { open: [open] })], [change(C, 5)]);
    expect(found).toEqual([
      {
        finding_id: findingId("default", "terminal-unreachable-resolved", A, C, 5, open),
        tenant_id: "default",
        kind: "terminal-unreachable-resolved",
        source_agent_id: A,
        target_agent_id: C,
        resolves: open,
      },
    ]);
  });

  it("nothing when the answer did not change: a change re-applied, or an agent still cut off", () => {
    const open = terminalFinding("default", A, { agent_id: B, registry_version: 2 }).finding_id;
    expect(terminalTransitions([was(A, true)], [now(A, true)], [change(A, 1)])).toEqual([]);
    expect(terminalTransitions([was(A, false)], [now(A, false, { open: [open] })], [change(A, 3)])).toEqual([]);
    expect(terminalTransitions([was(A, false)], [now(A, false)], [change(A, 3)])).toEqual([]);
  });

  it("no cause the transaction applied (its records were stale): nothing, even if the answer moved", () => {
    expect(terminalTransitions([was(A, true, [B])], [now(A, false)], [])).toEqual([]);
    expect(terminalTransitions([was(A, true, [B])], [now(A, false)], [change(C, 2)])).toEqual([]);
  });

  it("a deregistered agent gets no finding for itself; its upstream does", () => {
    const found = terminalTransitions(
      [was(B, true), was(A, true, [B])],
      [now(B, false, { deregistered: true }), now(A, false)],
      [change(B, 4)],
    );
    expect(found.map((f) => f.source_agent_id)).toEqual([A]);
  });

  it("two open findings (left by two racing batches): the regain resolves each, with ids of their own", () => {
    const first = terminalFinding("default", A, { agent_id: B, registry_version: 2 }).finding_id;
    const second = terminalFinding("default", A, { agent_id: C, registry_version: 7 }).finding_id;
    const found = terminalTransitions([was(A, false)], [now(A, true, { open: [second, first] })], [change(A, 3)]);
    expect(found.map((f) => f.resolves).sort()).toEqual([first, second].sort());
    expect(new Set(found.map((f) => f.finding_id)).size).toBe(2);
  });

  it("an agent with a finding still open gets no second one", () => {
    const open = terminalFinding("default", A, { agent_id: B, registry_version: 2 }).finding_id;
    expect(terminalTransitions([was(A, true)], [now(A, false, { open: [open] })], [change(A, 3)])).toEqual([]);
  });

  it("the cause: the agent's own change, else the lowest changed agent it reached that applied", () => {
    const cause = (causes: string[], applied: AppliedChange[], agent = A) =>
      terminalTransitions([was(agent, true, causes)], [now(agent, false)], applied)[0]?.target_agent_id;
    expect(cause([A, B, C], [change(C, 1), change(B, 1), change(A, 1)])).toBe(A);
    expect(cause([C, B], [change(C, 1), change(B, 1)])).toBe(B);
    expect(cause([C, B], [change(C, 1)])).toBe(C);
  });

  it("lost, regained, lost again: each transition its own id; the same one always the same id", () => {
    const first = terminalFinding("default", A, { agent_id: B, registry_version: 2 });
    const regained = terminalFinding("default", A, { agent_id: B, registry_version: 3 }, first.finding_id);
    const again = terminalFinding("default", A, { agent_id: B, registry_version: 4 });
    expect(new Set([first.finding_id, regained.finding_id, again.finding_id]).size).toBe(3);
    expect(terminalFinding("default", A, { agent_id: B, registry_version: 2 })).toEqual(first);
    expect(terminalFinding("acme", A, { agent_id: B, registry_version: 2 }).finding_id).not.toBe(first.finding_id);
  });

  it("tenants apart: a change in one tenant is no cause in another", () => {
    const row = { ...was(A, true, [B]), tenant_id: "globex" };
    expect(terminalTransitions([row], [{ ...now(A, false), tenant_id: "globex" }], [change(B, 2, "acme")])).toEqual([]);
  });
});

describe("terminal-unreachable in the registry plan", () => {
  const result = (statement: Statement, records: Record<string, unknown>[]): StatementResult => ({
    name: statement.name,
    records,
    counters: NO_WRITES,
  });

  it("reads the affected agents first, once each; after §3.1/§3.2 reads them again, then the targets outside them, and writes what that decides", () => {
    const X = "tu-agt-050";
    const plan = projectRegistry(
      [
        { i: 0, event: snapshot(B, { registry_version: 2, escalation_path: [] }) },
        { i: 1, event: snapshot(B, { registry_version: 2, escalation_path: [] }) },
        { i: 2, event: tombstone(C, 3) },
      ],
      false,
      [T],
    );
    expect(plan.statements.map((s) => s.name)).toEqual([
      "reachability",
      "3.1-tombstone",
      "3.1",
      "3.2",
      "registry-history",
    ]);
    expect(plan.statements[0]?.params).toEqual({
      rows: [
        { tenant_id: "default", agent_id: B },
        { tenant_id: "default", agent_id: C },
      ],
    });
    const [reach, tomb, s31, s32] = plan.statements as Statement[];
    const results = [
      // Before: A declares B and X (outside the set), B declares T.
      result(reach as Statement, [
        { tenant_id: "default", agent_id: B, causes: [B], next: [T] },
        { tenant_id: "default", agent_id: A, causes: [B], next: [B, X] },
      ]),
      result(tomb as Statement, [{ i: 2, applied: false }]),
      result(s31 as Statement, [{ i: 1 }]),
      result(s32 as Statement, [{ i: 1, declared_observed: [] }]),
    ];
    // Fates ignore the read.
    expect([...plan.fates(results).keys()].sort()).toEqual([0, 1, 2]);
    const follow = plan.followUp?.(results) ?? [];
    expect(follow.map((s) => s.name)).toEqual(["reachability"]);
    expect(follow[0]?.params.rows).toEqual([
      { tenant_id: "default", agent_id: B },
      { tenant_id: "default", agent_id: A },
    ]);
    // After: B declares nothing.
    const targets = follow[0]?.followedBy?.(
      result(follow[0], [
        { tenant_id: "default", agent_id: B, next: [], deregistered: false, open: [] },
        { tenant_id: "default", agent_id: A, next: [B, X], deregistered: false, open: [] },
      ]),
    );
    expect(targets?.map((s) => s.params)).toEqual([
      { rows: [{ tenant_id: "default", agent_id: X }], terminal_ids: [T] },
    ]);
    const decided = (xReaches: boolean) =>
      targets?.[0]
        ?.followedBy?.(result(targets[0], [{ tenant_id: "default", agent_id: X, reachable: xReaches }]))
        .flatMap((s) => s.params.rows.map((row) => [s.name, row.source_agent_id, row.target_agent_id]));
    // X reaches no terminal: B and A lost theirs, both caused by B's change; if X does, A kept a path.
    expect(decided(false)?.sort()).toEqual([
      ["findings", A, B],
      ["findings", B, B],
    ]);
    expect(decided(true)).toEqual([["findings", B, B]]);
  });

  it("nothing applied (every record stale): no read after", () => {
    const plan = projectRegistry([{ i: 0, event: snapshot(B, { registry_version: 2 }) }], false, [T]);
    const results = plan.statements.map((s) =>
      result(s, s.name === "reachability" ? [{ tenant_id: "default", agent_id: B, causes: [B], next: [T] }] : []),
    );
    expect(plan.followUp?.(results)).toEqual([]);
  });

  it("without terminals (a rebuild, a reconcile): no reachability statement at all", () => {
    const plan = projectRegistry([{ i: 0, event: snapshot(B) }]);
    expect(plan.statements.map((s) => s.name)).toEqual(["3.1", "3.2", "registry-history"]);
  });
});

describe("reachability of a terminal from one hop each", () => {
  const hops = (agent_id: string, next: string[], tenant_id = "default"): Hops => ({ tenant_id, agent_id, next });
  const keys = (...agents: string[]) => new Set(agents.map((agent) => agentKey("default", agent)));
  const terminals = new Set([T]);

  it("through agents of the set, by a terminal, by a target outside that reaches one, and not round a cycle", () => {
    const X = "tu-agt-050";
    const Y = "tu-agt-051";
    // A → B → C → T; D → X (outside, reaches); E → Y (outside, does not); F ⇄ G (a cycle, no way out).
    const rows = [
      hops(A, [B]),
      hops(B, [C]),
      hops(C, [T]),
      hops("tu-agt-004", [X]),
      hops("tu-agt-005", [Y]),
      hops("tu-agt-006", ["tu-agt-007"]),
      hops("tu-agt-007", ["tu-agt-006"]),
    ];
    expect(outsideTargets([rows], terminals)).toEqual([
      { tenant_id: "default", agent_id: X },
      { tenant_id: "default", agent_id: Y },
    ]);
    const outside = new Map([
      [agentKey("default", X), true],
      [agentKey("default", Y), false],
    ]);
    expect(reachingAgents(rows, outside, terminals)).toEqual(keys(A, B, C, "tu-agt-004"));
  });

  it("the same ids in two tenants are two agents", () => {
    const rows = [hops(A, [B], "acme"), hops(B, [T], "acme"), hops(A, [B], "globex"), hops(B, [], "globex")];
    expect(reachingAgents(rows, new Map(), terminals)).toEqual(new Set([agentKey("acme", A), agentKey("acme", B)]));
  });
});
