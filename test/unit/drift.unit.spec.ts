import { describe, expect, it } from "vitest";
import type { RegistryEvent } from "../../src/model/events.js";
import { type AgentState, DRIFT_KINDS, diffRegistry, registryState, stateOf } from "../../src/reconcile/drift.js";
import { snapshot, tombstone, tool, workflow } from "../support/builders.js";

// Reconciliation diffs the registry topic (what §3.1/§3.2 would have written) against the graph; §7 asks
// that a registry removal be reflected, not only an addition, and that human terminals never become agents.

const fin = snapshot("fin-agt-001", {
  registry_version: 3,
  tools: [tool("tl-1"), tool("tl-2")],
  owned_workflows: [workflow("wf-1")],
  escalation_path: ["os-agt-004", "human operator"],
});

const expectedOf = (...states: AgentState[]) => new Map(states.map((s) => [s.agent_id, s]));

/** A graph-side copy of a state with some parts changed, as the reconcile query would read it. */
function graphOf(state: AgentState, change: Partial<AgentState> = {}): AgentState {
  return {
    agent_id: state.agent_id,
    props: { ...state.props, ...change.props },
    tools: new Map(change.tools ?? state.tools),
    workflows: new Map(change.workflows ?? state.workflows),
    declared: new Set(change.declared ?? state.declared),
  };
}

describe("stateOf", () => {
  it("takes the §3.1 properties, tools by id, workflows by id and the §3.2 declared agents (human terminals filtered)", () => {
    const state = stateOf(fin);
    expect(state.props).toEqual({
      name: "Agent fin-agt-001",
      family: "fin",
      owner: "team-a",
      decision_scope: null,
      status: "active",
      registry_version: 3,
    });
    expect([...state.tools]).toEqual([
      ["tl-1", "Tool tl-1"],
      ["tl-2", "Tool tl-2"],
    ]);
    expect([...state.workflows]).toEqual([["wf-1", JSON.stringify(["Workflow wf-1", "claims", "1.0"])]]);
    expect([...state.declared]).toEqual(["os-agt-004"]);
  });

  it("a null escalation path declares nothing", () => {
    expect(stateOf(snapshot("fin-agt-002", { escalation_path: null })).declared.size).toBe(0);
  });
});

describe("registryState (the compacted topic, under the version guard)", () => {
  it("keeps each agent's highest version; a late lower version does not win", () => {
    const v2 = snapshot("fin-agt-001", { registry_version: 2, name: "two" });
    const v1 = snapshot("fin-agt-001", { registry_version: 1, name: "one" });
    const state = registryState([v2, v1]);
    expect(state.get("fin-agt-001")?.state.props.name).toBe("two");
    expect(state.get("fin-agt-001")?.latest).toBe(v2);
  });

  it("an equal version replaces (a re-delivery of the same version is the same snapshot)", () => {
    const a = snapshot("fin-agt-001", { registry_version: 2, name: "a" });
    const b = snapshot("fin-agt-001", { registry_version: 2, name: "b" });
    expect(registryState([a, b]).get("fin-agt-001")?.state.props.name).toBe("b");
  });

  it("a tombstone deregisters and empties tools, workflows and declarations, keeping the other properties", () => {
    const events: RegistryEvent[] = [fin, tombstone("fin-agt-001", 4)];
    const entry = registryState(events).get("fin-agt-001");
    expect(entry?.latest).toEqual(tombstone("fin-agt-001", 4));
    expect(entry?.state.props).toMatchObject({
      status: "deregistered",
      registry_version: 4,
      name: "Agent fin-agt-001",
    });
    expect(entry?.state.tools.size).toBe(0);
    expect(entry?.state.workflows.size).toBe(0);
    expect(entry?.state.declared.size).toBe(0);
  });

  it("a tombstone older than the snapshot, or for an agent never seen, changes nothing", () => {
    expect(registryState([fin, tombstone("fin-agt-001", 2)]).get("fin-agt-001")?.state.props.status).toBe("active");
    expect(registryState([tombstone("fin-agt-009", 5)]).has("fin-agt-009")).toBe(false);
  });

  it("after a tombstone, a snapshot of the same version stays deleted; a higher one registers again", () => {
    const same = snapshot("fin-agt-001", { registry_version: 4, status: "active" });
    expect(registryState([fin, tombstone("fin-agt-001", 4), same]).get("fin-agt-001")?.state.props.status).toBe(
      "deregistered",
    );
    const again = snapshot("fin-agt-001", { registry_version: 5, tools: [tool("tl-9")] });
    const entry = registryState([fin, tombstone("fin-agt-001", 4), again]).get("fin-agt-001");
    expect(entry?.state.props.status).toBe("active");
    expect([...(entry?.state.tools.keys() ?? [])]).toEqual(["tl-9"]);
    expect(entry?.latest).toBe(again);
  });

  it("keeps agents apart", () => {
    const state = registryState([fin, snapshot("hr-agt-002")]);
    expect([...state.keys()].sort()).toEqual(["fin-agt-001", "hr-agt-002"]);
  });
});

describe("diffRegistry: every drift kind", () => {
  const want = stateOf(fin);

  it("no drift when the graph matches the registry", () => {
    expect(diffRegistry(expectedOf(want), expectedOf(graphOf(want)))).toEqual([]);
  });

  it("missing-agent: registered, not projected (and nothing else is reported for it)", () => {
    expect(diffRegistry(expectedOf(want), new Map())).toEqual([
      { agent_id: "fin-agt-001", kind: "missing-agent", detail: "registered, but not projected" },
    ]);
  });

  it("unregistered-agent: projected, absent from the registry topic", () => {
    expect(diffRegistry(new Map(), expectedOf(graphOf(want)))).toEqual([
      {
        agent_id: "fin-agt-001",
        kind: "unregistered-agent",
        detail: "projected with a registry version, but absent from the registry topic",
      },
    ]);
  });

  it("property: each differing §3.1 property, a missing one read as null, and a renamed tool", () => {
    const have = graphOf(want, {
      props: { status: "suspended", owner: null, decision_scope: "x" },
      tools: new Map([
        ["tl-1", "Tool tl-1"],
        ["tl-2", "Old name"],
      ]),
    });
    const { registry_version: _, ...withoutVersion } = have.props;
    const drift = diffRegistry(expectedOf(want), expectedOf({ ...have, props: withoutVersion }));
    expect(drift).toEqual([
      { agent_id: "fin-agt-001", kind: "property", detail: 'owner: graph null, registry "team-a"' },
      { agent_id: "fin-agt-001", kind: "property", detail: 'decision_scope: graph "x", registry null' },
      { agent_id: "fin-agt-001", kind: "property", detail: 'status: graph "suspended", registry "active"' },
      { agent_id: "fin-agt-001", kind: "property", detail: "registry_version: graph null, registry 3" },
      { agent_id: "fin-agt-001", kind: "property", detail: "Tool tl-2 name: graph Old name, registry Tool tl-2" },
    ]);
  });

  it("missing-authorization and extra-authorization (§3.1 deletes tools no longer listed)", () => {
    const have = graphOf(want, {
      tools: new Map([
        ["tl-1", "Tool tl-1"],
        ["tl-old", "Removed"],
      ]),
    });
    expect(diffRegistry(expectedOf(want), expectedOf(have))).toEqual([
      { agent_id: "fin-agt-001", kind: "missing-authorization", detail: "tl-2" },
      { agent_id: "fin-agt-001", kind: "extra-authorization", detail: "tl-old" },
    ]);
  });

  it("missing-workflow and extra-workflow (§3.1 deletes workflows no longer listed)", () => {
    expect(
      diffRegistry(expectedOf(want), expectedOf(graphOf(want, { workflows: new Map([["wf-old", "[]"]]) }))),
    ).toEqual([
      { agent_id: "fin-agt-001", kind: "missing-workflow", detail: "wf-1" },
      { agent_id: "fin-agt-001", kind: "extra-workflow", detail: "wf-old" },
    ]);
  });

  it("property: an owned workflow whose name, domain or version changed in the registry (§3.1 SETs them)", () => {
    const have = graphOf(want, { workflows: new Map([["wf-1", JSON.stringify(["Workflow wf-1", "claims", "0.9"])]]) });
    expect(diffRegistry(expectedOf(want), expectedOf(have))).toEqual([
      {
        agent_id: "fin-agt-001",
        kind: "property",
        detail:
          'Workflow wf-1 [name, domain, version]: graph ["Workflow wf-1","claims","0.9"], registry ["Workflow wf-1","claims","1.0"]',
      },
    ]);
  });

  it("missing-declaration and extra-declaration (§3.2 clears a declaration no longer in the path)", () => {
    const have = graphOf(want, { declared: new Set(["os-agt-001"]) });
    expect(diffRegistry(expectedOf(want), expectedOf(have))).toEqual([
      { agent_id: "fin-agt-001", kind: "missing-declaration", detail: "os-agt-004" },
      { agent_id: "fin-agt-001", kind: "extra-declaration", detail: "os-agt-001" },
    ]);
  });

  it("a human terminal is never expected as a declaration (§7)", () => {
    const expected = expectedOf(stateOf(snapshot("fin-agt-003", { escalation_path: ["human operator"] })));
    const have = graphOf(stateOf(snapshot("fin-agt-003", { escalation_path: [] })));
    expect(diffRegistry(expected, expectedOf(have))).toEqual([]);
  });

  it("a deregistered agent still projected with its old edges shows every removal", () => {
    const registry = registryState([fin, tombstone("fin-agt-001", 4)]);
    const expected = new Map([...registry].map(([id, { state }]) => [id, state]));
    const kinds = diffRegistry(expected, expectedOf(graphOf(want))).map((d) => d.kind);
    expect(kinds).toEqual([
      "property",
      "property",
      "extra-authorization",
      "extra-authorization",
      "extra-workflow",
      "extra-declaration",
    ]);
  });

  it("the kinds exercised above are every kind reconciliation reports", () => {
    expect([...DRIFT_KINDS].sort()).toEqual(
      [
        "missing-agent",
        "unregistered-agent",
        "property",
        "missing-authorization",
        "extra-authorization",
        "missing-workflow",
        "extra-workflow",
        "missing-declaration",
        "extra-declaration",
      ].sort(),
    );
  });
});
