/**
 * `npx tsx bench/escalation-stage.ts [--variants spec,aggregated] [--workers 1,2] [--batch 4000]
 * [--repeat 3]`: the escalation stage of the full log straight against Neo4j, with the variants of
 * the §3.4 statement taking turns. Before each turn the graph is wiped and the registry and outcomes
 * are loaded (untimed) as the ceiling loads them; then the escalation records, cut into partitions by
 * source outcome (as `escalation-edge` is keyed) and each partition into batches, are applied by
 * `workers` writers, followUp (the findings) included. Prints per turn the stage's seconds, the
 * transaction retries, the batch latencies and what the graph and the findings hold, which must be
 * the same for every variant.
 *
 * `spec` is the service's statement (src/cypher/s3_4-escalation-observed.ts). `aggregated` is the
 * twenty-ninth round's experiment, kept here to be measured again: the `:OBSERVED` markers are
 * merged first, each noting whether this transaction created it, and the agents are locked only
 * then, for one CAN_ESCALATE_TO write per agent pair adding the markers it created.
 */
import { parseArgs } from "node:util";
import neo4j from "neo4j-driver";
import { createGraphWriter } from "../src/adapters/neo4j/graph-writer.js";
import { loadConfig } from "../src/config.js";
import { escalatedToEdge, LOCK_AGENTS } from "../src/cypher/s3_4-escalation-observed.js";
import type { EscalationEdge } from "../src/model/events.js";
import { noopMetrics } from "../src/ports.js";
import { projectEscalations } from "../src/projection/escalations.js";
import { generateEventLog } from "../workload/generate.js";
import { applyBatches, graphFingerprint, loadDirect, wipeGraph } from "./lib/direct.js";
import { workloadSize } from "./lib/workload-size.js";

const { values: flags } = parseArgs({
  options: {
    variants: { type: "string", default: "spec,aggregated" },
    workers: { type: "string", default: "1,2" },
    batch: { type: "string", default: "4000" },
    repeat: { type: "string", default: "3" },
    seed: { type: "string", default: "7" },
  },
});

const AGGREGATED = `
UNWIND $rows AS row
${escalatedToEdge(false)}
WITH row, source, target
OPTIONAL MATCH (source)<-[:PRODUCED]-(from:Agent)
OPTIONAL MATCH (target)<-[:PRODUCED]-(to:Agent)
OPTIONAL CALL (row, source, target, from, to) {
  WITH * WHERE from <> to
  WITH source, target, datetime({epochMillis: toInteger(row.first_observed_at)}) AS first_seen
  MERGE (source)-[obs:OBSERVED]->(target)
    ON CREATE SET obs._NEW_ = true, obs.recorded_at = first_seen
  SET obs.recorded_at = CASE WHEN first_seen < obs.recorded_at THEN first_seen ELSE obs.recorded_at END
  WITH obs, obs._NEW_ IS NOT NULL AS counted
  REMOVE obs._NEW_
  RETURN counted
}
WITH collect({row: row, from: from, to: to, counted: counted}) AS found
${LOCK_AGENTS}
CALL (found) {
  UNWIND found AS pair
  WITH pair WHERE pair.from IS NULL OR pair.to IS NULL OR pair.from = pair.to
  RETURN pair.row.i AS i, pair.from IS NOT NULL AND pair.to IS NOT NULL AS produced, pair.from = pair.to AS same_agent,
         null AS already_counted, null AS from_agent, null AS to_agent, null AS observed_count, null AS declared
  UNION ALL
  UNWIND found AS pair
  WITH pair WHERE pair.from <> pair.to
  WITH pair.from AS from, pair.to AS to, collect(pair) AS pairs,
       sum(CASE WHEN pair.counted THEN 1 ELSE 0 END) AS counted, max(pair.row.last_observed_at) AS last_observed_at
  WITH from, to, pairs, counted, datetime({epochMillis: toInteger(last_observed_at)}) AS last_seen
  MERGE (from)-[r:CAN_ESCALATE_TO]->(to)
    ON CREATE SET r.declared = false, r.observed_count = 0
  SET r.observed_count = r.observed_count + counted,
      r.last_observed_at = CASE WHEN r.last_observed_at IS NULL OR r.last_observed_at < last_seen THEN last_seen ELSE r.last_observed_at END
  WITH from, to, pairs, r.observed_count AS observed_count, r.declared AS declared
  UNWIND pairs AS pair
  RETURN pair.row.i AS i, true AS produced, false AS same_agent, NOT pair.counted AS already_counted,
         from.agent_id AS from_agent, to.agent_id AS to_agent, observed_count, declared
}
RETURN i, produced, same_agent, already_counted, from_agent, to_agent, observed_count, declared
`;

const VARIANTS: Record<string, string | undefined> = { spec: undefined, aggregated: AGGREGATED };
const variants = String(flags.variants).split(",");
for (const name of variants) if (!(name in VARIANTS)) throw new Error(`--variants: unknown variant "${name}"`);
const BATCH = Number(flags.batch);
// escalation-edge's partitions in the bench's topics (bench/args.ts PARTITIONS; not imported, as
// that module parses the bench's own command line when loaded).
const PARTITIONS = 6;

/**
 * escalation-edge's partitions (keyed by source outcome), each cut into batches, taken round-robin.
 * The hash is not Kafka's murmur2: what matters here is that no two partitions share a source.
 */
function batchesByPartition(edges: readonly EscalationEdge[]): EscalationEdge[][] {
  const partitions: EscalationEdge[][] = Array.from({ length: PARTITIONS }, () => []);
  const hash = (key: string) => [...key].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 0);
  for (const edge of edges) partitions[hash(edge.source_outcome_id) % PARTITIONS]?.push(edge);
  const cut = partitions.map((edges) =>
    Array.from({ length: Math.ceil(edges.length / BATCH) }, (_, n) => edges.slice(n * BATCH, (n + 1) * BATCH)),
  );
  const batches: EscalationEdge[][] = [];
  for (let n = 0; cut.some((batches) => n < batches.length); n++)
    for (const partition of cut) if (n < partition.length) batches.push(partition[n] as EscalationEdge[]);
  return batches;
}

const config = loadConfig(process.env);
const database = config.neo4j.database;
const driver = neo4j.driver(config.neo4j.uri, neo4j.auth.basic(config.neo4j.user, config.neo4j.password ?? ""));
let retries = 0;
const countRetry = () => {
  retries += 1;
};
const graph = createGraphWriter(driver, { ...noopMetrics, recordTransactionRetry: countRetry }, 300_000);
const log = generateEventLog(Number(flags.seed), workloadSize(2000, 200_000, 50_000));
const batches = batchesByPartition(log.escalations as EscalationEdge[]);
console.log(`${log.escalations.length} escalation records in ${batches.length} batches of up to ${BATCH}`);

try {
  for (let turn = 1; turn <= Number(flags.repeat); turn++)
    for (const workers of String(flags.workers).split(",").map(Number))
      for (const variant of variants) {
        await wipeGraph(driver, database);
        await loadDirect(graph, database, { ...log, escalations: [] }, BATCH, 2);
        retries = 0;
        const cypher = VARIANTS[variant];
        const started = performance.now();
        const { deferred, latencyMs } = await applyBatches(
          graph,
          database,
          batches,
          workers,
          (events) => {
            const plan = projectEscalations(events);
            return cypher ? { ...plan, statements: plan.statements.map((s) => ({ ...s, cypher })) } : plan;
          },
          true,
        );
        const seconds = ((performance.now() - started) / 1000).toFixed(2);
        latencyMs.sort((a, b) => a - b);
        const fingerprint = await graphFingerprint(driver, database);
        const { records } = await driver.executeQuery(
          "MATCH (f:Finding) RETURN f.kind AS kind, count(*) AS n ORDER BY kind",
          {},
          { database },
        );
        const findings = records.map((record) => `${record.get("kind")} ${neo4j.integer.toNumber(record.get("n"))}`);
        console.log(
          `turn ${turn} ${variant} × ${workers}: ${seconds} s, ${retries} retries, ${deferred} deferred, ` +
            `batch p50 ${Math.round(latencyMs[latencyMs.length >> 1] ?? 0)} ms, max ${Math.round(latencyMs.at(-1) ?? 0)} ms; ` +
            `${JSON.stringify(fingerprint)}; findings: ${findings.join(", ") || "none"}`,
        );
      }
} finally {
  await driver.close();
}
