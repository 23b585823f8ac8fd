import { keyIndex, scopedKey } from "./tenant.js";

/**
 * Wipe before a rebuild (§7: wiping the registry projection and rebuilding it from the Agent Registry
 * must give the same graph). Only what the registry owns goes, and is then rebuilt from the compacted
 * registry topic, which keeps each agent's latest record for good: AUTHORIZED_FOR and OWNS_WORKFLOW,
 * the declared half of CAN_ESCALATE_TO, and the registry properties of the agents the topic still
 * holds a snapshot for.
 *
 * Kept as the graph holds them, because they come from the outcome and escalation topics, whose
 * records expire: Outcome nodes, PRODUCED, ESCALATED_TO, the :OBSERVED markers and the observed half
 * (observed_count, last_observed_at). Agent nodes stay, so PRODUCED and CAN_ESCALATE_TO keep their
 * ends; Tool and Workflow nodes stay, and the replayed snapshots set their properties again.
 *
 * These run in the same explicit transaction as the §3.1/§3.2 statements that rebuild (hence no
 * `CALL { … } IN TRANSACTIONS`, which would commit the wipe on its own): a failure anywhere rolls
 * the wipe back with everything else. Each takes one row, `{tenant_id}`, which scopes it to one
 * tenant on a database several tenants share and is ignored otherwise.
 */
const agents = (scoped: boolean) => `(a:Agent${scoped ? " {tenant_id: row.tenant_id}" : ""})`;

export const wipeRegistryEdges = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH ${agents(scoped)}-[r:AUTHORIZED_FOR|OWNS_WORKFLOW]->()
DELETE r
`;

export const wipeDeclared = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH ${agents(scoped)}-[r:CAN_ESCALATE_TO]->(:Agent)
WHERE r.declared = true
SET r.declared = false
`;

/** The agents whose latest record on the topic is a snapshot (one row each): the rebuild sets all of this again. */
export const wipeAgentRegistryState = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH (a:Agent {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id})
${keyIndex(scoped, "a", "Agent", "agent_id")}
SET a.name             = null,
    a.family           = null,
    a.owner            = null,
    a.decision_scope   = null,
    a.status           = null,
    a.registry_version = null,
    a.registry_deleted = null
`;
