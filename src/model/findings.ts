import { createHash } from "node:crypto";

/**
 * Governance findings: §4's questions answered when their answer changes.
 *
 * - `undeclared-escalation`: an escalation observed (§3.4) when, at its observed_at, the registry did
 *   not declare its edge: one per undeclared episode of the edge (model/event-time-findings.ts).
 * - `undeclared-escalation-resolved`: a later registry change declared that edge again.
 * - `terminal-unreachable`: a registry change left an agent that reached a control terminal over
 *   declared edges with no such path, in event-time order (model/event-time-reach.ts).
 * - `terminal-unreachable-resolved`: a later registry change gave it a path again.
 *
 * An undeclared escalation's id is its tenant, kind and the edge's two agents, plus the registry
 * version that opened its episode when a revocation did (the first episode keeps the id an edge always
 * had). An agent can lose and regain its path many times, so a terminal finding's id adds the
 * registry change that caused the transition (the changed agent and its registry version): a change
 * applies once, whatever order, batching or number of deliveries its record came in. Everything a
 * finding says follows from what its id is made of, so two writes of it never differ.
 */
export type FindingKind =
  | "undeclared-escalation"
  | "undeclared-escalation-resolved"
  | "terminal-unreachable"
  | "terminal-unreachable-resolved";

export const FINDING_KINDS: readonly FindingKind[] = [
  "undeclared-escalation",
  "undeclared-escalation-resolved",
  "terminal-unreachable",
  "terminal-unreachable-resolved",
];

/**
 * What a finding was decided on (issue 53, item 5), carried by the record: the event time it is about
 * and the registry change. Absent where the deciding step does not know it (null on the record).
 */
export interface FindingEvidence {
  /** The detecting escalation's observed_at (epoch ms) and outcomes. */
  readonly observed_at?: number | null;
  readonly source_outcome_id?: string | null;
  readonly target_outcome_id?: string | null;
  /** The registry change it is about, and when it occurred (epoch ms). */
  readonly registry_version?: number | null;
  readonly registry_occurred_at?: number | null;
  readonly late?: boolean;
}

export interface Finding extends FindingEvidence {
  readonly finding_id: string;
  readonly tenant_id: string;
  readonly kind: FindingKind;
  /** The escalating agent; for a terminal finding, the agent that lost (or regained) its path. */
  readonly source_agent_id: string;
  /** The escalation's target; for a terminal finding, the agent whose registry change caused it. */
  readonly target_agent_id: string;
  /** On a resolution: the id of the finding it resolves. */
  readonly resolves: string | null;
}

/**
 * The deterministic id: a SHA-256 over the canonical JSON of what identifies the transition. The
 * undeclared-escalation kinds have no `transition` (their ids stay what they were).
 */
export function findingId(
  tenant: string,
  kind: FindingKind,
  source: string,
  target: string,
  ...transition: readonly (string | number)[]
): string {
  return createHash("sha256")
    .update(JSON.stringify([tenant, kind, source, target, ...transition]))
    .digest("hex")
    .slice(0, 32);
}

export function finding(
  tenant: string,
  kind: "undeclared-escalation" | "undeclared-escalation-resolved",
  source: string,
  target: string,
): Finding {
  return {
    finding_id: findingId(tenant, kind, source, target),
    tenant_id: tenant,
    kind,
    source_agent_id: source,
    target_agent_id: target,
    resolves:
      kind === "undeclared-escalation-resolved" ? findingId(tenant, "undeclared-escalation", source, target) : null,
  };
}

/**
 * A terminal finding for `agent`, caused by the registry change of `cause` at `version`; a resolution
 * names the open finding it resolves (read from the graph: its id depends on the change that opened
 * it), and its id includes that finding's, so one change resolving two open findings (left by
 * apply-time judging before event-time judging, which opens one at a time) gives two resolutions.
 */
export function terminalFinding(
  tenant: string,
  agent: string,
  cause: { readonly agent_id: string; readonly registry_version: number },
  resolves: string | null = null,
): Finding {
  const kind: FindingKind = resolves === null ? "terminal-unreachable" : "terminal-unreachable-resolved";
  return {
    finding_id: findingId(tenant, kind, agent, cause.agent_id, cause.registry_version, ...(resolves ? [resolves] : [])),
    tenant_id: tenant,
    kind,
    source_agent_id: agent,
    target_agent_id: cause.agent_id,
    resolves,
  };
}
