import { keyIndex, scopedKey } from "./tenant.js";

/**
 * The outcome-to-outcome ESCALATED_TO relationship (the Outcome Spec's `escalated-to`) and §3.4, the
 * observed half of CAN_ESCALATE_TO, batched, as one statement: §3.4 "runs when an outcome-to-outcome
 * `escalated-to` edge is projected between two outcomes produced by two different agents", so the
 * statement projects the edge, finds the two producers, and applies §3.4 to the rows whose producers
 * differ. As two statements each row was sent and unwound twice and its outcomes and producers looked
 * up twice: on the same batches Neo4j spent 30% less CPU on the one (bench/HISTORY.md, twenty-third round).
 *
 * Each row returns whether both outcomes have a producing agent (`produced`) and whether it is the
 * same agent; a row with a missing outcome returns nothing and the caller defers it. `observed_at`
 * keeps the earliest observation so that arrival order does not change the graph. For the rows §3.4
 * ran on, the row also carries what governance findings are derived from (model/findings.ts), read by
 * the write itself rather than by a query of its own: `already_counted`, the edge's two agents, its
 * observed_count after the statement's increments so far and its `declared` flag.
 *
 * The batch's agents are write-locked before any CAN_ESCALATE_TO is merged, all of them, in agent_id
 * order (`_LOCK_` set and removed, as §3.1 does). A MERGE that creates a relationship locks both of
 * its end nodes, so row by row a batch would lock its agents pair by pair in the order of its target
 * outcomes, while §3.3 batches lock them in agent_id order (projection/outcomes.ts): two such
 * transactions sharing two agents deadlocked, and Neo4j aborted one to be retried whole. Locked in
 * one global order they wait for each other instead: at half capacity the escalation transactions'
 * deadlocks fell by about 40% (bench/HISTORY.md, sixteenth round). Those left are on agents too, and
 * partly in the order Neo4j itself takes node locks in at commit (by node id). The increment's
 * exactness does not rest on these locks: with them taken out, two transactions counting on one edge
 * still both counted (test/int/races), Neo4j making the second wait for the first's SET on the
 * relationship. Locking existing edges instead of their agents, so that §3.3 could link those
 * agents' outcomes meanwhile, brought more deadlocks and was not kept (bench/HISTORY.md, twenty-seventh round).
 *
 * Tenant scoping: on a database several tenants share, each `${scopedKey(…)}` opens a node key with
 * tenant_id (cypher/tenant.ts); with one tenant per database the statement is the spec's text, plus
 * the index hints (keyIndex).
 */
export const escalation = (scoped: boolean): string => `
UNWIND $rows AS row
${escalatedToEdge(scoped)}
WITH row, source, target
OPTIONAL MATCH (source)<-[:PRODUCED]-(from:Agent)
OPTIONAL MATCH (target)<-[:PRODUCED]-(to:Agent)
WITH collect({row: row, source: source, target: target, from: from, to: to}) AS found
${LOCK_AGENTS}
UNWIND found AS pair
WITH pair.row AS row, pair.source AS source, pair.target AS target, pair.from AS from, pair.to AS to
OPTIONAL CALL (row, source, target, from, to) {
  WITH * WHERE from <> to
  ${OBSERVED_HALF.replaceAll("\n", "\n  ")}
  RETURN already_counted, r.observed_count AS observed_count, r.declared AS declared
}
RETURN row.i AS i, from IS NOT NULL AND to IS NOT NULL AS produced, from = to AS same_agent,
       already_counted, from.agent_id AS from_agent, to.agent_id AS to_agent, observed_count, declared
`;

/**
 * The write lock on every agent of the rows in `found` whose two producers differ, taken in agent_id
 * order (why: `escalation` above).
 */
export const LOCK_AGENTS = `CALL (found) {
  UNWIND found AS pair
  WITH pair WHERE pair.from <> pair.to
  UNWIND [pair.from, pair.to] AS agent
  WITH DISTINCT agent
  ORDER BY agent.agent_id, agent.tenant_id
  SET agent._LOCK_ = true
  REMOVE agent._LOCK_
}`;

/**
 * ESCALATED_TO between the row's two outcomes, matched by key; binds `row`, `source`, `target`. A row
 * whose outcome is missing ends here.
 */
export const escalatedToEdge = (
  scoped: boolean,
): string => `MATCH (source:Outcome {${scopedKey(scoped, "row.tenant_id")}outcome_id: row.source_outcome_id})
${keyIndex(scoped, "source", "Outcome", "outcome_id")}
MATCH (target:Outcome {${scopedKey(scoped, "row.tenant_id")}outcome_id: row.target_outcome_id})
${keyIndex(scoped, "target", "Outcome", "outcome_id")}
WITH row, source, target, datetime({epochMillis: toInteger(row.first_observed_at)}) AS first_seen
MERGE (source)-[e:ESCALATED_TO]->(target)
SET e.observed_at = CASE WHEN e.observed_at IS NULL OR first_seen < e.observed_at THEN first_seen ELSE e.observed_at END`;

/**
 * §3.4 on a bound row, its outcomes `source` and `target` and their two different producers `from`
 * and `to`. As in the spec, the increment sits in the ON CREATE of the :OBSERVED marker, so a
 * redelivered pair is a no-op, and `declared` is only initialised (false) on an edge this statement
 * creates. One deliberate refinement: the spec sets last_observed_at and recorded_at only when the
 * marker is created, which makes them depend on arrival order. Here recorded_at keeps the pair's
 * earliest observation and last_observed_at the latest observation between the two agents — the
 * same values in-order delivery gives, whatever order records actually arrive in.
 *
 * `obs.unjudged` (the time it was marked) leaves the observation for the event-time judge
 * (pipeline/event-time-judge.ts), which decides at its recorded_at whether the registry declared the
 * edge then and removes the mark; an earlier observation of the same pair marks it again.
 */
export const OBSERVED_HALF = `WITH row, source, target, from, to,
     datetime({epochMillis: toInteger(row.first_observed_at)}) AS first_seen,
     datetime({epochMillis: toInteger(row.last_observed_at)}) AS last_seen,
     EXISTS { (source)-[:OBSERVED]->(target) } AS already_counted
MERGE (from)-[r:CAN_ESCALATE_TO]->(to)
  ON CREATE SET r.declared = false, r.observed_count = 0
MERGE (source)-[obs:OBSERVED]->(target)
  ON CREATE SET r.observed_count = r.observed_count + 1,
                obs.recorded_at  = first_seen,
                obs.unjudged     = timestamp()
SET r.last_observed_at = CASE WHEN r.last_observed_at IS NULL OR r.last_observed_at < last_seen THEN last_seen ELSE r.last_observed_at END,
    obs.unjudged       = CASE WHEN first_seen < obs.recorded_at THEN timestamp() ELSE obs.unjudged END,
    obs.recorded_at    = CASE WHEN first_seen < obs.recorded_at THEN first_seen ELSE obs.recorded_at END`;

export const ESCALATION = escalation(false);
