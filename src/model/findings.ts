import { createHash } from "node:crypto";
import { agentKey } from "./reach.js";

/**
 * Governance findings: §4's questions answered when their answer changes.
 *
 * - `undeclared-escalation`: an escalation observed (§3.4) when, at its observed_at, the registry did
 *   not declare its edge: one per undeclared episode of the edge (model/event-time-findings.ts).
 * - `undeclared-escalation-resolved`: a later registry change declared that edge again.
 * - `terminal-unreachable`: a registry change left an agent that reached a control terminal over
 *   declared edges with no such path (see terminalTransitions).
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
 * it), and its id includes that finding's, so one change resolving two open findings (two batches
 * racing, see terminalTransitions) gives two resolutions.
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

/** One agent a registry change could affect, before the change (cypher/terminal-reach.ts `reachBefore`). */
export interface ReachBefore {
  readonly tenant_id: string;
  readonly agent_id: string;
  /** The batch's changed agents it is, or had a declared path to. */
  readonly causes: readonly string[];
  readonly reachable: boolean;
}

/** The same agent after the change (`reachAfter`). */
export interface ReachAfter {
  readonly tenant_id: string;
  readonly agent_id: string;
  readonly reachable: boolean;
  readonly deregistered: boolean;
  /** Its open terminal-unreachable findings' ids (one at most, unless two batches raced). */
  readonly open: readonly string[];
}

/** A registry change the transaction applied: the agent and its version (the highest, if several). */
export interface AppliedChange {
  readonly tenant_id: string;
  readonly agent_id: string;
  readonly registry_version: number;
}

/**
 * The terminal findings and resolutions of one registry transaction, from reachability read before
 * and after its §3.1/§3.2 writes. An agent gets `terminal-unreachable` when it reached a terminal
 * before and does not after, unless it is deregistered (its upstream may still get one) or already
 * has an open one, so one transaction never opens a second (two racing on different partitions
 * might: each resolution then answers all open ones). It gets a resolution per open finding when it
 * reaches a terminal after. The cause is the agent's own change if it changed, otherwise the lowest
 * changed agent id among those it reached before; only changes the transaction applied count (a stale
 * record changed nothing), so a redelivered or replayed change, which the version guard turns into a
 * no-op, causes nothing, and an agent with no applied cause gets nothing.
 */
export function terminalTransitions(
  before: readonly ReachBefore[],
  after: readonly ReachAfter[],
  applied: readonly AppliedChange[],
): Finding[] {
  const changes = new Map(applied.map((change) => [agentKey(change.tenant_id, change.agent_id), change]));
  const was = new Map(before.map((row) => [agentKey(row.tenant_id, row.agent_id), row]));
  const found: Finding[] = [];
  for (const now of after) {
    const then = was.get(agentKey(now.tenant_id, now.agent_id));
    if (!then) continue;
    const cause =
      changes.get(agentKey(now.tenant_id, now.agent_id)) ??
      [...then.causes]
        .sort()
        .map((agent) => changes.get(agentKey(now.tenant_id, agent)))
        .find((change) => change !== undefined);
    if (!cause) continue;
    if (then.reachable && !now.reachable && !now.deregistered && now.open.length === 0)
      found.push(terminalFinding(now.tenant_id, now.agent_id, cause));
    else if (now.reachable)
      for (const open of [...now.open].sort()) found.push(terminalFinding(now.tenant_id, now.agent_id, cause, open));
  }
  return found;
}
