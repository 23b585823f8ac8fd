import type { EscalationEdge, OutcomeCreated, RegistrySnapshot, RegistryTombstone } from "../../src/model/events.js";
import { type TopicNames, topicNames } from "../../src/topics.js";

let seq = 0;
/**
 * The builders' clock: second n of the tests' day. Snapshots and outcomes default to their sequence
 * number, escalations to second 100; a test about event time sets the times it is about.
 */
export const atSecond = (n: number): number => Date.UTC(2026, 0, 1) + n * 1000;
const at = atSecond;

/** A registry snapshot with sensible defaults; tests override what they are about. */
export function snapshot(agent_id: string, overrides: Partial<RegistrySnapshot> = {}): RegistrySnapshot {
  return {
    kind: "registry-snapshot",
    event_id: `evt-${++seq}`,
    tenant_id: "default",
    registry_version: 1,
    occurred_at: at(seq),
    agent_id,
    name: `Agent ${agent_id}`,
    family: agent_id.split("-agt-")[0] ?? null,
    owner: "team-a",
    decision_scope: null,
    status: "active",
    tools: [],
    owned_workflows: [],
    escalation_path: null,
    ...overrides,
  };
}

export function tombstone(agent_id: string, registry_version = 2): RegistryTombstone {
  return { kind: "registry-tombstone", tenant_id: "default", agent_id, registry_version };
}

export function tool(tool_id: string) {
  return { tool_id, name: `Tool ${tool_id}` };
}

export function workflow(workflow_id: string) {
  return { workflow_id, name: `Workflow ${workflow_id}`, domain: "claims", version: "1.0" };
}

export function outcome(outcome_id: string, agent_id: string, overrides: Partial<OutcomeCreated> = {}): OutcomeCreated {
  return {
    kind: "outcome-created",
    event_id: `evt-${++seq}`,
    tenant_id: "default",
    outcome_id,
    agent_id,
    status: "succeeded",
    correlation_id: null,
    created_at: at(seq),
    ...overrides,
  };
}

export function escalation(source: string, target: string, observedAtSecond = 100): EscalationEdge {
  return {
    kind: "escalation-edge",
    event_id: `evt-${++seq}`,
    tenant_id: "default",
    source_outcome_id: source,
    target_outcome_id: target,
    observed_at: at(observedAtSecond),
  };
}

/** An id that follows every naming rule and is far longer than any index entry Neo4j accepts. */
export function overlong(suffix: string): string {
  return `${"x".repeat(40_000)}${suffix}`;
}

/** Short topic names for unit tests: reg, out, esc, with `.retry` and `.dlq` suffixes. */
export const shortTopicNames = (): TopicNames =>
  topicNames({
    registryMutation: "reg",
    outcomeCreated: "out",
    escalationEdge: "esc",
    retrySuffix: ".retry",
    dlqSuffix: ".dlq",
  } as Parameters<typeof topicNames>[0]);
