import { keyIndex, scopedKey } from "./tenant.js";

/**
 * The Outcome node (owned by the Outcome Spec; projected here from `outcome-created`) and §3.3 PRODUCED,
 * run in one transaction. The records of one outcome_id share a partition, so they arrive in the order
 * they were written and the last one's values win, as in order: a producer that re-emits an outcome
 * with a corrected status or agent is followed.
 *
 * Tenant scoping: on a database several tenants share, each `${scopedKey(…)}` opens a node key with
 * tenant_id (cypher/tenant.ts); with one tenant per database the statement is the spec's text, plus the index hints (keyIndex).
 */
export const outcomeProjection = (scoped: boolean): string => `
UNWIND $rows AS row
MERGE (o:Outcome {${scopedKey(scoped, "row.tenant_id")}outcome_id: row.outcome_id})
SET o.agent_id       = row.agent_id,
    o.status         = row.status,
    o.correlation_id = row.correlation_id,
    o.created_at     = datetime({epochMillis: toInteger(row.created_at)})
`;

/**
 * The same for a late record — one read back from the retry topic (deferred earlier) or re-driven
 * from the dead-letter topic. It was written to the graph when it was first consumed, or never was;
 * whatever its source partition has brought since is newer. So it only creates an outcome the graph
 * lacks and never overwrites one: a retry must not walk status, created_at or the producing agent
 * back. `current` says whether the node still names the record's agent (if not, the record is stale).
 *
 * The node is read under its write lock (`_LOCK_` set and removed at once, as §3.1 does for an agent).
 * MERGE on an existing node takes no lock, so without it a correction of the outcome's agent that is
 * uncommitted on its source partition was invisible here: this record read the old agent as current,
 * waited for the lock only when PRODUCED linked that agent, and then linked it after the correction had
 * linked the new one — two producers (test/int/races). Now it waits first and sees the correction.
 */
export const outcomeProjectionLate = (scoped: boolean): string => `
UNWIND $rows AS row
MERGE (o:Outcome {${scopedKey(scoped, "row.tenant_id")}outcome_id: row.outcome_id})
  ON CREATE SET o.agent_id       = row.agent_id,
                o.status         = row.status,
                o.correlation_id = row.correlation_id,
                o.created_at     = datetime({epochMillis: toInteger(row.created_at)})
SET o._LOCK_ = true
REMOVE o._LOCK_
RETURN row.i AS i, o.agent_id = row.agent_id AS current
`;

/**
 * §3.3 PRODUCED, batched, for outcomes the statement before it wrote (the late path). A row whose
 * agent has no node yet returns nothing: its precondition did not hold and the caller defers the
 * record. `existed` tells a redelivery from a first application.
 */
export const produced = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH (o:Outcome {${scopedKey(scoped, "row.tenant_id")}outcome_id: row.outcome_id})
${keyIndex(scoped, "o", "Outcome", "outcome_id")}
${producedFromOutcome(scoped)}`;

/**
 * The Outcome node and §3.3 PRODUCED as one statement, for the records read in order: "one more MERGE
 * in the same projection step", as the spec has it. The node is written exactly as `outcomeProjection`
 * writes it, then linked exactly as `produced` links it, on the node the MERGE bound: as two statements
 * each row was unwound twice and its outcome looked up in the index twice, with a second parameter
 * list sent for it.
 */
export const outcomeWithProduced = (scoped: boolean): string => `${outcomeProjection(scoped)}WITH row, o
${producedFromOutcome(scoped)}`;

/**
 * §3.3 from a bound outcome `o`. Two changes to the spec's statement, both so that an outcome's
 * producer is the agent its newest record names and no other: the agent is the one the Outcome node
 * names (`o.agent_id`, which equals `$agent_id` unless a newer record of the outcome was applied
 * since — then a late record must not link its older agent), and a PRODUCED from any other agent is
 * deleted first (the reconciliation §3.1 does for a removed tool, applied to an outcome re-emitted
 * with another agent).
 *
 * `existed` is read from the outcome's side on purpose. An agent gains a PRODUCED relationship per
 * outcome and turns into a dense node partway through a backlog; a transaction that had read its
 * relationship chain (as `EXISTS { (a)-[:PRODUCED]->(o) }` does) while another one converted it fails
 * with "read outdated data" and is retried whole. Listing the one or two producers of the outcome
 * reads nothing of the agent's (measured: 6 such retries in 200,000 outcomes → 0, and 12% faster).
 *
 * The previous producer is matched without its :Agent label (only agents produce outcomes): with the
 * label, a plan compiled while the graph held agents but no outcomes scanned every agent per row —
 * ~25 million db hits per 1,000 outcomes, 4 s instead of 50 ms — until Neo4j replanned it
 * (test/int/query-plans.int.spec.ts).
 */
const producedFromOutcome = (scoped: boolean): string => `CALL (o) {
  MATCH (o)<-[previous:PRODUCED]-(other)
  WHERE other.agent_id <> o.agent_id
  DELETE previous
}
WITH row, o
MATCH (a:Agent {${scopedKey(scoped, "o.tenant_id")}agent_id: o.agent_id})
${keyIndex(scoped, "a", "Agent", "agent_id")}
WITH row, a, o, a IN [(o)<-[:PRODUCED]-(producer) | producer] AS existed
MERGE (a)-[:PRODUCED]->(o)
RETURN row.i AS i, existed
`;

export const OUTCOME_PROJECTION = outcomeProjection(false);
export const OUTCOME_PROJECTION_LATE = outcomeProjectionLate(false);
export const PRODUCED = produced(false);
export const OUTCOME_WITH_PRODUCED = outcomeWithProduced(false);
