/**
 * `npx tsx bench/terminal-findings-read.ts [--transitions 50000] [--open 100] [--runs 5] [--keep]`: what the
 * event-time judge reads of a tenant's terminal findings for one page of registry changes, with that
 * many past reachability transitions recorded (a terminal-unreachable finding and its resolution each,
 * one a minute over the past) and --open findings still open: rows and time of the read every page made
 * before (every terminal finding of the tenant) and of RECORDED_TERMINAL_FINDINGS (those not resolved
 * before the page's earliest change, with their resolutions) for a live page (its change now) and for
 * a late one (a change a day old). Also how long start-up's backfill takes to give those findings
 * `open_until` when an older version left them without (migrate, cypher/findings.ts
 * BACKFILL_OPEN_UNTIL). The findings live under a tenant of their own (`bench-terminal`); reads
 * NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD as the service does.
 */
import { parseArgs } from "node:util";
import neo4j from "neo4j-driver";
import { createGraphWriter } from "../src/adapters/neo4j/graph-writer.js";
import { migrate } from "../src/adapters/neo4j/migrate.js";
import { RECORDED_TERMINAL_FINDINGS } from "../src/cypher/event-time-judge.js";
import { noopMetrics } from "../src/ports.js";
import { directNeo4j } from "./lib/neo4j-direct.js";

const { values: flags } = parseArgs({
  options: {
    transitions: { type: "string", default: "50000" },
    open: { type: "string", default: "100" },
    runs: { type: "string", default: "5" },
    keep: { type: "boolean", default: false },
  },
});
const TRANSITIONS = Number(flags.transitions);
const OPEN = Number(flags.open);
const RUNS = Number(flags.runs);
const TENANT = "bench-terminal";
const { env, driver, autocommit } = directNeo4j();
const graph = createGraphWriter(driver, noopMetrics, 300_000);

/** The read each page made before this change: every terminal finding of the tenant. */
const EVERY_TERMINAL_FINDING = `
MATCH (f:Finding {tenant_id: $tenant_id})
WHERE f.kind IN ['terminal-unreachable', 'terminal-unreachable-resolved']
RETURN f.finding_id AS finding_id, f.tenant_id AS tenant_id, f.kind AS kind,
       f.source_agent_id AS source_agent_id, f.resolves AS resolves, f.registry_occurred_at.epochMillis AS at
`;

const clear = () =>
  autocommit("MATCH (f:Finding {tenant_id: $tenant}) CALL (f) { DELETE f } IN TRANSACTIONS OF 10000 ROWS", {
    tenant: TENANT,
  });

/** As an older version recorded them: no open_until (the backfill's work), 200 agents taking turns. */
async function seed(now: number): Promise<void> {
  await clear();
  await autocommit(
    `UNWIND range(1, $transitions + $open) AS n
     CALL (n) {
       WITH n, datetime({epochMillis: $now - ($transitions + $open - n + 1) * 60000}) AS at
       CREATE (lost:Finding {tenant_id: $tenant, finding_id: 'bt-' + toString(n), kind: 'terminal-unreachable',
                             source_agent_id: 'bt-agt-' + toString(n % 200), target_agent_id: 'bt-agt-cause',
                             resolves: null, detected_at: at, published: true, registry_occurred_at: at})
       FOREACH (_ IN CASE WHEN n <= $transitions THEN [1] ELSE [] END |
         CREATE (:Finding {tenant_id: $tenant, finding_id: 'bt-r-' + toString(n), kind: 'terminal-unreachable-resolved',
                           source_agent_id: lost.source_agent_id, target_agent_id: 'bt-agt-cause',
                           resolves: lost.finding_id, detected_at: at, published: true,
                           registry_occurred_at: at + duration({seconds: 30})}))
     } IN TRANSACTIONS OF 10000 ROWS`,
    { tenant: TENANT, transitions: neo4j.int(TRANSITIONS), open: neo4j.int(OPEN), now: neo4j.int(now) },
  );
}

async function timed(cypher: string, params: Record<string, unknown>): Promise<{ rows: number; ms: number }> {
  const times: number[] = [];
  let rows = 0;
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    rows = (await graph.read(env.database, cypher, params)).length;
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { rows, ms: Math.round(times[Math.floor(times.length / 2)] as number) };
}

try {
  const now = Date.now();
  await seed(now);
  const started = performance.now();
  await migrate(driver, [env.database]);
  const migrateMs = Math.round(performance.now() - started);
  const again = performance.now();
  await migrate(driver, [env.database]);
  const migrateAgainMs = Math.round(performance.now() - again);
  const before = await timed(EVERY_TERMINAL_FINDING, { tenant_id: TENANT });
  const live = await timed(RECORDED_TERMINAL_FINDINGS, { tenant_id: TENANT, since: now });
  const late = await timed(RECORDED_TERMINAL_FINDINGS, { tenant_id: TENANT, since: now - 86_400_000 });
  const result = {
    transitions: TRANSITIONS,
    open: OPEN,
    runs: RUNS,
    everyTerminalFinding: before,
    recordedTerminalLivePage: live,
    recordedTerminalDayLatePage: late,
    migrateWithBackfillMs: migrateMs,
    migrateNothingToBackfillMs: migrateAgainMs,
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(
    `${TRANSITIONS} transitions, ${OPEN} open: every terminal finding ${before.rows} rows ${before.ms} ms; ` +
      `open at a live page ${live.rows} rows ${live.ms} ms; at a day-late page ${late.rows} rows ${late.ms} ms ` +
      `(median of ${RUNS}); start-up backfill ${migrateMs} ms, then ${migrateAgainMs} ms`,
  );
} finally {
  if (!flags.keep) await clear();
  await driver.close();
}
