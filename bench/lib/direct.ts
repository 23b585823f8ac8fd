/**
 * The two anchors, both without Kafka: the ceiling sends the projector's own batched statements
 * (src/projection, src/cypher) straight to Neo4j in dependency order; the baseline writes one record
 * per transaction with the per-record form of the spec's Cypher.
 */
import neo4j, { type Driver } from "neo4j-driver";
import { migrate } from "../../src/adapters/neo4j/migrate.js";
import { CONSTRAINT_NAMES, TENANT_CONSTRAINT_NAMES } from "../../src/cypher/s6-constraints.js";
import type { EscalationEdge, OutcomeCreated, ProjectorEvent, RegistryEvent } from "../../src/model/events.js";
import type { GraphWriter } from "../../src/ports.js";
import { projectEscalations } from "../../src/projection/escalations.js";
import { projectOutcomes } from "../../src/projection/outcomes.js";
import type { Indexed, Plan } from "../../src/projection/plan.js";
import { projectRegistry } from "../../src/projection/registry.js";
import type { EventLog } from "../../workload/generate.js";

/**
 * Empties the graph and rebuilds the §6 constraints' indexes, so that every measured load starts from
 * the same state. Deleting entries leaves Neo4j's index trees at their grown size: without the
 * rebuild each load ran on bigger, sparser indexes than the one before (the store's schema directory
 * passed 300 MB after a few dozen loads, and the same projector run went from 19 to 24 s), which
 * favoured whatever the bench measured first.
 */
export async function wipeGraph(driver: Driver, database: string): Promise<void> {
  const session = driver.session({ database });
  try {
    // Relationships first, then nodes, in small transactions: a DETACH DELETE of agent nodes with
    // hundreds of relationships each exceeds the stack's transaction memory pool.
    await session.run("MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS");
    await session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS");
    // A database the test suites used last may hold the shared-database (tenant) constraints too.
    for (const name of [...CONSTRAINT_NAMES, ...TENANT_CONSTRAINT_NAMES])
      await session.run(`DROP CONSTRAINT ${name} IF EXISTS`);
  } finally {
    await session.close();
  }
  await migrate(driver, [database]);
}

/** Counts that identify the projected graph; two loads of one log must give the same. */
export async function graphFingerprint(driver: Driver, database: string): Promise<Record<string, number>> {
  const { records } = await driver.executeQuery(
    `CALL () { MATCH (n:Agent) RETURN count(n) AS agents }
     CALL () { MATCH (n:Outcome) RETURN count(n) AS outcomes }
     CALL () { MATCH ()-[r:PRODUCED]->() RETURN count(r) AS produced }
     CALL () { MATCH ()-[r:ESCALATED_TO]->() RETURN count(r) AS escalatedTo }
     CALL () { MATCH ()-[r:OBSERVED]->() RETURN count(r) AS observed }
     CALL () { MATCH ()-[r:CAN_ESCALATE_TO]->() RETURN count(r) AS canEscalate, sum(r.observed_count) AS observedCount }
     CALL () { MATCH ()-[r:AUTHORIZED_FOR|OWNS_WORKFLOW]->() RETURN count(r) AS grants }
     RETURN *`,
    {},
    { database },
  );
  const row = records[0]?.toObject() ?? {};
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, neo4j.integer.toNumber(v as number)]));
}

type Projector = (events: Indexed<ProjectorEvent>[]) => Plan;
const PROJECT: Record<"registry" | "outcomes" | "escalations", Projector> = {
  registry: (events) => projectRegistry(events as Indexed<RegistryEvent>[]),
  outcomes: (events) => projectOutcomes(events as Indexed<OutcomeCreated>[]),
  escalations: (events) => projectEscalations(events as Indexed<EscalationEdge>[]),
};

/** Transaction retries of the bench's own graph writer (deadlocks and other transient errors). */
export const directCounters = { retries: 0 };

export interface DirectResult {
  readonly batch: number;
  readonly concurrency: number;
  readonly records: number;
  readonly seconds: number;
  readonly recordsPerSecond: number;
  readonly transactions: number;
  readonly deferred: number;
  readonly retries: number;
  readonly batchLatencyMs: number[];
  /** Wall-clock seconds of each stage, to set beside the projector's per-topic times. */
  readonly stageSeconds: Record<string, number>;
}

/**
 * Loads a log with the projector's statements: registry, then outcomes, then escalations, each cut
 * into batches of `batch` records run by `concurrency` workers (the registry by one worker, in order,
 * as one partition would). Nothing is deferred when the order is right; the count proves it.
 */
export async function loadDirect(
  graph: GraphWriter,
  database: string,
  log: EventLog,
  batch: number,
  concurrency: number,
): Promise<DirectResult> {
  const started = performance.now();
  const retriesBefore = directCounters.retries;
  let transactions = 0;
  let deferred = 0;
  const latencies: number[] = [];
  const stageSeconds: Record<string, number> = {};
  const stages: [keyof typeof PROJECT, readonly ProjectorEvent[], number][] = [
    ["registry", log.registry, 1],
    ["outcomes", log.outcomes, concurrency],
    ["escalations", log.escalations, concurrency],
  ];
  for (const [stage, events, workers] of stages) {
    const stageStarted = performance.now();
    const chunks: ProjectorEvent[][] = [];
    for (let start = 0; start < events.length; start += batch) chunks.push(events.slice(start, start + batch));
    const applied = await applyBatches(graph, database, chunks, workers, PROJECT[stage]);
    deferred += applied.deferred;
    transactions += chunks.length;
    latencies.push(...applied.latencyMs);
    stageSeconds[stage] = Math.round(performance.now() - stageStarted) / 1000;
  }
  const seconds = (performance.now() - started) / 1000;
  const records = log.registry.length + log.outcomes.length + log.escalations.length;
  return {
    batch,
    concurrency,
    records,
    seconds,
    recordsPerSecond: records / seconds,
    transactions,
    deferred,
    retries: directCounters.retries - retriesBefore,
    batchLatencyMs: latencies,
    stageSeconds,
  };
}

/**
 * Applies `batches` with `workers` writers, one transaction per batch planned by `plan`, the plan's
 * follow-up statements (the findings) run with it only when `followUp` says so: the ceiling leaves
 * them out. Returns the records deferred and each batch's latency.
 */
export async function applyBatches<E extends ProjectorEvent>(
  graph: GraphWriter,
  database: string,
  batches: readonly (readonly E[])[],
  workers: number,
  plan: (events: Indexed<E>[]) => Plan,
  followUp = false,
): Promise<{ deferred: number; latencyMs: number[] }> {
  let deferred = 0;
  const latencyMs: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < batches.length) {
        const batch = batches[next++] as readonly E[];
        const started = performance.now();
        const planned = plan(batch.map((event, i) => ({ i, event })));
        const results = await graph.apply(database, planned.statements, followUp ? planned.followUp : undefined);
        for (const fate of planned.fates(results).values()) if (fate.kind === "deferred") deferred += 1;
        latencyMs.push(performance.now() - started);
      }
    }),
  );
  return { deferred, latencyMs };
}

/** The per-record form of the spec's statements: no UNWIND, one record's fields as parameters. */
export const PER_RECORD = {
  outcome: `
MERGE (o:Outcome {outcome_id: $outcome_id})
SET o.agent_id = $agent_id, o.status = $status, o.correlation_id = $correlation_id,
    o.created_at = datetime({epochMillis: toInteger($created_at)})`,
  produced: `
MATCH (a:Agent {agent_id: $agent_id})
MATCH (o:Outcome {outcome_id: $outcome_id})
MERGE (a)-[:PRODUCED]->(o)`,
  escalatedTo: `
MATCH (source:Outcome {outcome_id: $source_outcome_id})
MATCH (target:Outcome {outcome_id: $target_outcome_id})
MERGE (source)-[e:ESCALATED_TO]->(target)
  ON CREATE SET e.observed_at = datetime({epochMillis: toInteger($observed_at)})`,
  observed: `
MATCH (source:Outcome {outcome_id: $source_outcome_id})<-[:PRODUCED]-(from:Agent)
MATCH (target:Outcome {outcome_id: $target_outcome_id})<-[:PRODUCED]-(to:Agent)
WHERE from <> to
MERGE (from)-[r:CAN_ESCALATE_TO]->(to)
  ON CREATE SET r.declared = false, r.observed_count = 0
MERGE (source)-[obs:OBSERVED]->(target)
  ON CREATE SET r.observed_count = r.observed_count + 1,
                r.last_observed_at = datetime({epochMillis: toInteger($observed_at)}),
                obs.recorded_at = datetime({epochMillis: toInteger($observed_at)})`,
} as const;

/**
 * The naive consumer: one record, one write transaction, records one after another. The registry
 * is loaded first with the batched statements (untimed), so every outcome finds its agent.
 */
export async function runBaseline(
  driver: Driver,
  graph: GraphWriter,
  database: string,
  log: EventLog,
): Promise<{ records: number; seconds: number; recordsPerSecond: number }> {
  await loadDirect(graph, database, { registry: log.registry, outcomes: [], escalations: [] }, 1000, 1);
  const session = driver.session({ database, defaultAccessMode: neo4j.session.WRITE });
  const started = performance.now();
  try {
    for (const o of log.outcomes) {
      await session.executeWrite(async (tx) => {
        await tx.run(PER_RECORD.outcome, { ...o });
        await tx.run(PER_RECORD.produced, { ...o });
      });
    }
    for (const e of log.escalations) {
      await session.executeWrite(async (tx) => {
        await tx.run(PER_RECORD.escalatedTo, { ...e });
        await tx.run(PER_RECORD.observed, { ...e });
      });
    }
  } finally {
    await session.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const records = log.outcomes.length + log.escalations.length;
  return { records, seconds, recordsPerSecond: records / seconds };
}
