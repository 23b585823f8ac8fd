import { isAgentId, type RegistryEvent, type RegistrySnapshot } from "../model/events.js";

/** What the registry says one agent should look like in the graph. */
export interface AgentState {
  readonly agent_id: string;
  readonly props: Readonly<Record<string, string | number | null>>;
  readonly tools: ReadonlyMap<string, string>;
  readonly workflows: ReadonlyMap<string, string>;
  readonly declared: ReadonlySet<string>;
}

export const DRIFT_KINDS = [
  "missing-agent",
  "unregistered-agent",
  "property",
  "missing-authorization",
  "extra-authorization",
  "missing-workflow",
  "extra-workflow",
  "missing-declaration",
  "extra-declaration",
] as const;

export interface Drift {
  readonly agent_id: string;
  readonly kind: (typeof DRIFT_KINDS)[number];
  readonly detail: string;
}

/**
 * The registry as the compacted topic states it: each agent's last effective snapshot under the
 * version guard (a tombstone deregisters and empties the lists), plus that snapshot itself so a
 * repair can re-apply it.
 */
export function registryState(
  events: readonly RegistryEvent[],
): Map<string, { state: AgentState; latest: RegistryEvent }> {
  const applied = new Map<string, { snapshot: RegistrySnapshot; latest: RegistryEvent; deleted: boolean }>();
  for (const event of events) {
    const current = applied.get(event.agent_id);
    if (event.kind === "registry-tombstone") {
      if (current && current.snapshot.registry_version <= event.registry_version) {
        applied.set(event.agent_id, {
          snapshot: {
            ...current.snapshot,
            registry_version: event.registry_version,
            status: "deregistered",
            tools: [],
            owned_workflows: [],
            escalation_path: [],
          },
          latest: event,
          deleted: true,
        });
      }
      continue;
    }
    if (current && current.snapshot.registry_version > event.registry_version) continue;
    if (current?.deleted && current.snapshot.registry_version === event.registry_version) continue;
    applied.set(event.agent_id, { snapshot: event, latest: event, deleted: false });
  }
  const out = new Map<string, { state: AgentState; latest: RegistryEvent }>();
  for (const [agentId, { snapshot, latest }] of applied) out.set(agentId, { state: stateOf(snapshot), latest });
  return out;
}

export function stateOf(snapshot: RegistrySnapshot): AgentState {
  return {
    agent_id: snapshot.agent_id,
    props: {
      name: snapshot.name,
      family: snapshot.family,
      owner: snapshot.owner,
      decision_scope: snapshot.decision_scope,
      status: snapshot.status,
      registry_version: snapshot.registry_version,
    },
    tools: new Map(snapshot.tools.map((t) => [t.tool_id, t.name])),
    workflows: new Map(
      snapshot.owned_workflows.map((w) => [w.workflow_id, JSON.stringify([w.name, w.domain, w.version])]),
    ),
    declared: new Set((snapshot.escalation_path ?? []).filter(isAgentId)),
  };
}

/** Every difference between what the registry says and what the graph holds, agent by agent. */
export function diffRegistry(
  expected: ReadonlyMap<string, AgentState>,
  actual: ReadonlyMap<string, AgentState>,
): Drift[] {
  const drift: Drift[] = [];
  for (const [agentId, want] of expected) {
    const have = actual.get(agentId);
    if (!have) {
      drift.push({ agent_id: agentId, kind: "missing-agent", detail: "registered, but not projected" });
      continue;
    }
    for (const [key, value] of Object.entries(want.props)) {
      if ((have.props[key] ?? null) !== value) {
        drift.push({
          agent_id: agentId,
          kind: "property",
          detail: `${key}: graph ${JSON.stringify(have.props[key] ?? null)}, registry ${JSON.stringify(value)}`,
        });
      }
    }
    setDiff(
      want.tools,
      have.tools,
      (id) => drift.push({ agent_id: agentId, kind: "missing-authorization", detail: id }),
      (id) => drift.push({ agent_id: agentId, kind: "extra-authorization", detail: id }),
    );
    for (const [id, name] of want.tools) {
      if (have.tools.has(id) && have.tools.get(id) !== name)
        drift.push({
          agent_id: agentId,
          kind: "property",
          detail: `Tool ${id} name: graph ${have.tools.get(id)}, registry ${name}`,
        });
    }
    setDiff(
      want.workflows,
      have.workflows,
      (id) => drift.push({ agent_id: agentId, kind: "missing-workflow", detail: id }),
      (id) => drift.push({ agent_id: agentId, kind: "extra-workflow", detail: id }),
    );
    for (const [id, fields] of want.workflows) {
      if (have.workflows.has(id) && have.workflows.get(id) !== fields)
        drift.push({
          agent_id: agentId,
          kind: "property",
          detail: `Workflow ${id} [name, domain, version]: graph ${have.workflows.get(id)}, registry ${fields}`,
        });
    }
    setDiff(
      new Map([...want.declared].map((id) => [id, id])),
      new Map([...have.declared].map((id) => [id, id])),
      (id) => drift.push({ agent_id: agentId, kind: "missing-declaration", detail: id }),
      (id) => drift.push({ agent_id: agentId, kind: "extra-declaration", detail: id }),
    );
  }
  for (const agentId of actual.keys()) {
    if (!expected.has(agentId))
      drift.push({
        agent_id: agentId,
        kind: "unregistered-agent",
        detail: "projected with a registry version, but absent from the registry topic",
      });
  }
  return drift;
}

function setDiff(
  want: ReadonlyMap<string, unknown>,
  have: ReadonlyMap<string, unknown>,
  missing: (id: string) => void,
  extra: (id: string) => void,
): void {
  for (const id of want.keys()) if (!have.has(id)) missing(id);
  for (const id of have.keys()) if (!want.has(id)) extra(id);
}
