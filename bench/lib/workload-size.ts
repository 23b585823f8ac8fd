/** The bench's workload shape, without the command line (bench/args.ts parses that on import). */
import type { WorkloadSize } from "../../workload/generate.js";

/** 10% of the escalation-edge records are redelivered duplicates: n originals plus n/9 copies. */
export function workloadSize(agents: number, outcomes: number, escalations: number): WorkloadSize {
  return {
    agents,
    toolsPerAgent: 5,
    workflowsPerAgent: 3,
    escalationTargetsPerAgent: 2,
    editsPerAgent: 1,
    outcomes,
    escalations: Math.round(escalations * 0.9),
    duplicateRatio: 1 / 9,
    undeclaredRatio: 0.1,
    tenantId: "default",
  };
}
