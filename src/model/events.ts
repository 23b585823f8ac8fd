/** Decoded, validated events: what the pure projections consume. Field names follow the Avro schemas. */

export interface ToolGrant {
  readonly tool_id: string;
  readonly name: string;
}

export interface OwnedWorkflow {
  readonly workflow_id: string;
  readonly name: string;
  readonly domain: string;
  readonly version: string;
}

export interface RegistrySnapshot {
  readonly kind: "registry-snapshot";
  readonly event_id: string;
  readonly tenant_id: string;
  readonly registry_version: number;
  readonly occurred_at: number;
  readonly agent_id: string;
  readonly name: string;
  readonly family: string | null;
  readonly owner: string | null;
  readonly decision_scope: string | null;
  readonly status: string;
  readonly tools: readonly ToolGrant[];
  readonly owned_workflows: readonly OwnedWorkflow[];
  readonly escalation_path: readonly string[] | null;
}

/**
 * A null value on the compacted registry topic: the agent is removed from the registry. It has no value
 * to carry its version, so the producer puts it in a `registry_version` header: the version of the
 * deletion, an edit like any other (docs/design.md, "Registry keys and tombstones").
 */
export interface RegistryTombstone {
  readonly kind: "registry-tombstone";
  readonly tenant_id: string;
  readonly agent_id: string;
  readonly registry_version: number;
  /**
   * When the deletion happened, for the registry's history (model/event-time-findings.ts): a tombstone
   * has no occurred_at of its own, so its Kafka record timestamp stands in.
   */
  readonly occurred_at?: number;
}

export interface OutcomeCreated {
  readonly kind: "outcome-created";
  readonly event_id: string;
  readonly tenant_id: string;
  readonly outcome_id: string;
  readonly agent_id: string;
  readonly status: string;
  readonly correlation_id: string | null;
  readonly created_at: number;
}

export interface EscalationEdge {
  readonly kind: "escalation-edge";
  readonly event_id: string;
  readonly tenant_id: string;
  readonly source_outcome_id: string;
  readonly target_outcome_id: string;
  readonly observed_at: number;
}

export type RegistryEvent = RegistrySnapshot | RegistryTombstone;
export type ProjectorEvent = RegistryEvent | OutcomeCreated | EscalationEdge;
export type EventKind = ProjectorEvent["kind"];

/**
 * The agent-id naming convention (`<prefix>-agt-NNN`). The spec's §3.2 filter uses it to tell agents
 * from human terminals in an escalation path; we also hold registry and outcome agent ids to it.
 */
export const AGENT_ID_PATTERN = /^.+-agt-[0-9]+$/;

export function isAgentId(value: string): boolean {
  return AGENT_ID_PATTERN.test(value);
}
