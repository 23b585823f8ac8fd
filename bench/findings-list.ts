/**
 * `npx tsx bench/findings-list.ts [--findings 100000] [--runs 3] [--timeout-s 120] [--indexed-only] [--keep]`: how long
 * `findings` and `findings --open` take with that many findings in the graph, without and with the
 * index behind the resolution lookup (`finding_resolves`, cypher/s6-constraints.ts).
 *
 * The findings are created straight in Neo4j under a tenant of their own (`bench-findings`), so the
 * rest of the graph is left alone: 60 % undeclared escalations, two thirds of them answered by a
 * resolution (the other 40 %), all published. For each layout it times LIST_FINDINGS through the
 * graph writer (median of --runs, all rows pulled) and the CLI once each (a process, start-up
 * included), and prints the plan's operators. A query that runs past --timeout-s is stopped by Neo4j
 * and reported as such. Reads NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD as the service does.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import neo4j from "neo4j-driver";
import { createGraphWriter } from "../src/adapters/neo4j/graph-writer.js";
import { migrate } from "../src/adapters/neo4j/migrate.js";
import { LIST_FINDINGS } from "../src/cypher/findings.js";
import { noopMetrics } from "../src/ports.js";
import { directNeo4j } from "./lib/neo4j-direct.js";

const { values: flags } = parseArgs({
  options: {
    findings: { type: "string", default: "100000" },
    runs: { type: "string", default: "3" },
    "timeout-s": { type: "string", default: "120" },
    keep: { type: "boolean", default: false },
    // Without the index the listing grows with the square of the findings: time it on fewer.
    "indexed-only": { type: "boolean", default: false },
  },
});
const TOTAL = Number(flags.findings);
const RUNS = Number(flags.runs);
const TIMEOUT_MS = Number(flags["timeout-s"]) * 1000;
const TENANT = "bench-findings";
const root = fileURLToPath(new URL("..", import.meta.url));
const { env, driver, autocommit } = directNeo4j();
const graph = createGraphWriter(driver, noopMetrics, TIMEOUT_MS);
const run = (cypher: string, params: Record<string, unknown> = {}) =>
  driver.executeQuery(cypher, params, { database: env.database });

async function seed(): Promise<void> {
  await autocommit(`MATCH (f:Finding {tenant_id: $tenant}) CALL (f) { DELETE f } IN TRANSACTIONS OF 10000 ROWS`, {
    tenant: TENANT,
  });
  const opened = Math.round(TOTAL * 0.6);
  const resolutions = TOTAL - opened;
  // The same shape the outbox writes (cypher/findings.ts): ids, agents, detected_at, published.
  await autocommit(
    `UNWIND range(1, $opened) AS n
     CALL (n) {
       CREATE (:Finding {tenant_id: $tenant, finding_id: 'bf-open-' + toString(n), kind: 'undeclared-escalation',
                         source_agent_id: 'bf-agt-' + toString(n), target_agent_id: 'bf-agt-' + toString(n + 1),
                         resolves: null, detected_at: datetime() - duration({seconds: $opened - n}), published: true})
     } IN TRANSACTIONS OF 10000 ROWS`,
    { tenant: TENANT, opened: neo4j.int(opened) },
  );
  await autocommit(
    `UNWIND range(1, $resolutions) AS n
     CALL (n) {
       CREATE (:Finding {tenant_id: $tenant, finding_id: 'bf-resolved-' + toString(n),
                         kind: 'undeclared-escalation-resolved',
                         source_agent_id: 'bf-agt-' + toString(n), target_agent_id: 'bf-agt-' + toString(n + 1),
                         resolves: 'bf-open-' + toString(n), detected_at: datetime(), published: true})
     } IN TRANSACTIONS OF 10000 ROWS`,
    { tenant: TENANT, resolutions: neo4j.int(resolutions) },
  );
  process.stdout.write(`seeded ${opened} findings, ${resolutions} of them resolved (${TOTAL} nodes)\n`);
}

function operators(plan: { operatorType: string; children: unknown[] }): string[] {
  return [plan.operatorType.replace(/@.*/, ""), ...plan.children.flatMap((c) => operators(c as typeof plan))];
}

/**
 * The listing without its resolution lookup (every finding unresolved): what reading, sorting and
 * pulling the rows costs alone, the floor the lookup adds to.
 */
const FLOOR = LIST_FINDINGS.replace(/EXISTS \{[^\n]*\}\) \}/, "false");
if (FLOOR === LIST_FINDINGS) throw new Error("LIST_FINDINGS has no EXISTS { … } to take out");

async function timeQuery(open: boolean, cypher = LIST_FINDINGS): Promise<string> {
  const times: number[] = [];
  let rows = 0;
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    try {
      rows = (await graph.read(env.database, cypher, { tenant: TENANT, open })).length;
    } catch (error) {
      return `stopped after ${((performance.now() - started) / 1000).toFixed(1)} s (${String(error).slice(0, 80)})`;
    }
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] ?? Number.NaN;
  return `${(median / 1000).toFixed(3)} s median of ${RUNS} (${rows} rows; runs ${times.map((t) => (t / 1000).toFixed(2)).join(", ")} s)`;
}

function timeCli(open: boolean): string {
  const started = performance.now();
  const result = spawnSync(
    process.execPath,
    ["bin/agent-graph-projector.js", "findings", "--json", "--tenant", TENANT, ...(open ? ["--open"] : [])],
    {
      cwd: root,
      encoding: "utf8",
      maxBuffer: 1 << 30,
      timeout: TIMEOUT_MS + 30_000,
      env: {
        ...process.env,
        TENANTS: TENANT,
        NEO4J_URI: env.uri,
        NEO4J_USER: env.user,
        NEO4J_PASSWORD: env.password,
        NEO4J_TX_TIMEOUT_MS: String(TIMEOUT_MS),
      },
    },
  );
  const seconds = ((performance.now() - started) / 1000).toFixed(2);
  if (result.status !== 0)
    return `exit ${result.status} after ${seconds} s: ${result.stderr.trim().split("\n").at(-1)}`;
  const listed = (JSON.parse(result.stdout) as unknown[]).length;
  return `${seconds} s (${listed} listed; process start-up included)`;
}

const dbHits = (plan: { dbHits: number; children: unknown[] }): number =>
  plan.dbHits + plan.children.reduce((sum: number, child) => sum + dbHits(child as typeof plan), 0);

async function measure(layout: string): Promise<void> {
  const explained = await run(`EXPLAIN ${LIST_FINDINGS}`, { tenant: TENANT, open: true });
  process.stdout.write(`\n== ${layout}\nplan: ${operators(explained.summary.plan as never).join(" < ")}\n`);
  const profiled = await driver
    .executeQuery(
      `PROFILE ${LIST_FINDINGS}`,
      { tenant: TENANT, open: false },
      {
        database: env.database,
        transactionConfig: { timeout: TIMEOUT_MS },
      },
    )
    .then((result) => String(dbHits(result.summary.profile as never)))
    .catch(() => `stopped at ${TIMEOUT_MS / 1000} s`);
  process.stdout.write(`db hits (findings, PROFILE): ${profiled}\n`);
  process.stdout.write(`${"floor".padEnd(16)} query ${await timeQuery(false, FLOOR)}\n`);
  for (const open of [false, true]) {
    const name = open ? "findings --open" : "findings";
    process.stdout.write(`${name.padEnd(16)} query ${await timeQuery(open)}\n`);
    process.stdout.write(`${name.padEnd(16)} CLI   ${timeCli(open)}\n`);
  }
}

try {
  await seed();
  if (!flags["indexed-only"]) {
    await run("DROP INDEX finding_resolves IF EXISTS");
    await measure("without the finding_resolves index");
  }
  await migrate(driver, [env.database]);
  await run("CALL db.awaitIndexes(300)");
  await measure("with the finding_resolves index (migrate)");
} finally {
  if (!flags.keep)
    await autocommit(`MATCH (f:Finding {tenant_id: $tenant}) CALL (f) { DELETE f } IN TRANSACTIONS OF 10000 ROWS`, {
      tenant: TENANT,
    }).catch(() => {});
  await driver.close();
}
