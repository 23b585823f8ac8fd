import { keyIndex, scopedKey } from "./tenant.js";

/**
 * The findings outbox: one :Finding node per governance finding (model/findings.ts), written in the
 * transaction whose §3.1/§3.2/§3.4 write caused it and published to the findings topic after it commits.
 * A Finding is no Agent, Workflow, Tool or Outcome, so no §4 query, dump or rebuild wipe touches it.
 *
 * MERGE on the id, with everything else set only ON CREATE: a redelivered or replayed record, another
 * instance or a retried transaction never writes a second finding nor changes one. `published` is the
 * one property written later (markPublished). `existed` says whether the node was there already, so
 * only new findings are counted. Every Finding carries tenant_id; its key is composite with it on a
 * database several tenants share, as every key is there (cypher/tenant.ts).
 *
 * The evidence (model/findings.ts FindingEvidence) is set with the rest, null where the deciding step
 * did not know it; the event times are stored as datetimes, as detected_at is.
 */
const atOrNull = (ms: string) => `CASE WHEN ${ms} IS NULL THEN null ELSE datetime({epochMillis: toInteger(${ms})}) END`;

/** The evidence columns, as the record carries them (epoch ms for the times). */
const EVIDENCE = `f.observed_at.epochMillis AS observed_at, f.source_outcome_id AS source_outcome_id,
       f.target_outcome_id AS target_outcome_id, f.registry_version AS registry_version,
       f.registry_occurred_at.epochMillis AS registry_occurred_at, coalesce(f.late, false) AS late`;

/**
 * A terminal-unreachable finding's `open_until`: the time of the earliest change that resolved it, far
 * in the future while none has (and always on one recorded before event-time judging, which has no
 * time). The event-time judge seeks by it the findings a walk from some instant on depends on, those
 * not resolved before it (event-time-judge.ts RECORDED_TERMINAL_FINDINGS), instead of reading every
 * finding ever recorded; recordResolutions keeps it.
 */
const OPEN_UNTIL_NEVER = "datetime({epochMillis: 8640000000000000})";
const OPEN_UNTIL_ALWAYS_PAST = "datetime({epochMillis: -8640000000000000})";

const mergeFinding = (scoped: boolean, carried = "") => `
WITH row, ${carried}EXISTS { MATCH (:Finding {${scopedKey(scoped, "row.tenant_id")}finding_id: row.finding_id}) } AS existed
MERGE (f:Finding {${scopedKey(scoped, "row.tenant_id")}finding_id: row.finding_id})
  ON CREATE SET f.tenant_id       = row.tenant_id,
                f.kind            = row.kind,
                f.source_agent_id = row.source_agent_id,
                f.target_agent_id = row.target_agent_id,
                f.resolves        = row.resolves,
                f.detected_at     = datetime(),
                f.published       = false,
                f.observed_at     = ${atOrNull("row.observed_at")},
                f.source_outcome_id = row.source_outcome_id,
                f.target_outcome_id = row.target_outcome_id,
                f.registry_version  = toInteger(row.registry_version),
                f.registry_occurred_at = ${atOrNull("row.registry_occurred_at")},
                f.late            = coalesce(row.late, false),
                f.episode         = toInteger(row.episode),
                f.open_until      = CASE WHEN row.kind = 'terminal-unreachable' THEN ${OPEN_UNTIL_NEVER} END
`;
const RETURN_RECORDED = "RETURN row.finding_id AS finding_id, row.tenant_id AS tenant_id, row.kind AS kind, existed";

/** Findings that stand on their own (an undeclared escalation). */
export const recordFindings = (scoped: boolean): string => `
UNWIND $rows AS row
${mergeFinding(scoped)}
${RETURN_RECORDED}`;

/**
 * Resolutions: written only where the finding they resolve was recorded, whose `open_until` comes down
 * to the resolution's time if that is earlier (a late change may resolve it before an earlier round did).
 */
export const recordResolutions = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH (resolved:Finding {${scopedKey(scoped, "row.tenant_id")}finding_id: row.resolves})
${mergeFinding(scoped, "resolved, ")}
WITH row, existed, resolved, f
FOREACH (_ IN CASE WHEN resolved.kind = 'terminal-unreachable' AND resolved.registry_occurred_at IS NOT NULL
                         AND f.registry_occurred_at < resolved.open_until THEN [1] ELSE [] END |
  SET resolved.open_until = f.registry_occurred_at)
${RETURN_RECORDED}`;

/**
 * Gives `open_until` to the terminal-unreachable findings recorded before it existed (migrate, at every
 * start): the earliest resolution's time; far in the past when a resolution has no time (recorded
 * before event-time judging, which the walk takes to precede everything); never when none has. In
 * transactions of 10,000 (an auto-commit query): 200,000 findings in one overran the 256 MiB a
 * transaction may take on the local stack.
 */
export const BACKFILL_OPEN_UNTIL = `
MATCH (f:Finding)
WHERE f.kind = 'terminal-unreachable' AND f.open_until IS NULL
CALL (f) {
  OPTIONAL MATCH (r:Finding {resolves: f.finding_id})
  WHERE r.tenant_id = f.tenant_id
  WITH f, count(r) AS resolutions, count(r.registry_occurred_at) AS timed, min(r.registry_occurred_at) AS earliest
  SET f.open_until = CASE
    WHEN f.registry_occurred_at IS NULL OR resolutions = 0 THEN ${OPEN_UNTIL_NEVER}
    WHEN timed < resolutions THEN ${OPEN_UNTIL_ALWAYS_PAST}
    ELSE earliest END
} IN TRANSACTIONS OF 10000 ROWS
`;

/** Findings not yet published, oldest first, a page at a time. */
export const UNPUBLISHED_FINDINGS: string = `
MATCH (f:Finding)
WHERE f.published = false
RETURN f.finding_id AS finding_id, f.tenant_id AS tenant_id, f.kind AS kind,
       f.source_agent_id AS source_agent_id, f.target_agent_id AS target_agent_id, f.resolves AS resolves,
       f.detected_at.epochMillis AS detected_at, ${EVIDENCE}
ORDER BY f.detected_at, f.finding_id
LIMIT toInteger($limit)
`;

/** How many findings wait to be published per tenant, and since when (the publisher's gauges). */
export const UNPUBLISHED_COUNTS = `
MATCH (f:Finding)
WHERE f.published = false
WITH f.tenant_id AS tenant_id, count(*) AS unpublished, min(f.detected_at) AS oldest
RETURN tenant_id, unpublished, oldest.epochMillis AS oldest_detected_at
`;

/** Marks published findings; a finding another instance published meanwhile is marked again, harmlessly. */
export const markPublished = (scoped: boolean): string => `
UNWIND $rows AS row
MATCH (f:Finding {${scopedKey(scoped, "row.tenant_id")}finding_id: row.finding_id})
${keyIndex(scoped, "f", "Finding", "finding_id")}
SET f.published = true
`;

/**
 * Every finding, or one tenant's (`$tenant` null for all), with whether a resolution answers it;
 * `$open` keeps the findings of any kind that no resolution answers yet (resolutions left out).
 */
export const LIST_FINDINGS: string = `
MATCH (f:Finding)
WHERE ($tenant IS NULL OR f.tenant_id = $tenant)
WITH f, EXISTS { MATCH (r:Finding {tenant_id: f.tenant_id, resolves: f.finding_id}) } AS resolved
WHERE NOT $open OR (f.resolves IS NULL AND NOT resolved)
RETURN f.finding_id AS finding_id, f.tenant_id AS tenant_id, f.kind AS kind,
       f.source_agent_id AS source_agent_id, f.target_agent_id AS target_agent_id, f.resolves AS resolves,
       f.detected_at.epochMillis AS detected_at, f.published AS published, resolved, ${EVIDENCE}
ORDER BY f.detected_at, f.finding_id
`;
