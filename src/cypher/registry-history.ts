import { keyIndex, scopedKey } from "./tenant.js";

/**
 * The registry's history of declarations (issue 53), kept beside §3.2's `declared` flag, which stays
 * current-state as the spec says: one :RegistryChange per (tenant, agent, registry_version), with the
 * change's event time and the agent ids its escalation path declared (model/event-time-findings.ts
 * `registryChange`). Undeclared escalations are judged against it at their own observed_at.
 *
 * Every registry record adds its change, one the version guard calls stale (a lower version arriving
 * late) too, so the history is the same set whatever the delivery order; it never touches the Agent
 * node or its edges. Written once (ON CREATE), so a redelivery changes nothing — except that a
 * tombstone wins a tie with a snapshot of its version, as it does in §3.1: whichever arrives first, the
 * change ends up deleted, declaring nothing, at the tombstone's time (its Kafka record timestamp).
 *
 * No rebuild wipes it: the compacted registry topic keeps only each agent's latest record, so the
 * history could not be rebuilt from it; replayed records MERGE the changes they name again, a no-op.
 * Retention: compactRegistryHistory removes what can no longer matter; a change below the version it
 * kept (the agent's `history_floor`) is not written again when a replay brings it back.
 * `unjudged` (the time it was marked) leaves the change for the event-time judge: what it ends or opens
 * (pipeline/event-time-judge.ts), which removes the mark and notes whether it came late.
 */
export const recordRegistryChanges = (scoped: boolean): string => `
UNWIND $rows AS row
OPTIONAL MATCH (agent:Agent {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id})
${keyIndex(scoped, "agent", "Agent", "agent_id")}
WITH row, agent
WHERE agent.history_floor IS NULL OR toInteger(row.registry_version) >= agent.history_floor
MERGE (c:RegistryChange {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id, registry_version: toInteger(row.registry_version)})
  ON CREATE SET c.tenant_id   = row.tenant_id,
                c.occurred_at = datetime({epochMillis: toInteger(row.occurred_at)}),
                c.declared    = row.declared,
                c.deleted     = row.deleted,
                c.retired     = row.retired,
                c.unjudged    = timestamp()
WITH c, row
CALL (c, row) {
  WITH c, row WHERE row.deleted AND NOT c.deleted
  SET c.occurred_at = datetime({epochMillis: toInteger(row.occurred_at)}),
      c.declared    = [],
      c.deleted     = true,
      c.retired     = true,
      c.unjudged    = timestamp()
}
`;

/**
 * The terminal walk's input (model/event-time-reach.ts) reads what the instants from `$since` on can
 * depend on, not the tenant's whole history: every change from `$since` on (REGISTRY_CHANGES_SINCE),
 * then the whole history of the agents those belong to (registryHistory), and for every other agent
 * only its change in force, its highest version (registryHeads): all its changes are older, so that one
 * is in force at every instant from `$since` on. A retired head declares nothing, reaches nothing and
 * changes nobody's path, so it is left out. The heads are found from the Agent nodes: an agent whose
 * highest change is not retired was projected by it (§3.1 applies the highest version; only a higher
 * tombstone leaves a fence instead), so it has one.
 */
export const REGISTRY_CHANGES_SINCE = `
MATCH (c:RegistryChange)
WHERE c.occurred_at >= datetime({epochMillis: toInteger($since)}) AND c.tenant_id = $tenant_id
RETURN DISTINCT c.agent_id AS agent_id
`;

export const registryHeads = (scoped: boolean): string => `
MATCH (a:Agent${scoped ? " {tenant_id: $tenant_id}" : ""})
CALL (a) {
  MATCH (c:RegistryChange)
  USING INDEX c:RegistryChange(${scoped ? "tenant_id, " : ""}agent_id, registry_version)
  WHERE ${scoped ? "c.tenant_id = a.tenant_id AND " : ""}c.agent_id = a.agent_id AND c.registry_version IS NOT NULL
  RETURN c ORDER BY c.registry_version DESC LIMIT 1
}
WITH c WHERE c.tenant_id = $tenant_id AND NOT coalesce(c.retired, c.deleted, false)
RETURN c.tenant_id AS tenant_id, c.agent_id AS agent_id, c.registry_version AS registry_version,
       c.occurred_at.epochMillis AS occurred_at, c.declared AS declared, coalesce(c.late, false) AS late,
       false AS retired
`;

/**
 * The given agents' histories, oldest version first (the judge's input): sought in the key constraint's
 * index by its leading properties (the version only present), not found by a scan of every change.
 */
export const registryHistory = (scoped: boolean): string => `
UNWIND $agents AS agent
MATCH (c:RegistryChange)
USING INDEX c:RegistryChange(${scoped ? "tenant_id, " : ""}agent_id, registry_version)
WHERE c.tenant_id = agent.tenant_id AND c.agent_id = agent.agent_id AND c.registry_version IS NOT NULL
RETURN c.tenant_id AS tenant_id, c.agent_id AS agent_id, c.registry_version AS registry_version,
       c.occurred_at.epochMillis AS occurred_at, c.declared AS declared, coalesce(c.late, false) AS late,
       coalesce(c.retired, c.deleted, false) AS retired
ORDER BY tenant_id, agent_id, registry_version
`;

/**
 * Retention (REGISTRY_HISTORY_RETENTION_MS): of each agent's judged changes older than `$cutoff`, only
 * the one in force at the cutoff (the highest version among them) is kept — the change in force at any
 * time from the cutoff on stays the same. The kept version becomes the agent's `history_floor`, so a
 * replayed older record does not bring a removed change back (recordRegistryChanges). One row,
 * `{cutoff}` (epoch ms); at most COMPACTED_AGENTS agents a call, found through the
 * `registry_change_occurred_at` index: the caller calls again while a call answers that many.
 */
export const COMPACTED_AGENTS = 1_000;
export const compactRegistryHistory = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH (c:RegistryChange)
WHERE c.occurred_at < datetime({epochMillis: toInteger(row.cutoff)}) AND c.unjudged IS NULL
WITH c ORDER BY c.registry_version DESC
WITH c.tenant_id AS tenant_id, c.agent_id AS agent_id, collect(c) AS old
WHERE size(old) > 1
WITH tenant_id, agent_id, old[0] AS kept, old[1..] AS gone
LIMIT ${COMPACTED_AGENTS}
OPTIONAL MATCH (agent:Agent {${scopedKey(scoped, "tenant_id")}agent_id: agent_id})
${keyIndex(scoped, "agent", "Agent", "agent_id")}
FOREACH (a IN CASE WHEN agent IS NULL THEN [] ELSE [agent] END | SET a.history_floor = kept.registry_version)
FOREACH (g IN gone | DELETE g)
RETURN count(*) AS agents, sum(size(gone)) AS removed
`;
