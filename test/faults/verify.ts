import { fetchLag } from "../../src/adapters/kafka/group-admin.js";
import { registryChange } from "../../src/model/event-time-findings.js";
import { isAgentId, type ProjectorEvent, type RegistryEvent } from "../../src/model/events.js";
import { diffGraphs } from "../../src/model/graph.js";
import { consumedTopics } from "../../src/topics.js";
import { graphFindings, waitForJudged } from "../support/findings.js";
import { oracleFindingsOfLog } from "../support/findings-oracle.js";
import type { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";
import { oracleTerminalFindings } from "../support/terminal-oracle.js";
import type { Fleet } from "./fleet.js";
import { sleep } from "./settings.js";

/** Waits until the group committed everything in the source and retry topics; fails if an instance died. */
export async function waitForCaughtUp(harness: Harness, fleet: Fleet, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    fleet.assertNoneDied();
    const lags = await fetchLag(harness.admin, harness.config.kafka.group, consumedTopics(harness.names)).catch(
      () => undefined,
    );
    if (lags) {
      const behind = lags.filter((entry) => entry.lag > 0);
      if (behind.length === 0) return;
      last = JSON.stringify(behind);
    }
    await sleep(250);
  }
  throw new Error(`the group did not catch up within ${timeoutMs} ms; lag: ${last}`);
}

export interface Verified {
  readonly records: number;
  readonly nodes: number;
  readonly relationships: number;
}

const DUPLICATE_CHECKS: Record<string, string> = {
  CAN_ESCALATE_TO:
    "MATCH (a:Agent)-[r:CAN_ESCALATE_TO]->(b:Agent) WITH a.agent_id AS from, b.agent_id AS to, count(r) AS n WHERE n > 1 RETURN from, to, n",
  OBSERVED:
    "MATCH (a:Outcome)-[r:OBSERVED]->(b:Outcome) WITH a.outcome_id AS from, b.outcome_id AS to, count(r) AS n WHERE n > 1 RETURN from, to, n",
  ESCALATED_TO:
    "MATCH (a:Outcome)-[r:ESCALATED_TO]->(b:Outcome) WITH a.outcome_id AS from, b.outcome_id AS to, count(r) AS n WHERE n > 1 RETURN from, to, n",
  PRODUCED: "MATCH (:Agent)-[r:PRODUCED]->(o:Outcome) WITH o.outcome_id AS to, count(r) AS n WHERE n > 1 RETURN to, n",
  AUTHORIZED_FOR:
    "MATCH (a:Agent)-[r:AUTHORIZED_FOR]->(t:Tool) WITH a.agent_id AS from, t.tool_id AS to, count(r) AS n WHERE n > 1 RETURN from, to, n",
  OWNS_WORKFLOW:
    "MATCH (a:Agent)-[r:OWNS_WORKFLOW]->(w:Workflow) WITH a.agent_id AS from, w.workflow_id AS to, count(r) AS n WHERE n > 1 RETURN from, to, n",
  "Agent nodes": "MATCH (a:Agent) WITH a.agent_id AS id, count(a) AS n WHERE n > 1 RETURN id, n",
  "Outcome nodes": "MATCH (o:Outcome) WITH o.outcome_id AS id, count(o) AS n WHERE n > 1 RETURN id, n",
};

/** The declared targets the registry's latest applied state names, per agent (version guard, tombstones). */
function expectedDeclared(events: readonly ProjectorEvent[]): Set<string> {
  const state = new Map<string, { version: number; targets: string[] }>();
  for (const event of events) {
    if (event.kind === "registry-snapshot") {
      const current = state.get(event.agent_id);
      if (current && current.version > event.registry_version) continue;
      state.set(event.agent_id, {
        version: event.registry_version,
        targets: (event.escalation_path ?? []).filter(isAgentId),
      });
    } else if (event.kind === "registry-tombstone") {
      const current = state.get(event.agent_id);
      if (current && current.version <= event.registry_version) {
        current.version = event.registry_version;
        current.targets = [];
      }
    }
  }
  return new Set([...state].flatMap(([from, { targets }]) => targets.map((to) => `${from}>${to}`)));
}

/** Distinct observed outcome pairs per agent pair, straight from the events. */
function expectedObservedCounts(events: readonly ProjectorEvent[]): Map<string, number> {
  const registered = new Set(events.filter((e) => e.kind === "registry-snapshot").map((e) => e.agent_id));
  const producer = new Map<string, string>();
  for (const event of events)
    if (event.kind === "outcome-created" && registered.has(event.agent_id))
      producer.set(event.outcome_id, event.agent_id);
  const pairs = new Set<string>();
  const counts = new Map<string, number>();
  for (const event of events) {
    if (event.kind !== "escalation-edge") continue;
    const from = producer.get(event.source_outcome_id);
    const to = producer.get(event.target_outcome_id);
    if (from === undefined || to === undefined || from === to) continue;
    const pair = `${event.source_outcome_id}>${event.target_outcome_id}`;
    if (pairs.has(pair)) continue;
    pairs.add(pair);
    counts.set(`${from}>${to}`, (counts.get(`${from}>${to}`) ?? 0) + 1);
  }
  return counts;
}

/**
 * Everything a scenario must leave behind, checked after the group caught up: the graph equals the
 * reference model line for line, no relationship or node is duplicated (the canonical dump is a set
 * and would hide duplicates), observed_count is the number of distinct observed outcome pairs (from
 * the graph's markers and from the events), declared is the registry's latest state, and nothing was
 * dead-lettered. Throws one error listing every difference.
 */
export async function verify(harness: Harness, events: readonly ProjectorEvent[]): Promise<Verified> {
  const database = harness.config.neo4j.database;
  const problems: string[] = [];
  const query = async (cypher: string) =>
    (await harness.driver.executeQuery(cypher, {}, { database })).records.map((r) => r.toObject());

  const expected = referenceGraph(events);
  const actual = await harness.dump();
  const diff = diffGraphs(expected, actual, 40);
  if (diff.length > 0)
    problems.push(`graph differs from the reference model (- expected, + actual):\n${diff.join("\n")}`);

  for (const [what, cypher] of Object.entries(DUPLICATE_CHECKS)) {
    const rows = await query(cypher);
    if (rows.length > 0) problems.push(`duplicate ${what}: ${JSON.stringify(rows.slice(0, 10))}`);
  }

  const markerCounts = await query(`
    MATCH (from:Agent)-[r:CAN_ESCALATE_TO]->(to:Agent)
    OPTIONAL MATCH (from)-[:PRODUCED]->(s:Outcome)-[:OBSERVED]->(t:Outcome)<-[:PRODUCED]-(to)
    WITH from, to, r, count(DISTINCT s.outcome_id + '>' + t.outcome_id) AS pairs
    RETURN from.agent_id AS from, to.agent_id AS to, r.observed_count AS observed_count, pairs, r.declared AS declared`);
  const observed = expectedObservedCounts(events);
  const seen = new Set<string>();
  for (const row of markerCounts) {
    const key = `${row.from}>${row.to}`;
    seen.add(key);
    const count = Number(row.observed_count);
    if (count !== Number(row.pairs) || count !== (observed.get(key) ?? 0))
      problems.push(
        `${key}: observed_count ${count}, OBSERVED markers ${Number(row.pairs)}, distinct observed pairs in the log ${observed.get(key) ?? 0}`,
      );
  }
  for (const [key, n] of observed)
    if (!seen.has(key)) problems.push(`${key}: no CAN_ESCALATE_TO for ${n} observed pair(s)`);

  const declared = expectedDeclared(events);
  const actualDeclared = new Set(markerCounts.filter((row) => row.declared === true).map((r) => `${r.from}>${r.to}`));
  for (const key of declared)
    if (!actualDeclared.has(key)) problems.push(`${key}: declared in the registry, not in the graph`);
  for (const key of actualDeclared)
    if (!declared.has(key)) problems.push(`${key}: declared in the graph, not in the registry`);

  const offsets = await Promise.all(
    Object.values(harness.names.deadLetter).map(async (topic) => ({
      topic,
      records: (await topicOffsetsAfterFailover(harness, topic)).reduce(
        (sum, p) => sum + Number(p.high) - Number(p.low),
        0,
      ),
    })),
  );
  for (const { topic, records } of offsets)
    if (records > 0) problems.push(`${records} record(s) dead-lettered to ${topic}`);

  problems.push(...(await findingsProblems(harness, events)));

  if (problems.length > 0) throw new Error(`fault left the graph wrong:\n${problems.join("\n")}`);
  return { records: events.length, nodes: actual.nodes.length, relationships: actual.relationships.length };
}

/**
 * The governance findings, once the event-time judge has decided every mark, against the oracles of the
 * whole log (undeclared escalations, and terminal reachability for the harness's TERMINAL_AGENT_IDS):
 * each finding and resolution, whatever the fault did to the judge's rounds. The workloads publish the
 * registry first and carry no tombstone, so nothing arrives late and every change has its event time.
 */
async function findingsProblems(harness: Harness, events: readonly ProjectorEvent[]): Promise<string[]> {
  if (events.some((e) => e.kind === "registry-tombstone")) return ["a tombstone in the log: its event time is unknown"];
  await waitForJudged(harness, 120_000);
  const line = (f: { finding_id: unknown; kind: unknown; resolves: unknown }) =>
    `${String(f.kind)} ${String(f.finding_id)}${f.resolves ? ` resolves ${String(f.resolves)}` : ""}`;
  const history = events
    .filter((e): e is RegistryEvent => e.kind === "registry-snapshot")
    .flatMap((e) => registryChange(e) ?? []);
  const tenants = [...new Set(history.map((c) => c.tenant_id))];
  const terminals = new Set(harness.config.terminalAgentIds);
  const expected = new Set(
    [
      ...oracleFindingsOfLog(events),
      ...tenants.flatMap((tenant) =>
        oracleTerminalFindings(
          tenant,
          history.filter((c) => c.tenant_id === tenant),
          terminals,
        ),
      ),
    ].map(line),
  );
  const actual = new Set((await graphFindings(harness)).map((row) => line(row as Parameters<typeof line>[0])));
  return [
    ...[...expected].filter((f) => !actual.has(f)).map((f) => `finding missing: ${f}`),
    ...[...actual].filter((f) => !expected.has(f)).map((f) => `finding not in the oracle's: ${f}`),
  ].slice(0, 40);
}

/**
 * A topic's watermarks, asked again with fresh metadata when the admin client's view is stale: right
 * after a broker was killed, kafkajs's fetchTopicOffsets can fail inside (a TypeError on a partition
 * whose leader it no longer knows) instead of answering.
 */
async function topicOffsetsAfterFailover(harness: Harness, topic: string) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await harness.admin.fetchTopicOffsets(topic);
    } catch (error) {
      if (attempt >= 5) throw error;
      await harness.admin.fetchTopicMetadata({ topics: [topic] }).catch(() => {});
      await sleep(1_000);
    }
  }
}
