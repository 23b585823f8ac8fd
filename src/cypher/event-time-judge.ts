import { keyIndex, scopedKey } from "./tenant.js";

/**
 * What the event-time judge (pipeline/event-time-judge.ts) reads and writes: undeclared escalations
 * decided at each escalation's own observed_at against the registry's history (registry-history.ts),
 * not at the moment the record happened to be applied.
 *
 * §3.4 marks every new observation between two agents (`obs.unjudged`, the wall time it was marked) and
 * the history marks every new registry change (`c.unjudged`); both are indexed (s6-constraints.ts), so a
 * round finds its work without a scan. Nothing here touches §3's nodes or edges. `$tenant` names the
 * tenant of a database that serves one, whose nodes carry no tenant_id (null on a shared database).
 */

/** When the oldest mark still waiting was made (null: none waits). */
export const OLDEST_MARK = `
CALL () { MATCH ()-[o:OBSERVED]->() WHERE o.unjudged IS NOT NULL RETURN min(o.unjudged) AS observed }
CALL () { MATCH (c:RegistryChange) WHERE c.unjudged IS NOT NULL RETURN min(c.unjudged) AS changed }
RETURN CASE WHEN observed IS NULL THEN changed WHEN changed IS NULL OR observed < changed THEN observed ELSE changed END AS oldest
`;

/**
 * Observations not judged yet whose time is below `$watermark` (null: all of them), oldest mark first:
 * the edge's two agents and the evidence.
 */
export const UNJUDGED_OBSERVATIONS = `
MATCH (source:Outcome)-[obs:OBSERVED]->(target:Outcome)
WHERE obs.unjudged IS NOT NULL
  AND ($watermark IS NULL OR obs.recorded_at < datetime({epochMillis: toInteger($watermark)}))
WITH source, target, obs
ORDER BY obs.unjudged
LIMIT toInteger($limit)
MATCH (source)<-[:PRODUCED]-(a:Agent)
MATCH (target)<-[:PRODUCED]-(b:Agent)
RETURN coalesce(a.tenant_id, $tenant) AS tenant_id, a.agent_id AS source_agent_id, b.agent_id AS target_agent_id,
       obs.recorded_at.epochMillis AS observed_at, source.outcome_id AS source_outcome_id,
       target.outcome_id AS target_outcome_id, obs.unjudged AS unjudged
`;

/**
 * Registry changes not judged yet whose time is below `$watermark` (null: all), in event-time order:
 * terminal reachability is walked instant by instant, so a page never skips ahead of one it leaves.
 */
export const UNJUDGED_CHANGES = `
MATCH (c:RegistryChange)
WHERE c.unjudged IS NOT NULL
  AND ($watermark IS NULL OR c.occurred_at < datetime({epochMillis: toInteger($watermark)}))
RETURN c.tenant_id AS tenant_id, c.agent_id AS agent_id, c.registry_version AS registry_version,
       c.occurred_at.epochMillis AS occurred_at, c.unjudged AS unjudged
ORDER BY c.occurred_at, c.agent_id, c.registry_version
LIMIT toInteger($limit)
`;

/**
 * The judged observations of the given agents' edges at or after each one's `since`: what a registry
 * change of theirs re-judges (a change that came late may open an episode in the past). Walked from the
 * agent (sought by key) through its outcomes: a read of the recorded_at index, planned as a scan of it
 * under a catch-up's statistics, read every observation of every agent once per page — so the time is
 * compared as a number, which no index answers, and the planner has only the agent's outcomes to walk.
 */
export const observationsSince = (scoped: boolean): string => `
UNWIND $agents AS agent
MATCH (a:Agent {${scopedKey(scoped, "agent.tenant_id")}agent_id: agent.agent_id})
${keyIndex(scoped, "a", "Agent", "agent_id")}
MATCH (a)-[:PRODUCED]->(source:Outcome)-[obs:OBSERVED]->(target:Outcome)
WHERE obs.recorded_at.epochMillis >= toInteger(agent.since) AND obs.unjudged IS NULL
MATCH (target)<-[:PRODUCED]-(b:Agent)
RETURN agent.tenant_id AS tenant_id, a.agent_id AS source_agent_id, b.agent_id AS target_agent_id,
       obs.recorded_at.epochMillis AS observed_at, source.outcome_id AS source_outcome_id,
       target.outcome_id AS target_outcome_id
`;

/** The undeclared-escalation findings recorded for edges of the given agents, with their episode. */
export const RECORDED_ESCALATION_FINDINGS = `
UNWIND $agents AS agent
MATCH (f:Finding {tenant_id: agent.tenant_id, source_agent_id: agent.agent_id})
WHERE f.kind = 'undeclared-escalation'
RETURN f.finding_id AS finding_id, f.tenant_id AS tenant_id, f.source_agent_id AS source_agent_id,
       f.target_agent_id AS target_agent_id, f.episode AS episode,
       EXISTS { MATCH (:Finding {tenant_id: f.tenant_id, resolves: f.finding_id}) } AS resolved
`;

/**
 * The tenant's terminal findings a walk from `$since` on depends on (model/event-time-reach.ts
 * recordedForWalk), with the time of the change that caused each: every terminal-unreachable finding
 * not resolved before `$since`, sought by `open_until` (cypher/findings.ts), and its resolutions by the
 * resolves index. What a page reads grows with the open findings and the recent ones, not with every
 * transition the tenant ever had.
 */
export const RECORDED_TERMINAL_FINDINGS = `
MATCH (f:Finding)
WHERE f.tenant_id = $tenant_id AND f.open_until >= datetime({epochMillis: toInteger($since)})
  AND f.kind = 'terminal-unreachable'
CALL (f) {
  RETURN f AS g
  UNION
  MATCH (g:Finding {resolves: f.finding_id})
  WHERE g.tenant_id = f.tenant_id
  RETURN g
}
RETURN g.finding_id AS finding_id, g.tenant_id AS tenant_id, g.kind AS kind,
       g.source_agent_id AS source_agent_id, g.resolves AS resolves, g.registry_occurred_at.epochMillis AS at
`;

/**
 * Removes the marks of judged observations, unless a new mark (an earlier observation) replaced one; by
 * key (the indexes of marks are no way in).
 */
export const clearObservations = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH (source:Outcome {${scopedKey(scoped, "row.tenant_id")}outcome_id: row.source_outcome_id})-[obs:OBSERVED]->(target:Outcome {${scopedKey(scoped, "row.tenant_id")}outcome_id: row.target_outcome_id})
${keyIndex(scoped, "source", "Outcome", "outcome_id")}
WHERE obs.unjudged = row.unjudged
REMOVE obs.unjudged
`;

/** Removes the marks of judged registry changes and notes which came late; by key (the index of marks is no way in). */
export const clearChanges = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH (c:RegistryChange {${scopedKey(scoped, "row.tenant_id")}agent_id: row.agent_id, registry_version: toInteger(row.registry_version)})
${keyIndex(scoped, "c", "RegistryChange", "agent_id, registry_version")}
WHERE c.unjudged = row.unjudged
SET c.late = row.late
REMOVE c.unjudged
`;

/** How far the judge has decided: every observation below `judged_through` was judged. */
export const JUDGE_PROGRESS = `
OPTIONAL MATCH (p:JudgeProgress {name: 'undeclared-escalation'})
RETURN p.judged_through AS judged_through
`;

export const ADVANCE_JUDGE_PROGRESS = `
UNWIND $rows AS row
MERGE (p:JudgeProgress {name: 'undeclared-escalation'})
SET p.judged_through = CASE WHEN p.judged_through IS NULL OR p.judged_through < row.judged_through
                            THEN row.judged_through ELSE p.judged_through END
`;

/**
 * What waits for the judge in one database, for `status`: the marks and the oldest's time (Neo4j's
 * clock, epoch ms), and how far the judge has decided (event time). Both counts read the indexes of marks.
 */
export const JUDGE_STATUS = `
CALL () { MATCH ()-[o:OBSERVED]->() WHERE o.unjudged IS NOT NULL RETURN count(o) AS observations, min(o.unjudged) AS observed }
CALL () { MATCH (c:RegistryChange) WHERE c.unjudged IS NOT NULL RETURN count(c) AS changes, min(c.unjudged) AS changed }
OPTIONAL MATCH (p:JudgeProgress {name: 'undeclared-escalation'})
RETURN observations, changes,
       CASE WHEN observed IS NULL THEN changed WHEN changed IS NULL OR observed < changed THEN observed ELSE changed END AS oldest,
       p.judged_through AS judged_through, timestamp() AS now
`;
