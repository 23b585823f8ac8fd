import type { ProjectorEvent, RegistrySnapshot } from "../src/model/events.js";
import { type EventLog, generateEventLog, SMALL_WORKLOAD } from "./generate.js";

export const DEMO_SEED = 2026;

/**
 * The demo's story: three dozen agents in five families, with os-agt-001 and os-agt-004 as control
 * terminals and human terminals in escalation paths; some agents own workflows but hold no tool; a
 * stream of outcomes and escalations with undeclared escalations and redelivered duplicates; and, at
 * the end, a registry edit that revokes one agent's tool and one of its escalation paths.
 */
export function demoEventLog(): { log: EventLog; revocation: RegistrySnapshot; events: ProjectorEvent[] } {
  const log = generateEventLog(DEMO_SEED, {
    ...SMALL_WORKLOAD,
    agents: 36,
    toolsPerAgent: 3,
    workflowsPerAgent: 2,
    escalationTargetsPerAgent: 2,
    editsPerAgent: 1,
    outcomes: 1500,
    escalations: 600,
    duplicateRatio: 0.1,
    undeclaredRatio: 0.04,
  });
  // The last snapshot of the first agent that has both a tool and an agent escalation target.
  const latest = new Map<string, RegistrySnapshot>();
  for (const event of log.registry) if (event.kind === "registry-snapshot") latest.set(event.agent_id, event);
  const subject = [...latest.values()].find(
    (s) => s.tools.length > 1 && (s.escalation_path ?? []).filter((t) => t.includes("-agt-")).length > 1,
  ) as RegistrySnapshot;
  const path = subject.escalation_path ?? [];
  const revokedTarget = path.find((t) => t.includes("-agt-"));
  const revocation: RegistrySnapshot = {
    ...subject,
    event_id: `${subject.event_id}-revoke`,
    registry_version: subject.registry_version + 1,
    occurred_at: subject.occurred_at + 60_000,
    tools: subject.tools.slice(1),
    escalation_path: path.filter((t) => t !== revokedTarget),
  };
  return { log, revocation, events: [...log.registry, ...log.outcomes, ...log.escalations, revocation] };
}
