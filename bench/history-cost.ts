/**
 * `npx tsx bench/history-cost.ts [--agents 2000] [--changes-per-agent 10] [--path-length 3] [--batch 1000]
 * [--label TEXT] [--out DIR] [--keep-graph]`: what the registry history (cypher/registry-history.ts) costs
 * in Neo4j's store, per `:RegistryChange` and per declared edge-version (one agent id in a change's
 * `declared`: a CAN_ESCALATE_TO pair the registry declares, once per change of its declaring agent).
 *
 * Straight to Neo4j with the projector's own statements, no Kafka: registry snapshots planned by
 * projectRegistry (§3.1, §3.2 and the history's MERGE) in batches of `--batch`, one transaction each,
 * one writer, as one registry partition; after every batch the judge's own statements clear the marks
 * it left (UNJUDGED_CHANGES, clearChanges), as the judge does within a second in the service, so the
 * `unjudged` index stays as small as it does there. Phases, from a wiped graph:
 *   1. baseline: every agent's first snapshot, declaring all 2L agents of its pool, so that the agents
 *      and every CAN_ESCALATE_TO pair the later versions name exist before the history is measured;
 *   2. history: K more versions per agent, each declaring a different L of its pool (§3.2 only flips
 *      `declared` on existing pairs, so what grows is the history alone);
 *   3. compaction: compactRegistryHistory (the service's retention) with its cutoff after every change,
 *      which keeps one change per agent;
 *   4. refill: K more versions per agent after the compaction, to see whether the freed records are used
 *      again.
 * After each phase the store is measured on disk: the sum of the database directory's files (store
 * files, id files, schema indexes), with Neo4j stopped. Neo4j 5 Community has no `db.checkpoint()` and
 * no procedure or SHOW command that reports store size (`SHOW DATABASES` has none; its JMX beans are the
 * JVM's only; store metrics are Enterprise's), and its page cache holds a graph this size in memory, so
 * the files only reach their size when it checkpoints: stopping the DBMS does (stack/neo4j). So the
 * sizes need the local stack (`stackUp`, stack/README.md), whose Neo4j this script stops and starts
 * again after each phase (about 20 s each). With NEO4J_URI naming any other server only the counts are
 * reported. Give it a stack of its own, on a fresh store: the files never shrink, and records freed by
 * an earlier graph (the wipe deletes it) are used again, so on a store that held data before the growth
 * undercounts; the script says so when the node store was not empty before the wipe.
 *
 * Prints a summary and writes bench/results/<timestamp>-history-cost.json.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import neo4j, { type Driver } from "neo4j-driver";
import { createGraphWriter } from "../src/adapters/neo4j/graph-writer.js";
import { clearChanges, UNJUDGED_CHANGES } from "../src/cypher/event-time-judge.js";
import { COMPACTED_AGENTS } from "../src/cypher/registry-history.js";
import type { RegistrySnapshot } from "../src/model/events.js";
import { compactionStatement } from "../src/pipeline/registry-history-retention.js";
import { type GraphWriter, noopMetrics } from "../src/ports.js";
import { projectRegistry } from "../src/projection/registry.js";
import { agentId } from "../workload/generate.js";
import { wipeGraph } from "./lib/direct.js";

const { values: flags } = parseArgs({
  options: {
    agents: { type: "string", default: "2000" },
    "changes-per-agent": { type: "string", default: "10" },
    "path-length": { type: "string", default: "3" },
    batch: { type: "string", default: "1000" },
    label: { type: "string", default: "" },
    out: { type: "string" },
    "keep-graph": { type: "boolean", default: false },
  },
});
const AGENTS = Number(flags.agents);
const K = Number(flags["changes-per-agent"]);
const L = Number(flags["path-length"]);
const BATCH = Number(flags.batch);
if (![AGENTS, K, L, BATCH].every((n) => Number.isInteger(n) && n > 0) || AGENTS < 2 * L + 1) {
  process.stderr.write(
    "history-cost: --agents, --changes-per-agent, --path-length, --batch are positive integers, agents > 2 × path length\n",
  );
  process.exit(2);
}
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TENANT = "default";
const FAMILIES = ["os", "fin", "ops", "sec", "dom"];
const say = (line: string) =>
  process.stderr.write(`[history-cost ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

// ---- endpoints: NEO4J_URI when set, else the local stack's Neo4j ----
const stack = await import("../stack/api.js");
const { serverPaths } = await import("../stack/servers/types.js");
const stackOptions = { services: ["neo4j" as const], log: (line: string) => say(`  ${line}`) };
const localUri = stack.stackEndpoints(stackOptions).neo4jUri;
if (!process.env.NEO4J_URI) {
  say("NEO4J_URI not set: bringing up the local stack's Neo4j");
  const up = await stack.stackUp(stackOptions);
  process.env.NEO4J_URI = up.neo4jUri;
  process.env.NEO4J_USER = up.neo4jUser;
  process.env.NEO4J_PASSWORD = up.neo4jPassword;
}
const uri = process.env.NEO4J_URI as string;
const user = process.env.NEO4J_USER ?? "neo4j";
const password = process.env.NEO4J_PASSWORD ?? "projector-local-pw";
const database = process.env.NEO4J_DATABASE ?? "neo4j";
const sameEndpoint = uri.replace("localhost", "127.0.0.1") === localUri;
const dataDir = path.join(serverPaths(stack.loadConfig(), "neo4j").data, "data");
const storeDir = path.join(dataDir, "databases", database);
const txDir = path.join(dataDir, "transactions", database);
const local = sameEndpoint && fs.existsSync(storeDir);
say(
  local
    ? `Neo4j at ${uri} is the local stack's: its store is measured in ${path.relative(ROOT, storeDir)}, with Neo4j stopped after each phase`
    : `Neo4j at ${uri} is not the local stack's (${localUri}): no store directory is known, only counts are reported`,
);

const newDriver = (): Driver => neo4j.driver(uri, neo4j.auth.basic(user, password), { maxConnectionPoolSize: 4 });
let driver = newDriver();
let graph: GraphWriter = createGraphWriter(driver, noopMetrics, 300_000);
/** A new driver after Neo4j was restarted. */
function connect(): void {
  driver = newDriver();
  graph = createGraphWriter(driver, noopMetrics, 300_000);
}

// ---- the store on disk ----
interface StoreSize {
  readonly bytes: number;
  /** Blocks the file system allocated (du), for comparison: sparse or preallocated files differ. */
  readonly allocatedBytes: number;
  readonly files: Record<string, number>;
  readonly transactionLogBytes: number;
}

function walk(dir: string, into: Record<string, number>, base = dir, allocated = { n: 0 }): { n: number } {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, into, base, allocated);
    else if (entry.isFile()) {
      const stat = fs.statSync(full);
      into[path.relative(base, full)] = stat.size;
      allocated.n += stat.blocks * 512;
    }
  }
  return allocated;
}

function storeSize(): StoreSize {
  const files: Record<string, number> = {};
  const allocated = walk(storeDir, files);
  const tx: Record<string, number> = {};
  if (fs.existsSync(txDir)) walk(txDir, tx);
  const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
  return { bytes: sum(files), allocatedBytes: allocated.n, files, transactionLogBytes: sum(tx) };
}

/** Index directories (schema/index/<provider>/<id>) by the index's name. */
let indexNames = new Map<string, string>();
async function readIndexNames(): Promise<void> {
  const { records } = await driver.executeQuery("SHOW INDEXES YIELD id, name RETURN id, name", {}, { database });
  indexNames = new Map(records.map((r) => [String(r.get("id")), String(r.get("name"))]));
}

/** What a file holds, for the breakdown: the store it belongs to, or the schema index by name. */
function groupOf(file: string): string {
  const index = /^schema\/index\/[^/]+\/(\d+)\//.exec(file);
  if (index) return `index ${indexNames.get(index[1] as string) ?? index[1]}`;
  if (file.endsWith(".id")) return "id files";
  const store = /^neostore\.(\w+?)(?:store)?\.db(?:\.(\w+(?:\.\w+)?))?$/.exec(file);
  if (store) return store[2] ? `${store[1]}.${store[2]}` : (store[1] as string);
  return "other";
}

function grouped(before: StoreSize, after: StoreSize): Record<string, number> {
  const out: Record<string, number> = {};
  for (const file of new Set([...Object.keys(before.files), ...Object.keys(after.files)])) {
    const delta = (after.files[file] ?? 0) - (before.files[file] ?? 0);
    if (delta === 0) continue;
    const group = groupOf(file);
    out[group] = (out[group] ?? 0) + delta;
  }
  return Object.fromEntries(Object.entries(out).sort(([, a], [, b]) => b - a));
}

/** Stops Neo4j (it checkpoints on the way down), reads the files, starts it again. */
async function measure(): Promise<StoreSize | null> {
  if (!local) return null;
  await driver.close();
  const started = performance.now();
  await stack.stackDown(stackOptions);
  const size = storeSize();
  await stack.stackUp(stackOptions);
  connect();
  await driver.executeQuery("RETURN 1", {}, { database });
  say(`store ${mib(size.bytes)} (${size.bytes} bytes), measured with Neo4j stopped (${secs(started)})`);
  return size;
}

// ---- counts, from Neo4j ----
interface Counts {
  readonly nodes: number;
  readonly relationships: number;
  readonly agents: number;
  readonly canEscalateTo: number;
  readonly declaredPairs: number;
  readonly registryChanges: number;
  /** Properties on the changes, and what their `declared` lists and agent ids hold. */
  readonly changeProperties: number;
  readonly declaredEntries: number;
  readonly declaredChars: number;
  readonly agentIdChars: number;
  readonly unjudged: number;
  /** The highest node id in use (id(), deprecated but the record id): shows whether freed records are used again. */
  readonly maxNodeId: number;
}

async function counts(): Promise<Counts> {
  const { records } = await driver.executeQuery(
    `CALL () { MATCH (n) RETURN count(n) AS nodes, max(id(n)) AS maxNodeId }
     CALL () { MATCH ()-[r]->() RETURN count(r) AS relationships }
     CALL () { MATCH (a:Agent) RETURN count(a) AS agents }
     CALL () { MATCH ()-[r:CAN_ESCALATE_TO]->() RETURN count(r) AS canEscalateTo, count(CASE WHEN r.declared THEN 1 END) AS declaredPairs }
     CALL () {
       MATCH (c:RegistryChange)
       RETURN count(c) AS registryChanges, sum(size(keys(c))) AS changeProperties,
              sum(size(c.declared)) AS declaredEntries,
              sum(reduce(n = 0, d IN c.declared | n + size(d))) AS declaredChars,
              sum(size(c.agent_id)) AS agentIdChars, count(c.unjudged) AS unjudged
     }
     RETURN *`,
    {},
    { database },
  );
  const row = records[0]?.toObject() ?? {};
  return Object.fromEntries(
    Object.entries(row).map(([k, v]) => [k, v === null ? 0 : neo4j.integer.toNumber(v as number)]),
  ) as unknown as Counts;
}

// ---- the registry: agents, pools, versions ----
const ids = Array.from({ length: AGENTS }, (_, n) => agentId(FAMILIES[n % FAMILIES.length] as string, 1000 + n));
/** Each agent's pool: the 2L agents after it (wrapping round). */
const pool = (n: number) => Array.from({ length: 2 * L }, (_, k) => ids[(n + 1 + k) % AGENTS] as string);
const BASE = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;

function snapshot(n: number, version: number): RegistrySnapshot {
  const targets = pool(n);
  // Version 1 declares the whole pool; version v a window of L starting at v mod (L + 1): never the
  // same as the version before it.
  const start = version % (L + 1);
  const path = version === 1 ? targets : targets.slice(start, start + L);
  const id = ids[n] as string;
  return {
    kind: "registry-snapshot",
    event_id: `hc-${id}-${version}`,
    tenant_id: TENANT,
    registry_version: version,
    occurred_at: BASE + version * HOUR + n,
    agent_id: id,
    name: `Agent ${id}`,
    family: id.split("-agt-")[0] ?? null,
    owner: `team-${n % 4}`,
    decision_scope: "bounded",
    status: "active",
    tools: [],
    owned_workflows: [],
    escalation_path: path,
  };
}

/** Versions `from`..`to` of every agent, one version of every agent after the other, then the judge's mark clearing after each batch. */
async function applyVersions(from: number, to: number): Promise<{ changes: number; seconds: number }> {
  const started = performance.now();
  let changes = 0;
  for (let version = from; version <= to; version++) {
    for (let first = 0; first < AGENTS; first += BATCH) {
      const events = Array.from({ length: Math.min(BATCH, AGENTS - first) }, (_, k) => snapshot(first + k, version));
      const plan = projectRegistry(events.map((event, i) => ({ i, event })));
      await graph.apply(database, plan.statements);
      changes += events.length;
      await clearMarks();
    }
  }
  return { changes, seconds: (performance.now() - started) / 1000 };
}

/** What a judge round does to the changes' marks (pipeline/event-time-judge.ts): nothing late here. */
async function clearMarks(): Promise<void> {
  for (;;) {
    const marked = await graph.read(database, UNJUDGED_CHANGES, { watermark: null, limit: 10_000 });
    if (marked.length === 0) return;
    await graph.apply(database, [
      {
        name: "judge-marks",
        cypher: clearChanges(false),
        params: { rows: marked.map((c) => ({ ...c, late: false })) },
      },
    ]);
  }
}

async function compact(cutoff: number): Promise<{ removed: number; statements: number; seconds: number }> {
  const started = performance.now();
  let removed = 0;
  let statements = 0;
  for (;;) {
    const [result] = await graph.apply(database, [compactionStatement(false, cutoff)]);
    statements += 1;
    const row = result?.records[0];
    removed += Number(row?.removed ?? 0);
    if (Number(row?.agents ?? 0) < COMPACTED_AGENTS) break;
  }
  return { removed, statements, seconds: (performance.now() - started) / 1000 };
}

const mib = (bytes: number) => `${(bytes / 1_048_576).toFixed(2)} MiB`;
const secs = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;
const signed = (n: number | null) => (n === null ? "?" : n >= 0 ? `+${n}` : String(n));
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

// ---- the run ----
const startedAt = new Date();
const runStarted = performance.now();
const versions = await driver.executeQuery("CALL dbms.components() YIELD name, versions, edition RETURN *");
const neo4jVersion = versions.records.map((r) => `${r.get("name")} ${r.get("versions")[0]} ${r.get("edition")}`)[0];
say(`${neo4jVersion}; ${AGENTS} agents × ${K} changes, paths of ${L} (pools of ${2 * L}), batches of ${BATCH}`);

await wipeGraph(driver, database);
await readIndexNames();

interface Phase {
  readonly name: string;
  readonly changesWritten: number;
  readonly changesRemoved: number;
  readonly seconds: number;
  readonly counts: Counts;
  readonly store: StoreSize | null;
}
const phases: Phase[] = [];
async function phase(name: string, work: () => Promise<{ changes?: number; removed?: number; seconds: number }>) {
  say(`${name}…`);
  const done = await work();
  const c = await counts();
  say(
    `${name}: ${done.changes ?? 0} changes written, ${done.removed ?? 0} removed in ${done.seconds.toFixed(1)} s; ${c.registryChanges} changes, ${c.nodes} nodes, ${c.relationships} relationships`,
  );
  const store = await measure();
  phases.push({
    name,
    changesWritten: done.changes ?? 0,
    changesRemoved: done.removed ?? 0,
    seconds: round(done.seconds, 2),
    counts: c,
    store,
  });
}

const emptyStarted = performance.now();
await phase("empty", async () => ({ seconds: (performance.now() - emptyStarted) / 1000 }));
// The files never shrink: a node store that is not empty after the wipe held a graph, whose freed
// records the run uses again.
const nodeStoreEmpty = phases[0]?.store?.files["neostore.nodestore.db"] ?? null;
const freshStore = nodeStoreEmpty === null ? null : nodeStoreEmpty === 0;
if (freshStore === false)
  say(
    `WARNING: the node store holds ${nodeStoreEmpty} bytes after the wipe: records freed by an earlier graph are used again, so the growth below undercounts. Run on a fresh store (npm run stack:reset with this STACK_HOME).`,
  );
await phase("baseline", () => applyVersions(1, 1));
const maxIdBeforeHistory = (phases.at(-1) as Phase).counts.maxNodeId;
await phase("history", () => applyVersions(2, K + 1));
// The store was fresh and nothing was deleted before the compaction: every id up to the highest then
// had been written once, so a refill change on one of them is on a record the compaction freed.
const maxIdBeforeCompaction = (phases.at(-1) as Phase).counts.maxNodeId;
const lastOccurred = BASE + (K + 1) * HOUR + AGENTS;
await phase("compaction", () => compact(lastOccurred + 1));
await phase("refill", () => applyVersions(K + 2, 2 * K + 1));

const refillIds = await driver.executeQuery(
  `MATCH (c:RegistryChange) WHERE c.registry_version >= $from
   RETURN count(CASE WHEN id(c) <= $maxBefore THEN 1 END) AS reused`,
  { from: neo4j.int(K + 2), maxBefore: neo4j.int(maxIdBeforeCompaction) },
  { database },
);
const refillReused = neo4j.integer.toNumber(refillIds.records[0]?.get("reused"));
const historyIds = await driver.executeQuery(
  `MATCH (c:RegistryChange) WHERE 2 <= c.registry_version <= $to AND id(c) <= $maxBefore RETURN count(c) AS reused`,
  { to: neo4j.int(K + 1), maxBefore: neo4j.int(maxIdBeforeHistory) },
  { database },
);
const historyReused = neo4j.integer.toNumber(historyIds.records[0]?.get("reused"));

const [empty, baseline, history, compaction, refill] = phases as [Phase, Phase, Phase, Phase, Phase];
const delta = (a: Phase, b: Phase) => (a.store && b.store ? b.store.bytes - a.store.bytes : null);
const per = (bytes: number | null, n: number) => (bytes === null || n === 0 ? null : round(bytes / n));
const historyChanges = history.changesWritten;
const edgeVersions = history.counts.declaredEntries - baseline.counts.declaredEntries;
const historyBytes = delta(baseline, history);
const byGroup = (a: Phase, b: Phase) => (a.store && b.store ? grouped(a.store, b.store) : null);

const summary = {
  agents: AGENTS,
  changesPerAgent: K,
  pathLength: L,
  storeMeasured: local,
  freshStore,
  /** Phase 2: K changes per agent of L declared agents each; only the history grows. */
  history: {
    changes: historyChanges,
    edgeVersions,
    storeBytes: historyBytes,
    bytesPerChange: per(historyBytes, historyChanges),
    bytesPerEdgeVersion: per(historyBytes, edgeVersions),
    allocatedBytesPerChange: per(
      history.store && baseline.store ? history.store.allocatedBytes - baseline.store.allocatedBytes : null,
      historyChanges,
    ),
    /** Per change, by store file or schema index (bytes). */
    bytesPerChangeByFile: (() => {
      const g = byGroup(baseline, history);
      return g && Object.fromEntries(Object.entries(g).map(([k, v]) => [k, round(v / historyChanges)]));
    })(),
    /**
     * The index of marks (`unjudged`): each entry is removed within the batch, but a schema index's
     * freed pages are used again only after a checkpoint, so its growth is bounded by the marks written
     * between two checkpoints rather than by the history (the refill shows it: no index grows).
     */
    marksIndexBytesPerChange: (() => {
      const g = byGroup(baseline, history);
      return g && round((g["index registry_change_unjudged"] ?? 0) / historyChanges);
    })(),
    propertiesPerChange: round(history.counts.changeProperties / history.counts.registryChanges, 2),
    nodeIdsReused: historyReused,
  },
  /** Phase 1 for comparison: an agent's current state (node, 2L pairs) and its first change. */
  baseline: { storeBytes: delta(empty, baseline), bytesPerAgent: per(delta(empty, baseline), AGENTS) },
  compaction: {
    removed: compaction.changesRemoved,
    kept: compaction.counts.registryChanges,
    storeBytes: delta(history, compaction),
    byFile: byGroup(history, compaction),
  },
  refill: {
    changes: refill.changesWritten,
    storeBytes: delta(compaction, refill),
    bytesPerChange: per(delta(compaction, refill), refill.changesWritten),
    nodeIdsReused: refillReused,
    byFile: byGroup(compaction, refill),
  },
};

if (!flags["keep-graph"]) await wipeGraph(driver, database);
await driver.close();

const runId = startedAt.toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
const outDir = flags.out ?? path.join(ROOT, "bench/results");
fs.mkdirSync(outDir, { recursive: true });
const file = path.join(outDir, `${runId}-history-cost.json`);
const result = {
  startedAt: startedAt.toISOString(),
  label: flags.label,
  flags,
  neo4j: neo4jVersion,
  seconds: round((performance.now() - runStarted) / 1000),
  summary,
  // Per phase: counts and the store's files (sizes in bytes), as read with Neo4j stopped.
  phases: phases.map((p) => ({
    ...p,
    store: p.store && {
      bytes: p.store.bytes,
      allocatedBytes: p.store.allocatedBytes,
      transactionLogBytes: p.store.transactionLogBytes,
      files: p.store.files,
    },
  })),
  indexes: Object.fromEntries(indexNames),
};
fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
say(`results: ${path.relative(ROOT, file)}`);

const h = summary.history;
const lines = [
  `registry history, ${AGENTS} agents × ${K} changes declaring ${L} agents each (${h.changes} changes, ${h.edgeVersions} edge-versions):`,
  local
    ? `  store +${h.storeBytes} bytes: ${h.bytesPerChange} bytes per change, ${h.bytesPerEdgeVersion} bytes per declared edge-version (${h.propertiesPerChange} properties per change)${freshStore ? "" : " — NOT a fresh store: undercounts"}`
    : "  store size not measured (not the local stack's Neo4j): counts only",
  ...(h.bytesPerChangeByFile
    ? [
        `  per change by file: ${Object.entries(h.bytesPerChangeByFile)
          .map(([k, v]) => `${k} ${v}`)
          .join(", ")}`,
        `  of which the index of marks (unjudged, bounded by the marks between two checkpoints): ${h.marksIndexBytesPerChange} bytes per change`,
      ]
    : []),
  `  counts after it: ${history.counts.registryChanges} changes, ${history.counts.changeProperties} properties on them, ${history.counts.declaredEntries} declared entries (${history.counts.declaredChars} chars), ${history.counts.nodes} nodes, ${history.counts.canEscalateTo} CAN_ESCALATE_TO`,
  `  compaction: ${summary.compaction.removed} changes removed, ${summary.compaction.kept} kept; store ${
    local
      ? `${signed(summary.compaction.storeBytes)} bytes (${Object.entries(summary.compaction.byFile ?? {})
          .map(([k, v]) => `${k} ${signed(v)}`)
          .join(", ")})`
      : "not measured"
  }`,
  `  refill after it: ${summary.refill.changes} changes, store ${local ? `+${summary.refill.storeBytes} bytes (${summary.refill.bytesPerChange} per change)` : "not measured"}, ${summary.refill.nodeIdsReused} of them on node ids freed by the compaction`,
];
process.stdout.write(`${lines.join("\n")}\n`);
