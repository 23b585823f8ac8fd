import { keyIndex, scopedKey } from "./tenant.js";

/**
 * §3.2 Escalation topology — declared half of CAN_ESCALATE_TO.
 *
 * The spec's statement, batched. It runs in the same transaction right after §3.1, and only for the
 * rows §3.1 applied: the agent's stored registry_version equals the row's, and no tombstone holds it,
 * exactly when §3.1 let the snapshot through (a stale snapshot must not re-declare a revoked path
 * either). §3.1 holds the agent's write lock until the transaction ends, so nothing changes between. `escalation_path` is
 * coalesced to [] so a null list revokes every declaration instead of evaluating to null. Entries that
 * do not follow the agent-id convention (human terminals) are filtered out, never merged as agents.
 * Never touches observed_count beyond initialising it on a new edge.
 * `declared_observed` names the targets this row declared that were undeclared and already observed:
 * what resolves an undeclared-escalation finding (model/findings.ts). The subquery aggregates, so it
 * yields its one row even for an empty path and the reconciliation below still runs.
 *
 * Tenant scoping: on a database several tenants share, each `${scopedKey(…)}` opens a node key with
 * tenant_id (cypher/tenant.ts); with one tenant per database the statement is the spec's text, plus the index hints (keyIndex).
 */
export const escalationDeclared = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH (a:Agent {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id})
${keyIndex(scoped, "a", "Agent", "agent_id")}
WHERE a.registry_version = toInteger(row.registry_version) AND a.registry_deleted IS NULL
WITH a, row, coalesce(row.escalation_path, []) AS escalation_path
CALL (a, escalation_path) {
  UNWIND escalation_path AS target_agent_id
  WITH target_agent_id WHERE target_agent_id =~ '.+-agt-[0-9]+'
  MERGE (t:Agent {${scopedKey(scoped, "a.tenant_id")}agent_id: target_agent_id})
  MERGE (a)-[r:CAN_ESCALATE_TO]->(t)
    ON CREATE SET r.observed_count = 0
  WITH t, r, coalesce(r.declared, false) AS was_declared
  SET r.declared = true
  RETURN collect(CASE WHEN NOT was_declared AND r.observed_count > 0 THEN t.agent_id END) AS declared_observed
}

// Reconciliation: a target removed from escalation_path revokes its declaration. The spec writes the
// target as (t:Agent); without the label the plan cannot scan every Agent per row, which it did when
// compiled on a young graph (test/int/query-plans.int.spec.ts). CAN_ESCALATE_TO only ends at an Agent.
CALL (a, escalation_path) {
  MATCH (a)-[stale:CAN_ESCALATE_TO]->(t)
  WHERE stale.declared = true AND NOT t.agent_id IN escalation_path
  SET stale.declared = false
}
RETURN row.i AS i, declared_observed
`;

export const ESCALATION_DECLARED = escalationDeclared(false);
