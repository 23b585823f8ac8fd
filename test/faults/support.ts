import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import fs from "node:fs";
import neo4j from "neo4j-driver";
import type { EscalationEdge, OutcomeCreated, ProjectorEvent, RegistryEvent } from "../../src/model/events.js";
import { isAgentId } from "../../src/model/events.js";
import { diffGraphs } from "../../src/model/graph.js";
import { generateEventLog, prng, SMALL_WORKLOAD } from "../../workload/generate.js";
import type { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How much bigger than the CI size the suite runs (FAULTS_SCALE=4: four times the records and faults). */
export const SCALE = Math.max(1, Number(process.env.FAULTS_SCALE ?? 1) || 1);

/** Server restarts need the project's own local stack; with servers of the user's own they are skipped. */
export const CAN_RESTART_SERVERS =
  !(process.env.KAFKA_BROKERS && process.env.NEO4J_URI && process.env.SCHEMA_REGISTRY_URL) &&
  process.env.STACK !== "testcontainers";

export interface Workload {
  readonly registry: readonly RegistryEvent[];
  readonly outcomes: readonly OutcomeCreated[];
  readonly escalations: readonly EscalationEdge[];
  readonly hotAgents: readonly string[];
  readonly all: readonly ProjectorEvent[];
}

/**
 * A generated log where most outcomes (and so most escalations between outcomes) belong to three hot
 * agents, so that concurrent batches MERGE the same Agent nodes and CAN_ESCALATE_TO edges.
 */
export function hotWorkload(seed: number): Workload {
  const log = generateEventLog(seed, {
    ...SMALL_WORKLOAD,
    agents: 16,
    editsPerAgent: 2,
    outcomes: 450 * SCALE,
    escalations: 400 * SCALE,
  });
  const agents = [...new Set(log.registry.map((event) => event.agent_id))];
  const hotAgents = agents.slice(2, 5);
  const random = prng(seed + 1);
  const outcomes = log.outcomes.map((outcome) =>
    random() < 0.85 ? { ...outcome, agent_id: hotAgents[Math.floor(random() * 3)] as string } : outcome,
  );
  return {
    registry: log.registry,
    outcomes,
    escalations: log.escalations,
    hotAgents,
    all: [...log.registry, ...outcomes, ...log.escalations],
  };
}

/**
 * Publishes a workload while faults are injected: the registry at once, then outcomes and escalations
 * interleaved in small chunks at a steady pace, so that there is always something being consumed.
 * `hold()`/`release()` stop publishing while the broker is down; `flush()` publishes the rest at once.
 */
export class Publisher {
  private gate: Promise<void> = Promise.resolve();
  private open: () => void = () => {};
  private flushing = false;
  private inFlight: Promise<unknown> = Promise.resolve();
  readonly done: Promise<void>;

  constructor(
    harness: Harness,
    workload: Workload,
    opts: { chunk: number; intervalMs: number; registryFirst?: boolean },
  ) {
    const rest: ProjectorEvent[] = [];
    const o = workload.outcomes;
    const e = workload.escalations;
    // Outcomes run a little ahead of the escalations that name them; some escalations still overtake
    // their outcomes and go through the retry topics.
    for (let i = 0, j = 0; i < o.length || j < e.length; ) {
      for (let k = 0; k < 3 && i < o.length; k++) rest.push(o[i++] as ProjectorEvent);
      for (let k = 0; k < 2 && j < e.length; k++) rest.push(e[j++] as ProjectorEvent);
    }
    this.done = (async () => {
      if (opts.registryFirst !== false) await harness.publish(workload.registry);
      for (let start = 0; start < rest.length; start += opts.chunk) {
        await this.gate;
        this.inFlight = harness.publish(rest.slice(start, start + opts.chunk));
        await this.inFlight;
        if (!this.flushing) await sleep(opts.intervalMs);
      }
    })();
    this.done.catch(() => {}); // flush() reports it
  }

  /** Stops publishing after the chunk in flight, which it waits for. */
  async hold(): Promise<void> {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
    await this.inFlight.catch(() => {});
  }

  release(): void {
    this.open();
  }

  async flush(): Promise<void> {
    this.flushing = true;
    this.release();
    await this.done;
  }
}

/** One `agent-graph-projector run` child process. */
export class Instance {
  readonly child: ChildProcessWithoutNullStreams;
  output = "";
  exitCode: number | null | undefined;
  signal: NodeJS.Signals | null | undefined;
  expectedExit = false;
  readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
      env: { ...process.env, ...env, METRICS_PORT: "0", METRICS_HOST: "127.0.0.1", LOG_LEVEL: "info" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const append = (chunk: Buffer) => {
      this.output += chunk.toString();
      if (this.output.length > 2_000_000) this.output = this.output.slice(-1_000_000);
    };
    this.child.stdout.on("data", append);
    this.child.stderr.on("data", append);
    this.exited = new Promise((resolve) =>
      this.child.on("close", (code, signal) => {
        this.exitCode = code;
        this.signal = signal;
        resolve();
      }),
    );
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** Lines of the pino log whose message contains `text`. */
  count(text: string): number {
    return this.output.split("\n").filter((line) => line.includes(`"msg":"${text}`)).length;
  }

  async started(timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.output.includes('"msg":"projector running"')) {
      if (!this.running) throw new Error(`${this.name} exited before it ran:\n${this.output.slice(-3000)}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not start:\n${this.output.slice(-3000)}`);
      await sleep(100);
    }
  }

  async metric(name: string): Promise<number> {
    const port = Number(/"metricsPort":(\d+)/.exec(this.output)?.[1]);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    return text
      .split("\n")
      .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
  }

  kill(): Promise<void> {
    this.expectedExit = true;
    this.child.kill("SIGKILL");
    return this.exited;
  }

  async terminate(): Promise<void> {
    this.expectedExit = true;
    this.child.kill("SIGTERM");
    await this.exited;
    if (this.exitCode !== 0)
      throw new Error(`${this.name} did not stop cleanly (exit ${this.exitCode}):\n${this.output.slice(-3000)}`);
  }
}

/** The projector instances of one scenario; an instance that dies on its own fails the scenario. */
export class Fleet {
  readonly instances: Instance[] = [];
  private next = 0;
  /** Driver-level transaction retries and infrastructure pauses of instances that are gone. */
  private retired = { txRetries: 0, pauses: 0 };

  constructor(private readonly env: Record<string, string>) {}

  async add(n = 1): Promise<Instance[]> {
    const added = Array.from({ length: n }, () => new Instance(`projector-${++this.next}`, this.env));
    this.instances.push(...added);
    await Promise.all(added.map((instance) => instance.started()));
    return added;
  }

  live(): Instance[] {
    return this.instances.filter((instance) => instance.running && !instance.expectedExit);
  }

  /** Fails with the instance's log when one exited without being told to. */
  assertNoneDied(): void {
    for (const instance of this.instances) {
      if (!instance.running && !instance.expectedExit)
        throw new Error(
          `${instance.name} exited on its own (code ${instance.exitCode}, signal ${instance.signal}):\n${instance.output.slice(-4000)}`,
        );
    }
  }

  async retire(instance: Instance, how: "kill" | "terminate"): Promise<void> {
    if (how === "terminate") this.retired.txRetries += await instance.metric("agp_transaction_retries_total");
    this.retired.pauses += instance.count("infrastructure failure");
    if (how === "kill") await instance.kill();
    else await instance.terminate();
  }

  /** Transaction retries (Neo4j deadlocks, timeouts, lost connections) and partition pauses, all instances. */
  async stats(): Promise<{ txRetries: number; pauses: number; warnings: number }> {
    let { txRetries, pauses } = this.retired;
    for (const instance of this.live()) {
      txRetries += await instance.metric("agp_transaction_retries_total").catch(() => 0);
      pauses += instance.count("infrastructure failure");
    }
    return { txRetries, pauses, warnings: this.warnings() };
  }

  /** Warnings and errors the instances logged (kafkajs reconnects, Neo4j failures, pauses). */
  warnings(): number {
    return this.instances.reduce(
      (sum, instance) => sum + instance.output.split("\n").filter((line) => /"level":(40|50|60)/.test(line)).length,
      0,
    );
  }

  /** With FAULTS_LOG_DIR set, every instance's log is written there, one file per instance. */
  saveLogs(scenario: string): void {
    const dir = process.env.FAULTS_LOG_DIR;
    if (!dir) return;
    fs.mkdirSync(dir, { recursive: true });
    for (const instance of this.instances) fs.writeFileSync(`${dir}/${scenario}-${instance.name}.log`, instance.output);
  }

  async stopAll(): Promise<void> {
    await Promise.all(
      this.instances.map(async (instance) => {
        if (!instance.running) return;
        instance.expectedExit = true;
        instance.child.kill("SIGTERM");
        const timer = setTimeout(() => instance.child.kill("SIGKILL"), 30_000);
        await instance.exited;
        clearTimeout(timer);
      }),
    );
  }
}

/**
 * Waits until some projector has a write transaction open in Neo4j (a batch in flight) and returns
 * the pid of the process holding it, found through its client port (Linux /proc), when it is one of
 * `pids`. Undefined when no batch was seen in flight within the timeout.
 */
export async function instanceMidBatch(
  harness: Harness,
  pids: readonly number[],
  timeoutMs: number,
): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { records } = await harness.driver.executeQuery(
      "SHOW TRANSACTIONS YIELD currentQuery, clientAddress WHERE currentQuery CONTAINS 'UNWIND $rows' RETURN clientAddress",
      {},
      { database: harness.config.neo4j.database },
    );
    for (const record of records) {
      const port = Number(String(record.get("clientAddress")).split(":").at(-1));
      const pid = pidOfLocalPort(port, pids);
      if (pid !== undefined) return pid;
    }
    await sleep(15);
  }
  return undefined;
}

function pidOfLocalPort(port: number, pids: readonly number[]): number | undefined {
  try {
    const inodes = new Set<string>();
    for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
      if (!fs.existsSync(file)) continue;
      for (const line of fs.readFileSync(file, "utf8").split("\n").slice(1)) {
        const cols = line.trim().split(/\s+/);
        const local = cols[1];
        if (local && Number.parseInt(local.split(":").at(-1) ?? "", 16) === port) inodes.add(cols[9] as string);
      }
    }
    for (const pid of pids) {
      for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
        const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: "utf8" });
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode && inodes.has(inode)) return pid;
      }
    }
  } catch {
    // a process exited under us, or no /proc: not identified
  }
  return undefined;
}

/**
 * Holds an open write transaction that SETs a property on the agent's node (an exclusive lock) for
 * `holdMs`, then rolls it back so the graph is left as it was.
 */
export async function holdAgentLock(harness: Harness, agentId: string, holdMs: number): Promise<void> {
  const session = harness.driver.session({
    database: harness.config.neo4j.database,
    defaultAccessMode: neo4j.session.WRITE,
  });
  try {
    const tx = await session.beginTransaction();
    try {
      const result = await tx.run(
        "MATCH (a:Agent {agent_id: $id}) SET a.fault_lock = timestamp() RETURN count(a) AS n",
        {
          id: agentId,
        },
      );
      if (Number(result.records[0]?.get("n")) !== 1) throw new Error(`agent ${agentId} is not in the graph to lock`);
      await sleep(holdMs);
    } finally {
      await tx.rollback();
    }
  } finally {
    await session.close();
  }
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

  if (problems.length > 0) throw new Error(`fault left the graph wrong:\n${problems.join("\n")}`);
  return { records: events.length, nodes: actual.nodes.length, relationships: actual.relationships.length };
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
