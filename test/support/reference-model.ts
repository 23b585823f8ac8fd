import type { NodeLabel } from "../../src/cypher/dump.js";
import { isAgentId, type ProjectorEvent, type RegistrySnapshot } from "../../src/model/events.js";
import {
  type CanonicalGraph,
  canonicalize,
  type DumpNode,
  type DumpRelationship,
  nodeRef,
  type Properties,
  type PropertyValue,
} from "../../src/model/graph.js";

/**
 * The expected graph as a pure function of the event log: the spec's §3 semantics applied one event at
 * a time, in order — all registry events, then outcomes, then escalations (within each, log order).
 * That is the graph the projector must converge to for any arrival order, since deferral retries an
 * early record until its preconditions hold.
 */
export function referenceGraph(log: readonly ProjectorEvent[]): CanonicalGraph {
  const model = new ReferenceModel();
  const phase = (event: ProjectorEvent) =>
    event.kind === "outcome-created" ? 1 : event.kind === "escalation-edge" ? 2 : 0;
  for (const event of [...log].sort((a, b) => phase(a) - phase(b))) model.apply(event);
  return model.canonical();
}

interface Escalation {
  declared: boolean;
  observed_count: number;
  last_observed_at?: number;
}

export class ReferenceModel {
  /** `tenant`: the graph of one tenant in a database several share — every node carries tenant_id. */
  constructor(private readonly tenant?: string) {}

  private readonly agents = new Map<string, Record<string, PropertyValue>>();
  private readonly tools = new Map<string, Record<string, PropertyValue>>();
  private readonly workflows = new Map<string, Record<string, PropertyValue>>();
  private readonly outcomes = new Map<string, Record<string, PropertyValue>>();
  private readonly authorizedFor = new Set<string>();
  private readonly ownsWorkflow = new Set<string>();
  private readonly canEscalate = new Map<string, Escalation>();
  private readonly produced = new Map<string, string>();
  private readonly escalatedTo = new Map<string, number>();
  private readonly observed = new Map<string, number>();
  /** The version of a tombstone for an agent never projected: no later snapshot at or below it applies. */
  private readonly fences = new Map<string, number>();

  apply(event: ProjectorEvent): void {
    switch (event.kind) {
      case "registry-snapshot":
        this.snapshot(event);
        return;
      case "registry-tombstone": {
        const agent = this.agents.get(event.agent_id);
        if (agent?.registry_version === undefined) {
          this.fences.set(event.agent_id, Math.max(this.fences.get(event.agent_id) ?? 0, event.registry_version));
          return;
        }
        if (Number(agent.registry_version) > event.registry_version) return;
        agent.status = "deregistered";
        agent.registry_version = event.registry_version;
        agent.registry_deleted = true;
        this.dropEdges(this.authorizedFor, event.agent_id, new Set());
        this.dropEdges(this.ownsWorkflow, event.agent_id, new Set());
        this.revokeDeclarations(event.agent_id, new Set());
        return;
      }
      case "outcome-created": {
        this.outcomes.set(
          event.outcome_id,
          withoutNulls({
            outcome_id: event.outcome_id,
            agent_id: event.agent_id,
            status: event.status,
            correlation_id: event.correlation_id,
            created_at: event.created_at,
          }),
        );
        // The outcome's newest record names its producer; a PRODUCED from an earlier record's agent goes.
        if (this.agents.has(event.agent_id)) this.produced.set(event.outcome_id, event.agent_id);
        else this.produced.delete(event.outcome_id);
        return;
      }
      case "escalation-edge": {
        const { source_outcome_id: source, target_outcome_id: target, observed_at } = event;
        if (!this.outcomes.has(source) || !this.outcomes.has(target)) return;
        const pair = pairKey(source, target);
        this.escalatedTo.set(pair, Math.min(this.escalatedTo.get(pair) ?? observed_at, observed_at));
        const from = this.produced.get(source);
        const to = this.produced.get(target);
        if (from === undefined || to === undefined || from === to) return;
        const edge = this.escalation(from, to, false);
        if (!this.observed.has(pair)) edge.observed_count += 1;
        this.observed.set(pair, Math.min(this.observed.get(pair) ?? observed_at, observed_at));
        edge.last_observed_at = Math.max(edge.last_observed_at ?? observed_at, observed_at);
        return;
      }
    }
  }

  private snapshot(event: RegistrySnapshot): void {
    const existing = this.agents.get(event.agent_id);
    const stored = existing?.registry_version;
    // Ordered by (version, kind): a tombstone wins a tie with a snapshot of its own version.
    if (typeof stored === "number" && stored > event.registry_version) return;
    if (stored === event.registry_version && existing?.registry_deleted === true) return;
    const fence = this.fences.get(event.agent_id);
    if (fence !== undefined && fence >= event.registry_version) return;
    this.fences.delete(event.agent_id);
    this.agents.set(
      event.agent_id,
      withoutNulls({
        agent_id: event.agent_id,
        name: event.name,
        family: event.family,
        owner: event.owner,
        decision_scope: event.decision_scope,
        status: event.status,
        registry_version: event.registry_version,
      }),
    );
    // A shared Tool or Workflow takes the properties of the most recent edit naming it (occurred_at,
    // ties to the greater agent_id), whatever order the edits were applied in.
    const edit = { registry_edited_at: event.occurred_at, registry_edited_by: event.agent_id };
    const newest = (current: Record<string, PropertyValue> | undefined) =>
      current === undefined ||
      event.occurred_at > Number(current.registry_edited_at) ||
      (event.occurred_at === Number(current.registry_edited_at) &&
        event.agent_id >= String(current.registry_edited_by));
    for (const tool of event.tools) {
      if (newest(this.tools.get(tool.tool_id)))
        this.tools.set(tool.tool_id, { tool_id: tool.tool_id, name: tool.name, ...edit });
      this.authorizedFor.add(pairKey(event.agent_id, tool.tool_id));
    }
    for (const wf of event.owned_workflows) {
      if (newest(this.workflows.get(wf.workflow_id))) this.workflows.set(wf.workflow_id, { ...wf, ...edit });
      this.ownsWorkflow.add(pairKey(event.agent_id, wf.workflow_id));
    }
    this.dropEdges(this.authorizedFor, event.agent_id, new Set(event.tools.map((t) => t.tool_id)));
    this.dropEdges(this.ownsWorkflow, event.agent_id, new Set(event.owned_workflows.map((w) => w.workflow_id)));

    const path = event.escalation_path ?? [];
    for (const target of path.filter(isAgentId)) {
      if (!this.agents.has(target)) this.agents.set(target, { agent_id: target });
      this.escalation(event.agent_id, target, true).declared = true;
    }
    this.revokeDeclarations(event.agent_id, new Set(path));
  }

  private escalation(from: string, to: string, declaredOnCreate: boolean): Escalation {
    const key = pairKey(from, to);
    let edge = this.canEscalate.get(key);
    if (!edge) {
      edge = { declared: declaredOnCreate, observed_count: 0 };
      this.canEscalate.set(key, edge);
    }
    return edge;
  }

  private dropEdges(edges: Set<string>, agentId: string, keep: ReadonlySet<string>): void {
    for (const key of [...edges]) {
      const [from, to] = JSON.parse(key) as [string, string];
      if (from === agentId && !keep.has(to)) edges.delete(key);
    }
  }

  private revokeDeclarations(agentId: string, keep: ReadonlySet<string>): void {
    for (const [key, edge] of this.canEscalate) {
      const [from, to] = JSON.parse(key) as [string, string];
      if (from === agentId && edge.declared && !keep.has(to)) edge.declared = false;
    }
  }

  canonical(): CanonicalGraph {
    return canonicalize(...this.parts());
  }

  /** Nodes and relationships, for canonicalising one graph or the union of several tenants'. */
  parts(): [DumpNode[], DumpRelationship[]] {
    const scope: Record<string, PropertyValue> = this.tenant === undefined ? {} : { tenant_id: this.tenant };
    const ref = (label: NodeLabel, id: string) =>
      nodeRef(label, this.tenant === undefined ? id : `${this.tenant}/${id}`);
    const nodes: DumpNode[] = [];
    const add = (label: NodeLabel, map: Map<string, Properties>) => {
      for (const props of map.values()) nodes.push({ label, props: { ...props, ...scope } });
    };
    add("Agent", this.agents);
    add("Tool", this.tools);
    add("Workflow", this.workflows);
    add("Outcome", this.outcomes);
    const rels: DumpRelationship[] = [];
    const edges = (
      type: string,
      keys: Iterable<string>,
      fromLabel: NodeLabel,
      toLabel: NodeLabel,
      props: (key: string) => Properties,
    ) => {
      for (const key of keys) {
        const [from, to] = JSON.parse(key) as [string, string];
        rels.push({ type, from: ref(fromLabel, from), to: ref(toLabel, to), props: props(key) });
      }
    };
    edges("AUTHORIZED_FOR", this.authorizedFor, "Agent", "Tool", () => ({}));
    edges("OWNS_WORKFLOW", this.ownsWorkflow, "Agent", "Workflow", () => ({}));
    edges("CAN_ESCALATE_TO", this.canEscalate.keys(), "Agent", "Agent", (key) =>
      withoutNulls({ ...this.canEscalate.get(key) }),
    );
    edges("ESCALATED_TO", this.escalatedTo.keys(), "Outcome", "Outcome", (key) => ({
      observed_at: this.escalatedTo.get(key) ?? 0,
    }));
    edges("OBSERVED", this.observed.keys(), "Outcome", "Outcome", (key) => ({
      recorded_at: this.observed.get(key) ?? 0,
    }));
    for (const [outcome, agent] of this.produced) {
      rels.push({ type: "PRODUCED", from: ref("Agent", agent), to: ref("Outcome", outcome), props: {} });
    }
    return [nodes, rels];
  }
}

function pairKey(a: string, b: string): string {
  return JSON.stringify([a, b]);
}

function withoutNulls(props: Record<string, PropertyValue | null | undefined>): Record<string, PropertyValue> {
  return Object.fromEntries(
    Object.entries(props).filter(([, value]) => value !== null && value !== undefined),
  ) as Record<string, PropertyValue>;
}
