import { randomUUID } from "node:crypto";
import { type Message, Partitioners, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCatchUpHold } from "../../src/adapters/kafka/catch-up-hold.js";
import { streamOf } from "../../src/adapters/kafka/event-publisher.js";
import { createGroupAdmin, fetchLag } from "../../src/adapters/kafka/group-admin.js";
import { createTopicReader, readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { createAvroDecoder } from "../../src/adapters/registry/schema-registry.js";
import { OLDEST_MARK } from "../../src/cypher/event-time-judge.js";
import { createLogger } from "../../src/logger.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import { diffGraphs } from "../../src/model/graph.js";
import { listDeadLetters } from "../../src/operations/dlq.js";
import { rebuildRegistry } from "../../src/operations/rebuild.js";
import { replayTopics } from "../../src/operations/replay.js";
import type { SourceRecord } from "../../src/ports.js";
import { reconcileRegistry } from "../../src/reconcile/reconcile.js";
import type { RunningService } from "../../src/service.js";
import { consumedTopics, STREAMS } from "../../src/topics.js";
import { agentId, generateEventLog, prng, SMALL_WORKLOAD } from "../../workload/generate.js";
import { snapshot, tombstone } from "../support/builders.js";
import { runCli } from "../support/cli.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";
import { until } from "../support/until.js";

/** Long enough for any read of these small topics; far shorter than the test's own timeout. */
const READ_BOUND_MS = 20_000;
const RULES = { servedTenants: new Set(["default"]), maxListLength: 1000, maxIdLength: 256, maxTextLength: 4096 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A record's content as its producer wrote it (key, value, headers), to tell the log's records apart without decoding. */
function contentOf(record: {
  key: string | Buffer | null;
  value: Buffer | null;
  headers?: Readonly<Record<string, string | Buffer | undefined>>;
}): string {
  const headers = Object.entries(record.headers ?? {})
    .map(([name, value]) => [name, String(value)])
    .sort(([a], [b]) => String(a).localeCompare(String(b)));
  return JSON.stringify([
    record.key === null ? null : String(record.key),
    record.value?.toString("hex") ?? null,
    headers,
  ]);
}

/**
 * The `n`th event of an aborted transaction, made to change the graph if it were applied: a newer
 * version or a tombstone of a committed agent, an agent or outcome nobody committed, an escalation
 * reversed (which changes it unless the log holds the reverse pair too).
 */
function spoiled(event: ProjectorEvent, n: number): ProjectorEvent {
  if (event.kind === "registry-snapshot")
    return n % 3 === 0
      ? tombstone(event.agent_id, event.registry_version + 100)
      : { ...event, registry_version: event.registry_version + 100, name: "aborted", tools: [] };
  if (event.kind === "registry-tombstone") return snapshot(agentId("dom", 900 + n), { registry_version: 1 });
  if (event.kind === "outcome-created")
    return { ...event, outcome_id: `${event.outcome_id}-aborted`, status: "failed" };
  return { ...event, source_outcome_id: event.target_outcome_id, target_outcome_id: event.source_outcome_id };
}

/**
 * Source topics written as an exactly-once pipeline writes them: with a transactional producer,
 * commits and aborts mixed. Aborted transactions carry records that would change the graph if they
 * were applied (newer versions, tombstones, agents, outcomes and escalations of their own, a poison
 * record). Partition 1 of the registry and escalation topics ends with an aborted transaction, the
 * others with a commit; the outcome topic mixes plain writes in and ends with a committed and an aborted
 * transaction. This file also runs in the cluster project (three brokers, transaction state replicated
 * three times).
 */
describe("transactional source topics", () => {
  const log = generateEventLog(2311, { ...SMALL_WORKLOAD, editsPerAgent: 2, outcomeUpdateRatio: 0.2 });
  const committed: ProjectorEvent[] = [...log.registry, ...log.outcomes, ...log.escalations];
  const random = prng(23);
  let harness: Harness;
  let producer: Producer;
  let service: RunningService;

  /** Events that must never reach the graph (see spoiled). */
  const aborted = (events: readonly ProjectorEvent[]): ProjectorEvent[] => events.map(spoiled);

  async function send(events: readonly ProjectorEvent[], commit: boolean, partition?: number): Promise<void> {
    const byTopic = new Map<string, Message[]>();
    for (const event of events) {
      const topic = harness.names.source[streamOf(event)];
      // harness.encode gives the producer's whole message (a tombstone's version header too).
      const message = { ...(await harness.encode(event)), ...(partition === undefined ? {} : { partition }) };
      byTopic.set(topic, [...(byTopic.get(topic) ?? []), message as Message]);
    }
    const transaction = await producer.transaction();
    try {
      for (const [topic, messages] of byTopic) await transaction.send({ topic, acks: -1, messages });
    } catch (error) {
      await transaction.abort();
      throw error;
    }
    if (commit) await transaction.commit();
    else await transaction.abort();
  }

  /** The stream's committed log in transactions of 3 to 20 records, about every other one preceded by an aborted one. */
  async function publishTransactionally(events: readonly ProjectorEvent[]): Promise<void> {
    for (let start = 0; start < events.length; ) {
      const size = 3 + Math.floor(random() * 18);
      const chunk = events.slice(start, start + size);
      start += size;
      if (random() < 0.5) await send(aborted(chunk.slice(0, 4)), false);
      await send(chunk, true);
    }
    // Partition 1 ends with an aborted transaction, placed there: an agent nobody registers, an outcome
    // or an escalation nobody committed.
    const [first] = events;
    if (first?.kind === "registry-snapshot" || first?.kind === "registry-tombstone")
      await send([snapshot(agentId("dom", 999), { registry_version: 1 })], false, 1);
    else if (first) await send(aborted([first]), false, 1);
  }

  async function lagMetrics(): Promise<number[]> {
    const text = await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text();
    return text
      .split("\n")
      .filter((line) => line.startsWith("agp_consumer_lag{"))
      .map((line) => Number(line.slice(line.lastIndexOf(" ") + 1)));
  }

  /**
   * The registry topic as the reader reads it, checked against what was committed: no position read
   * twice, no record that no committed transaction holds (an aborted one, a ghost of an open one), and
   * every committed record. A record may be in the log more than once at different offsets — a
   * producer's retry on a cluster that has just started can write a batch again, as at-least-once
   * producers do — and then it is read at each of them; what was read beyond the committed log is
   * printed, so a run says which.
   */
  async function readCommittedRegistry(): Promise<SourceRecord[]> {
    const read: SourceRecord[] = [];
    await readTopicsToEnd(
      harness.kafka,
      [harness.names.source["registry-mutation"]],
      (r) => read.push(r),
      READ_BOUND_MS,
    );
    const at = (record: SourceRecord) => `${record.partition}/${record.offset}`;
    expect(new Set(read.map(at)).size).toBe(read.length);
    const expected = new Map<string, number>();
    for (const event of log.registry) {
      const content = contentOf(await harness.encode(event));
      expected.set(content, (expected.get(content) ?? 0) + 1);
    }
    const contents = read.map(contentOf);
    const outside = read.filter((_, i) => !expected.has(contents[i] as string));
    expect(outside.map((record) => `${at(record)} ${String(record.key)}`)).toEqual([]);
    const seen = new Map<string, number>();
    const copies: SourceRecord[] = [];
    read.forEach((record, i) => {
      const content = contents[i] as string;
      const count = (seen.get(content) ?? 0) + 1;
      seen.set(content, count);
      if (count > (expected.get(content) ?? 0)) copies.push(record);
    });
    const missing = [...expected].filter(([content, count]) => (seen.get(content) ?? 0) < count);
    expect(missing.map(([content]) => content)).toEqual([]);
    if (copies.length > 0)
      console.log(
        `[txn] the registry log holds ${copies.length} committed record(s) more than once: ${copies
          .map((record) => `${at(record)} ${String(record.key)}`)
          .join(", ")}`,
      );
    return read;
  }

  /** Runs the CLI on this file's topics. */
  const cli = (args: string[], boundMs?: number) => runCli(harness.env, args, boundMs);

  beforeAll(async () => {
    harness = await Harness.create("txn", { CATCH_UP_HOLD_RECORDS: "1" });
    await harness.clearGraph();
    producer = harness.kafka.producer({
      transactionalId: `agp-test-${randomUUID()}`,
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
      // A cluster that has just started answers COORDINATOR_LOAD_IN_PROGRESS while it loads the
      // transaction state topic; kafkajs's default retries give up before that is over.
      retry: { retries: 15, initialRetryTime: 300, maxRetryTime: 5_000 },
    });
    await producer.connect();
  });
  afterAll(async () => {
    await producer?.disconnect();
    await harness?.close();
  });

  it("run applies exactly the committed records; aborted ones never reach the graph or the dead-letter topic", async () => {
    service = await harness.startProjector();
    await publishTransactionally(log.registry);
    await harness.waitForCaughtUp();
    // Outcomes: some transactions, some plain writes on the same partitions, as a migration would mix them.
    const half = Math.floor(log.outcomes.length / 2);
    await publishTransactionally(log.outcomes.slice(0, half));
    await harness.publish(log.outcomes.slice(half));
    await harness.waitForCaughtUp();
    await publishTransactionally(log.escalations);
    // A record no schema can read, once in a committed transaction and once in an aborted one.
    const poison = (key: string) => ({ key, value: Buffer.from("not avro") });
    const outcomeTopic = harness.names.source["outcome-created"];
    for (const [key, commit] of [
      ["poison-committed", true],
      ["poison-aborted", false],
    ] as const) {
      const transaction = await producer.transaction();
      await transaction.send({ topic: outcomeTopic, acks: -1, messages: [poison(key)] });
      await (commit ? transaction.commit() : transaction.abort());
    }
    await harness.waitForCaughtUp();
    expect(diffGraphs(referenceGraph(committed), await harness.dump())).toEqual([]);
    expect((await harness.deadLetters()).map((record) => record.key)).toEqual(["poison-committed"]);
  });

  it("lag reads 0 once everything is applied: the group's, the gauges', the instance's own and the catch-up hold's", async () => {
    const group = await fetchLag(harness.admin, harness.config.kafka.group, consumedTopics(harness.names));
    expect(group.filter((entry) => entry.lag !== 0)).toEqual([]);
    await sleep(2 * Number(harness.env.LAG_REFRESH_MS));
    const gauges = await lagMetrics();
    expect(gauges.length).toBeGreaterThanOrEqual(9);
    expect(gauges.filter((lag) => lag !== 0)).toEqual([]);
    // A hold with a threshold of one record: a marker counted as a record would hold outcomes back.
    const hold = createCatchUpHold(
      () => fetchLag(harness.admin, harness.config.kafka.group, consumedTopics(harness.names)),
      harness.names,
      { records: 1, seconds: 5 },
      createLogger("warn"),
    );
    await hold.start();
    hold.stop();
    expect(STREAMS.filter((stream) => hold.isHeld(stream))).toEqual([]);
    // What the service's hold takes, between broker checks, for a lower bound on the group's lag.
    expect(service.consumer.lagSeen()).toEqual({ "registry-mutation": 0, "outcome-created": 0, "escalation-edge": 0 });
  });

  it("the event-time judge is not held back by the transaction markers: every mark judged long before the max wait", async () => {
    // The registry watermark needs the group committed past each registry partition's end at a poll;
    // a commit or abort marker ends every partition here (partition 1 an abort), and the default
    // FINDINGS_MAX_WAIT_MS (10 min) would judge without the watermark only long after this bound.
    expect(Number(harness.env.FINDINGS_MAX_WAIT_MS ?? 600_000)).toBeGreaterThan(60_000);
    await until(
      "no escalation or registry change left unjudged",
      async () => {
        const [row] = await harness.graph().read(harness.config.neo4j.database, OLDEST_MARK);
        return row?.oldest === null || row?.oldest === undefined;
      },
      { timeoutMs: 30_000 },
    );
  });

  it("reconcile reads the registry to its end and finds no drift", async () => {
    await harness.stopProjectors();
    const result = await reconcileRegistry({
      reader: createTopicReader(harness.kafka, READ_BOUND_MS),
      topic: harness.names.source["registry-mutation"],
      decoder: createAvroDecoder(harness.registry),
      graph: harness.graph(),
      database: harness.config.neo4j.database,
      tenantId: "default",
      rules: RULES,
      repair: false,
    });
    expect(result.drift).toEqual([]);
    expect(result.agents).toBe(new Set(log.registry.map((event) => event.agent_id)).size);
  });

  it("dlq list reads the dead-letter topics to their end", async () => {
    const rows = await listDeadLetters(createTopicReader(harness.kafka, READ_BOUND_MS), harness.names);
    expect(rows.map((row) => row.key)).toEqual(["poison-committed"]);
  });

  it("a transaction still open when a read starts: the read ends before it, with the committed records", async () => {
    const topic = harness.names.source["registry-mutation"];
    const open = await producer.transaction();
    try {
      const ghosts = [0, 1, 2].map((partition) => snapshot(agentId("dom", 990 + partition), { registry_version: 1 }));
      const messages = await Promise.all(
        ghosts.map(async (event, partition) => ({ ...(await harness.encode(event)), partition }) as Message),
      );
      await open.send({ topic, acks: -1, messages });
      const read = await readCommittedRegistry();
      expect(read.filter((record) => String(record.key).includes("dom-agt-99"))).toEqual([]);
    } finally {
      await open.abort();
    }
  });

  it("rebuild --yes reads the committed registry records, and only those", async () => {
    await harness.driver.executeQuery("MATCH (:Agent)-[r:AUTHORIZED_FOR]->() WITH r LIMIT 3 DELETE r");
    const rebuilt = await rebuildRegistry({
      graph: harness.graph(),
      admin: createGroupAdmin(harness.admin),
      reader: createTopicReader(harness.kafka, READ_BOUND_MS),
      sink: harness.sink(),
      groupId: harness.config.kafka.group,
      topic: harness.names.source["registry-mutation"],
      decoder: createAvroDecoder(harness.registry),
      tenants: harness.config.tenants,
      shared: new Set(),
      rules: RULES,
    });
    expect(rebuilt.tenants.map((result) => result.records)).toEqual([(await readCommittedRegistry()).length]);
    expect(diffGraphs(referenceGraph(committed), await harness.dump())).toEqual([]);
  });

  it("the commands finish: reconcile, dlq list and rebuild --yes", { timeout: 240_000 }, async () => {
    const reconcile = await cli(["reconcile", "--json"]);
    expect(reconcile.code, reconcile.output).toBe(0);
    expect(JSON.parse(reconcile.stdout)).toMatchObject({ tenants: [{ tenant: "default", drift: [] }] });
    const dlq = await cli(["dlq", "list", "--json"]);
    expect(dlq.code, dlq.output).toBe(0);
    expect((JSON.parse(dlq.stdout) as { key: string }[]).map((row) => row.key)).toEqual(["poison-committed"]);
    const rebuild = await cli(["rebuild", "--yes", "--json"]);
    expect(rebuild.code, rebuild.output).toBe(0);
    expect(JSON.parse(rebuild.stdout)).toMatchObject({
      tenants: [{ tenant: "default", records: (await readCommittedRegistry()).length }],
    });
    expect(diffGraphs(referenceGraph(committed), await harness.dump())).toEqual([]);
  });

  it("replay to the earliest offsets re-applies the committed records, and lag reads 0 again", async () => {
    await replayTopics(
      createGroupAdmin(harness.admin),
      harness.config.kafka.group,
      Object.values(harness.names.source),
      { earliest: true },
      false,
    );
    await harness.clearGraph();
    service = await harness.startProjector();
    await harness.waitForCaughtUp();
    expect(diffGraphs(referenceGraph(committed), await harness.dump())).toEqual([]);
    expect(service.consumer.lagSeen()).toEqual({ "registry-mutation": 0, "outcome-created": 0, "escalation-edge": 0 });
    await harness.stopProjectors();
  });
});
