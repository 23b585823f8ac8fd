/**
 * `npx tsx bench/startup-graph.ts build --outcomes 10000000 --agents 10000` then
 * `npx tsx bench/startup-graph.ts time [--runs 3]`: how long start-up's graph phase takes on a large
 * graph. `build` writes the graph straight into Neo4j (UNWIND range batches, in transactions of 50,000
 * rows), then creates the §6 constraints as `migrate` does; it adds to what is there, so run it on a
 * cleared database. `time` runs the phase the way `run` does, both ways: as `verifyMigrated`
 * (MIGRATE_ON_START=false) and as `migrate` (MIGRATE_ON_START=true, the default), one database served
 * by one tenant, and prints the seconds of each run. Outcomes carry no PRODUCED relationships: the
 * phase reads nodes, constraints and indexes only.
 *
 * Neo4j from NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE (the local stack's defaults).
 */
import { parseArgs } from "node:util";
import neo4j from "neo4j-driver";
import { migrate, verifyMigrated } from "../src/adapters/neo4j/migrate.js";

const { positionals, values: flags } = parseArgs({
  allowPositionals: true,
  options: {
    outcomes: { type: "string", default: "10000000" },
    agents: { type: "string", default: "10000" },
    runs: { type: "string", default: "3" },
  },
});
const database = process.env.NEO4J_DATABASE ?? "neo4j";
const driver = neo4j.driver(
  process.env.NEO4J_URI ?? "bolt://127.0.0.1:7687",
  neo4j.auth.basic(process.env.NEO4J_USER ?? "neo4j", process.env.NEO4J_PASSWORD ?? "projector-local-pw"),
);
const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(2);
const CHUNK = 1_000_000;

async function build(outcomes: number, agents: number): Promise<void> {
  const session = driver.session({ database });
  try {
    const started = performance.now();
    await session.run(
      `UNWIND range(0, $agents - 1) AS n
       CREATE (:Agent {agent_id: 'bench-agt-' + toString(n), name: 'agent ' + toString(n), status: 'active'})`,
      { agents: neo4j.int(agents) },
    );
    for (let from = 0; from < outcomes; from += CHUNK) {
      const to = Math.min(from + CHUNK, outcomes) - 1;
      await session.run(
        `UNWIND range($from, $to) AS n
         CALL (n) {
           CREATE (:Outcome {outcome_id: 'out-' + toString(n), agent_id: 'bench-agt-' + toString(n % $agents),
                             status: 'succeeded', correlation_id: 'corr-' + toString(n / 10),
                             created_at: datetime({epochMillis: 1700000000000 + n})})
         } IN TRANSACTIONS OF 50000 ROWS`,
        { from: neo4j.int(from), to: neo4j.int(to), agents: neo4j.int(agents) },
      );
      console.log(`${to + 1} outcomes, ${seconds(started)} s`);
    }
    const constraints = performance.now();
    await migrate(driver, [database]);
    console.log(`constraints and indexes created in ${seconds(constraints)} s; built in ${seconds(started)} s`);
  } finally {
    await session.close();
  }
}

async function time(runs: number): Promise<void> {
  const { records } = await driver.executeQuery(
    "MATCH (o:Outcome) WITH count(o) AS outcomes MATCH (a:Agent) RETURN outcomes, count(a) AS agents",
    {},
    { database },
  );
  console.log(
    `graph: ${records[0]?.get("outcomes")} outcomes, ${records[0]?.get("agents")} agents (one tenant, database ${database})`,
  );
  for (let run = 1; run <= runs; run++) {
    for (const [name, phase] of [
      ["verify (MIGRATE_ON_START=false)", () => verifyMigrated(driver, [database])],
      ["migrate (MIGRATE_ON_START=true)", () => migrate(driver, [database])],
    ] as const) {
      const started = performance.now();
      await phase();
      console.log(`run ${run}: ${name}: ${seconds(started)} s`);
    }
  }
}

try {
  if (positionals[0] === "build") await build(Number(flags.outcomes), Number(flags.agents));
  else if (positionals[0] === "time") await time(Number(flags.runs));
  else throw new Error("usage: startup-graph.ts build [--outcomes N] [--agents N] | time [--runs N]");
} finally {
  await driver.close();
}
