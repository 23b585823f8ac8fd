import type {
  EscalationEdge,
  OutcomeCreated,
  OwnedWorkflow,
  RegistryEvent,
  RegistrySnapshot,
  RegistryTombstone,
  ToolGrant,
} from "../src/model/events.js";

/** Sizes of a generated workload; every generated log is valid input for the projector. */
export interface WorkloadSize {
  readonly agents: number;
  readonly toolsPerAgent: number;
  readonly workflowsPerAgent: number;
  readonly escalationTargetsPerAgent: number;
  /** Registry edits per agent after its first snapshot: each may revoke a tool or an escalation target. */
  readonly editsPerAgent: number;
  readonly outcomes: number;
  readonly escalations: number;
  /** Share of escalation-edge records published again as exact duplicates (redelivery). */
  readonly duplicateRatio: number;
  /** Share of escalations between agents whose registry never declared that path. */
  readonly undeclaredRatio: number;
  readonly tenantId: string;
  /** Share of agents deregistered by a tombstone (at a version above their last edit). */
  readonly deregisterRatio?: number;
  /** Share of deregistered agents registered again afterwards, at a higher version still. */
  readonly reregisterRatio?: number;
  /** Share of outcomes re-emitted later with another status (a producer's correction). */
  readonly outcomeUpdateRatio?: number;
  /** Share of outcome-created records published again as exact duplicates. */
  readonly outcomeRepeatRatio?: number;
  /** Share of tool grants and owned workflows a snapshot describes differently from other agents'. */
  readonly sharedNodeConflictRatio?: number;
}

export const SMALL_WORKLOAD: WorkloadSize = {
  agents: 12,
  toolsPerAgent: 3,
  workflowsPerAgent: 2,
  escalationTargetsPerAgent: 2,
  editsPerAgent: 1,
  outcomes: 60,
  escalations: 30,
  duplicateRatio: 0.1,
  undeclaredRatio: 0.3,
  tenantId: "default",
};

export interface EventLog {
  readonly registry: readonly RegistryEvent[];
  readonly outcomes: readonly OutcomeCreated[];
  readonly escalations: readonly EscalationEdge[];
}

export const CONTROL_TERMINALS = ["os-agt-001", "os-agt-004"] as const;
const HUMAN_TERMINALS = ["human operator", "Human compliance owner", "on-call reviewer"];
const FAMILIES = ["os", "fin", "ops", "sec", "dom"];
const STATUSES = ["succeeded", "failed", "escalated", "pending"];

/** A small, fast, seedable PRNG (mulberry32): the same seed gives the same log on every machine. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export function agentId(family: string, n: number): string {
  return `${family}-agt-${String(n).padStart(3, "0")}`;
}

/**
 * A realistic registry and runtime log: agents in families (os-agt-001 and os-agt-004 are the control
 * terminals), tool grants, owned workflows, escalation paths that mix agents, unregistered agent ids and
 * human terminals, edits that revoke grants and paths, outcomes, and escalations — some undeclared, some
 * between outcomes of one agent, some redelivered.
 */
export function generateEventLog(seed: number, size: WorkloadSize = SMALL_WORKLOAD): EventLog {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const sample = <T>(items: readonly T[], n: number): T[] => {
    const pool = [...items];
    const out: T[] = [];
    while (out.length < n && pool.length > 0) out.push(pool.splice(Math.floor(random() * pool.length), 1)[0] as T);
    return out;
  };
  const base = Date.UTC(2026, 0, 1);
  let clock = base;
  const tick = () => (clock += 1 + Math.floor(random() * 1000));
  let eventSeq = 0;
  const eventId = () => `evt-${seed}-${++eventSeq}`;

  const ids = [...CONTROL_TERMINALS];
  for (let n = 2; ids.length < Math.max(size.agents, 2); n++) {
    const id = n % 4 === 0 && n < 10 ? agentId("os", n) : agentId(FAMILIES[n % FAMILIES.length] as string, n);
    if (!ids.includes(id as (typeof ids)[number])) ids.push(id as (typeof ids)[number]);
  }
  const agents = ids.slice(0, Math.max(size.agents, 2));
  const toolPool: ToolGrant[] = Array.from({ length: Math.max(4, size.toolsPerAgent * 4) }, (_, n) => ({
    tool_id: `tool-${n}`,
    name: `Tool ${n}`,
  }));
  const workflowPool: OwnedWorkflow[] = Array.from(
    { length: Math.max(2, Math.ceil(agents.length * size.workflowsPerAgent * 0.8)) },
    (_, n) => ({
      workflow_id: `wf-${n}`,
      name: `Workflow ${n}`,
      domain: pick(["claims", "payments", "support", "compliance"]),
      version: `1.${n % 5}`,
    }),
  );

  // Shared nodes described differently by two agents' snapshots; no random draw when off, so that
  // the logs of existing seeds stay what they were.
  const conflictRatio = size.sharedNodeConflictRatio ?? 0;
  const conflicting = <T>(items: readonly T[], alter: (item: T) => T): T[] =>
    conflictRatio > 0 ? items.map((item) => (random() < conflictRatio ? alter(item) : item)) : [...items];

  const registry: RegistryEvent[] = [];
  const declared = new Set<string>();
  agents.forEach((id, index) => {
    const isTerminal = (CONTROL_TERMINALS as readonly string[]).includes(id);
    // Agents escalate "upwards" to lower-numbered agents, so most paths end at a control terminal.
    const upstream = agents.slice(0, index).filter((other) => other !== id);
    let path: string[] | null = isTerminal
      ? [pick(HUMAN_TERMINALS)]
      : [...sample(upstream, size.escalationTargetsPerAgent), ...(random() < 0.3 ? [pick(HUMAN_TERMINALS)] : [])];
    if (!isTerminal && random() < 0.08) path = null;
    if (!isTerminal && random() < 0.05) path?.push(agentId("ext", 900 + index));
    // Every fifth agent owns workflows but is authorised for no tool: a legal registry state.
    let tools = index % 5 === 3 ? [] : sample(toolPool, size.toolsPerAgent);
    let workflows = sample(workflowPool, size.workflowsPerAgent);
    let version = 1 + Math.floor(random() * 3);
    const snapshot = (): RegistrySnapshot => ({
      kind: "registry-snapshot",
      event_id: eventId(),
      tenant_id: size.tenantId,
      registry_version: version,
      occurred_at: tick(),
      agent_id: id,
      name: `Agent ${id}`,
      family: id.split("-agt-")[0] ?? null,
      owner: random() < 0.8 ? `team-${index % 4}` : null,
      decision_scope: random() < 0.5 ? pick(["advisory", "bounded", "autonomous"]) : null,
      status: "active",
      tools: conflicting(tools, (t) => ({ ...t, name: `${t.name} as ${id} names it` })),
      owned_workflows: conflicting(workflows, (w) => ({ ...w, version: `${w.version}-${id}` })),
      escalation_path: path,
    });
    registry.push(snapshot());
    for (let edit = 0; edit < size.editsPerAgent; edit++) {
      version += 1 + Math.floor(random() * 2);
      if (tools.length > 0 && random() < 0.6) tools = tools.slice(1);
      if (random() < 0.3)
        tools = [...tools, pick(toolPool)].filter((t, k, all) => all.findIndex((o) => o.tool_id === t.tool_id) === k);
      if (path && path.length > 1 && random() < 0.5) path = path.slice(1);
      if (random() < 0.2) workflows = workflows.slice(0, -1);
      registry.push(snapshot());
    }
    // No random draw for a ratio left at 0: the logs of existing seeds stay what they were.
    if ((size.deregisterRatio ?? 0) > 0 && random() < (size.deregisterRatio ?? 0)) {
      version += 1;
      const deletion: RegistryTombstone = {
        kind: "registry-tombstone",
        tenant_id: size.tenantId,
        agent_id: id,
        registry_version: version,
      };
      registry.push(deletion);
      if (random() >= (size.reregisterRatio ?? 0)) return;
      version += 1 + Math.floor(random() * 2);
      tools = sample(toolPool, size.toolsPerAgent);
      registry.push(snapshot());
    }
    for (const target of path ?? []) declared.add(`${id}>${target}`);
  });

  const outcomes: OutcomeCreated[] = Array.from({ length: size.outcomes }, (_, n) => ({
    kind: "outcome-created",
    event_id: eventId(),
    tenant_id: size.tenantId,
    outcome_id: `out-${seed}-${n}`,
    agent_id: pick(agents),
    status: pick(STATUSES),
    correlation_id: random() < 0.7 ? `corr-${Math.floor(n / 3)}` : null,
    created_at: tick(),
  }));

  const escalations: EscalationEdge[] = [];
  const byAgent = new Map<string, OutcomeCreated[]>();
  for (const outcome of outcomes) byAgent.set(outcome.agent_id, [...(byAgent.get(outcome.agent_id) ?? []), outcome]);
  const declaredPairs = [...declared]
    .map((pair) => pair.split(">") as [string, string])
    .filter(([from, to]) => byAgent.has(from) && byAgent.has(to));
  for (let n = 0; n < size.escalations && outcomes.length > 1; n++) {
    let source: OutcomeCreated;
    let target: OutcomeCreated;
    if (random() >= size.undeclaredRatio && declaredPairs.length > 0) {
      const [from, to] = pick(declaredPairs);
      source = pick(byAgent.get(from) ?? []);
      target = pick(byAgent.get(to) ?? []);
    } else {
      source = pick(outcomes);
      target = pick(outcomes);
    }
    if (source.outcome_id === target.outcome_id) continue;
    escalations.push({
      kind: "escalation-edge",
      event_id: eventId(),
      tenant_id: size.tenantId,
      source_outcome_id: source.outcome_id,
      target_outcome_id: target.outcome_id,
      observed_at: tick(),
    });
  }
  const duplicates = Math.floor(escalations.length * size.duplicateRatio);
  for (let n = 0; n < duplicates; n++) escalations.push({ ...pick(escalations) });
  // Corrections and repeats of outcomes come after the original in the log, as a producer emits them.
  const originals = [...outcomes];
  for (const original of originals) {
    if ((size.outcomeUpdateRatio ?? 0) > 0 && random() < (size.outcomeUpdateRatio ?? 0)) {
      const status = pick(STATUSES.filter((s) => s !== original.status));
      outcomes.push({ ...original, event_id: eventId(), status });
    }
    if ((size.outcomeRepeatRatio ?? 0) > 0 && random() < (size.outcomeRepeatRatio ?? 0)) outcomes.push({ ...original });
  }
  return { registry, outcomes, escalations };
}
