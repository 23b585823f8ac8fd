import { reachesTerminal } from "./s4-queries.js";
import { keyIndex, scopedKey } from "./tenant.js";

/**
 * Reachability around a registry change, for the terminal-unreachable findings (model/findings.ts,
 * model/reach.ts). Only the agents a change can affect are read: a §3.1/§3.2 write changes the
 * declared edges leaving the changed agent and nothing else, so an agent whose answer to §4's
 * "reaches a control terminal" changes is the changed agent or had a declared path to it — before
 * the change for a loss, and for a regain too (a new path runs through its first changed agent,
 * reached over edges no change touched).
 *
 * `affectedBefore` runs first in the registry transaction: for the batch's changed agents (`$rows`),
 * the agents at or upstream of them over declared edges (the upstream walk keeps distinct agents, so
 * a shared ancestor is expanded once), each with the changed agents it reached (`causes`) and its
 * declared targets (`next`). `affectedAfter` runs after §3.1/§3.2 over that same set: its declared
 * targets now, whether it is deregistered, and its open terminal-unreachable findings (those no
 * resolution answers yet: one at most, unless two batches raced). `targetsReach` answers §4's question for the targets outside the set, the
 * only walks down the graph.
 */
const declaredTargets = (a: string) =>
  `COLLECT { MATCH (${a})-[r:CAN_ESCALATE_TO]->(n) WHERE r.declared = true RETURN DISTINCT n.agent_id }`;

const agentOfRow = (scoped: boolean, a: string) => `UNWIND $rows AS row
MATCH (${a}:Agent {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id})
${keyIndex(scoped, a, "Agent", "agent_id")}`;

export const affectedBefore = (scoped: boolean): string => `
${agentOfRow(scoped, "c")}
CALL (c) {
  // No label on the far end (CAN_ESCALATE_TO links Agents only): a plan may then only walk up from c.
  MATCH (a)-[:CAN_ESCALATE_TO*0.. {declared: true}]->(c)
  RETURN DISTINCT a
}
WITH row.tenant_id AS tenant_id, a, collect(DISTINCT row.agent_id) AS causes
RETURN tenant_id, a.agent_id AS agent_id, causes, ${declaredTargets("a")} AS next
`;

export const affectedAfter = (scoped: boolean): string => `
${agentOfRow(scoped, "a")}
RETURN row.tenant_id AS tenant_id, a.agent_id AS agent_id, ${declaredTargets("a")} AS next,
       coalesce(a.status = 'deregistered', false) AS deregistered,
       COLLECT {
         MATCH (f:Finding {tenant_id: row.tenant_id, source_agent_id: row.agent_id})
         WHERE f.kind = 'terminal-unreachable'
           AND NOT EXISTS {
             MATCH (r:Finding {tenant_id: row.tenant_id, source_agent_id: row.agent_id})
             WHERE r.resolves = f.finding_id
           }
         RETURN f.finding_id ORDER BY f.finding_id
       } AS open
`;

export const targetsReach = (scoped: boolean): string => `
${agentOfRow(scoped, "a")}
RETURN row.tenant_id AS tenant_id, a.agent_id AS agent_id, ${reachesTerminal("a")} AS reachable
`;
