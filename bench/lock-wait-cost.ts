/**
 * What a transaction waiting on a Neo4j lock costs Neo4j in CPU: one transaction write-locks a node
 * and holds it for `holdMs`; `waiters` others try to write the node meanwhile and wait. Neo4j's CPU
 * over the hold is set against the same span idle just before.
 *
 *   npx tsx bench/lock-wait-cost.ts [holdMs=10000] [waiters=4]
 *
 * Needs the local stack's Neo4j (its pid is found through the Bolt port, 7687).
 */
import { cpuSecondsOf, pidListeningOn } from "./lib/cpu.js";
import { directNeo4j } from "./lib/neo4j-direct.js";

const holdMs = Number(process.argv[2] ?? 10_000);
const waiters = Number(process.argv[3] ?? 4);
const neo = directNeo4j();
const pid = pidListeningOn(7687);
if (pid === null) throw new Error("no Neo4j listening on 7687 on this machine");
const cpu = () => cpuSecondsOf(pid) ?? Number.NaN;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

try {
  await neo.autocommit("MERGE (:LockWaitProbe {id: 1})");
  const idleFrom = cpu();
  await sleep(holdMs);
  const idle = cpu() - idleFrom;

  const holder = neo.driver.session({ database: neo.env.database });
  const tx = holder.beginTransaction();
  await tx.run("MATCH (n:LockWaitProbe {id: 1}) SET n.held = 1");
  const waiting = Array.from({ length: waiters }, () => {
    const session = neo.driver.session({ database: neo.env.database });
    return session.run("MATCH (n:LockWaitProbe {id: 1}) SET n.waited = 1").finally(() => session.close());
  });
  await sleep(500);
  const heldFrom = cpu();
  await sleep(holdMs);
  const held = cpu() - heldFrom;
  await tx.commit();
  await holder.close();
  await Promise.all(waiting);
  const round = (value: number) => Math.round(value * 1000) / 1000;
  console.log(
    JSON.stringify({
      holdMs,
      waiters,
      neo4jCpuSeconds: { idle: round(idle), whileWaiting: round(held) },
      coresPerWaitingTransaction: round((held - idle) / waiters / (holdMs / 1000)),
    }),
  );
} finally {
  await neo.autocommit("MATCH (n:LockWaitProbe) DELETE n");
  await neo.driver.close();
}
