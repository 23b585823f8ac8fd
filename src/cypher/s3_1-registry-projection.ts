import { keyIndex, scopedKey } from "./tenant.js";

/** True when this snapshot is the most recent edit to name node `n`: later occurred_at, or a tie won by agent_id. */
const NEWEST_EDIT = (n: string) =>
  `(${n}.registry_edited_at IS NULL OR row.edited_at > ${n}.registry_edited_at OR (row.edited_at = ${n}.registry_edited_at AND row.agent_id >= ${n}.registry_edited_by))`;

/**
 * §3.1 Registry projection — Agent, Workflow, Tool, AUTHORIZED_FOR, OWNS_WORKFLOW.
 *
 * The spec's statement, batched over `$rows` (one collapsed snapshot per agent) and guarded by the
 * registry version: a snapshot older than the one already applied to the agent changes nothing, so a
 * replay of an old prefix of the log never walks the graph back (a revoked tool must not reappear).
 * An equal version re-applies, which is a no-op — unless that version was a tombstone's: a deletion
 * wins a tie, so a late copy of the snapshot it deleted cannot restore the agent's grants. Rows that
 * passed the guard are returned.
 *
 * The guard is evaluated under the agent's write lock (the `_LOCK_` property is set and removed at
 * once, the Cypher manual's idiom against lost updates): a concurrent transaction writing the same
 * agent (another instance after a rebalance, a retry topic's partition) has committed before the
 * version is read, so two writers cannot both pass the guard on the same old version.
 *
 * Each list runs in its own `CALL (a, row) { … }` for the spec's reason: UNWIND over an empty list
 * yields no rows and would otherwise drop the agent row and every projection after it.
 *
 * A Tool or Workflow node is shared by every agent whose snapshot names it, and two snapshots may
 * give it different properties. The spec's bare SET would leave whichever was applied last, which
 * depends on how partitions interleave; here the most recent registry edit wins — the greatest
 * `occurred_at`, ties to the greater agent_id — remembered on the node as `registry_edited_at` and
 * `registry_edited_by`, so the result is the same in any order (read under the node's write lock, as
 * the agent's version is).
 *
 * A tombstone for an agent the graph never projected leaves a :RegistryFence (see registryTombstone);
 * a snapshot passes it only above its version, and one that passes spends it (the agent's own version
 * fences from then on). A snapshot the fence stops leaves no Agent node behind: the MERGE that took
 * the lock made one only for this check, and it is deleted again.
 *
 * Tenant scoping: on a database several tenants share, each `${scopedKey(…)}` opens a node key with
 * tenant_id (cypher/tenant.ts); with one tenant per database the statement is the spec's text, plus the index hints (keyIndex).
 */
export const registryProjection = (scoped: boolean): string => `
UNWIND $rows AS row
MERGE (a:Agent {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id})
  ON CREATE SET a._NEW_ = true
SET a._LOCK_ = true
REMOVE a._LOCK_
WITH a, row {.*, edited_at: datetime({epochMillis: toInteger(row.occurred_at)})} AS row,
     toInteger(row.registry_version) AS version
${fenceOf(scoped)}
WITH a, row, version, fence,
     (fence IS NULL OR fence.registry_version < version)
     AND (a.registry_version IS NULL OR a.registry_version < version
          OR (a.registry_version = version AND a.registry_deleted IS NULL)) AS passes
CALL (a, passes) {
  WITH a WHERE a._NEW_ = true AND NOT passes
  DELETE a
}
WITH a, row, version, fence WHERE passes
CALL (fence) {
  WITH fence WHERE fence IS NOT NULL
  DELETE fence
}
SET a.name             = row.name,
    a.family           = row.family,
    a.owner            = row.owner,
    a.decision_scope   = row.decision_scope,
    a.status           = row.status,
    a.registry_version = version,
    a.registry_deleted = null,
    a._NEW_            = null

WITH a, row
CALL (a, row) {
  UNWIND row.tools AS tool
  MERGE (t:Tool {${scopedKey(scoped, "a.tenant_id")}tool_id: tool.tool_id})
  SET t._LOCK_ = true
  REMOVE t._LOCK_
  WITH a, row, tool, t, ${NEWEST_EDIT("t")} AS newest
  SET t.name               = CASE WHEN newest THEN tool.name ELSE t.name END,
      t.registry_edited_at = CASE WHEN newest THEN row.edited_at ELSE t.registry_edited_at END,
      t.registry_edited_by = CASE WHEN newest THEN row.agent_id ELSE t.registry_edited_by END
  MERGE (a)-[:AUTHORIZED_FOR]->(t)
}
CALL (a, row) {
  UNWIND row.owned_workflows AS wf
  MERGE (w:Workflow {${scopedKey(scoped, "a.tenant_id")}workflow_id: wf.workflow_id})
  SET w._LOCK_ = true
  REMOVE w._LOCK_
  WITH a, row, wf, w, ${NEWEST_EDIT("w")} AS newest
  SET w.name               = CASE WHEN newest THEN wf.name ELSE w.name END,
      w.domain             = CASE WHEN newest THEN wf.domain ELSE w.domain END,
      w.version            = CASE WHEN newest THEN wf.version ELSE w.version END,
      w.registry_edited_at = CASE WHEN newest THEN row.edited_at ELSE w.registry_edited_at END,
      w.registry_edited_by = CASE WHEN newest THEN row.agent_id ELSE w.registry_edited_by END
  MERGE (a)-[:OWNS_WORKFLOW]->(w)
}

// Reconciliation: a removed tool or owned workflow deletes its edge. The far node has no label on
// purpose: with one, a plan compiled on a young graph scanned every Tool/Workflow per row
// (test/int/query-plans.int.spec.ts); these relationships only ever end at a Tool or a Workflow.
CALL (a, row) {
  MATCH (a)-[r:AUTHORIZED_FOR]->(t)
  WHERE NOT t.tool_id IN [tool IN row.tools | tool.tool_id]
  DELETE r
}
CALL (a, row) {
  MATCH (a)-[r:OWNS_WORKFLOW]->(w)
  WHERE NOT w.workflow_id IN [wf IN row.owned_workflows | wf.workflow_id]
  DELETE r
}
RETURN row.i AS i
`;

/**
 * The fence a tombstone leaves for an agent the graph never projected, read under the agent's lock.
 *
 * Why a node of its own label and not properties on the Agent: §4's reachability lists every Agent
 * without a terminal path, so a pseudo-agent made only to remember a deletion would show up there; and
 * an Agent that exists only as someone's escalation target must not take registry properties either,
 * or the graph would depend on whether that target was created before or after the tombstone (another
 * partition). The fence is keyed like an agent (tenant-scoped, unique by §6) and is never part of the
 * projected graph: dumps, reports and §4 do not read it.
 */
const fenceOf = (
  scoped: boolean,
) => `OPTIONAL MATCH (fence:RegistryFence {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id})
${keyIndex(scoped, "fence", "RegistryFence", "agent_id")}`;

/**
 * A tombstone (null value on the compacted topic) means what a "deregistered" snapshot with empty
 * lists means: §3.1 and §3.2 with empty tools, workflows and escalation path. It is versioned by its
 * `registry_version` header and fenced like a snapshot, under the same lock: it applies only when no
 * newer version was applied (a late tombstone must not deregister an agent registered again since).
 * It records its version and `registry_deleted = true`, which makes it win a tie against a snapshot of
 * the same version.
 *
 * The version is read only after the agent's lock is held, so a first snapshot of the agent that is
 * uncommitted meanwhile has committed before (and is deleted). To hold that lock when no Agent node
 * exists, the tombstone MERGEs one and deletes it again before it commits; a concurrent snapshot's
 * MERGE of the same key waits for it and then reads the fence.
 *
 * An agent the registry never projected (no node, or a node that exists only as someone's escalation
 * target) has nothing to remove, and its node is not touched: the tombstone leaves a :RegistryFence
 * with its version instead (the highest, if several), which every later snapshot on any path —
 * retry, `dlq redrive`, replay, the source topic — must pass (registryProjection). `applied` tells a
 * fenced tombstone from one applied; rows of never-projected agents return nothing.
 */
export const registryTombstone = (scoped: boolean): string => `
UNWIND $rows AS row
MERGE (a:Agent {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id})
  ON CREATE SET a._NEW_ = true
SET a._LOCK_ = true
REMOVE a._LOCK_
WITH a, row, toInteger(row.registry_version) AS version
WITH a, row, version, a.registry_version IS NOT NULL AS projected
WITH a, row, version, projected, projected AND a.registry_version <= version AS applied
CALL (a, version, applied) {
  WITH a, version WHERE applied
  SET a.status           = 'deregistered',
      a.registry_version = version,
      a.registry_deleted = true
  WITH a
  CALL (a) {
    MATCH (a)-[r:AUTHORIZED_FOR|OWNS_WORKFLOW]->()
    DELETE r
  }
  CALL (a) {
    MATCH (a)-[stale:CAN_ESCALATE_TO]->(:Agent)
    WHERE stale.declared = true
    SET stale.declared = false
  }
}
CALL (a, row, version, projected) {
  WITH a, row, version WHERE NOT projected
  MERGE (fence:RegistryFence {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id})
  SET fence.registry_version = CASE WHEN fence.registry_version > version THEN fence.registry_version ELSE version END
}
CALL (a) {
  WITH a WHERE a._NEW_ = true
  DELETE a
}
WITH row, projected, applied WHERE projected
RETURN row.i AS i, applied
`;

/** The statements for a database of one tenant: the spec's keys. */
export const REGISTRY_PROJECTION = registryProjection(false);
export const REGISTRY_TOMBSTONE = registryTombstone(false);
