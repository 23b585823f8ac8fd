import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import neo4j from "neo4j-driver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchLag } from "../../src/adapters/kafka/group-admin.js";
import { readerSchema } from "../../src/model/schemas.js";
import { outcome, snapshot } from "../support/builders.js";
import { Harness } from "../support/harness.js";

const PARTITIONS = 6;
const OUTCOMES = 480;
const WAITING = 120;
const AGENTS = 40;
const LATE_AGENTS = 10;
const ATTACHMENT_BYTES = 900 * 1024;
/** As the image runs it (Dockerfile: NODE_OPTIONS, NODE_ENV). */
const IMAGE_NODE_OPTIONS = "--max-old-space-size=384 --max-semi-space-size=16";
const MIB = 1024 * 1024;

/** Kilobytes of a /proc/<pid>/status field (VmRSS now, VmHWM the peak so far). */
function procStatusKb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${field}:`));
  return Number(line?.replace(/\D+/g, "") ?? Number.NaN);
}

/**
 * The memory bound of docs (configuration, "Memory"), for the configuration this test runs: what the
 * process may hold beyond its resident set before it consumes, while it applies large records:
 * - fetched records not yet applied (outside V8's heap): a partition being applied holds one fetched
 *   batch, at most FETCH_MAX_BYTES_PER_PARTITION or one record batch if that is larger, and a lane per
 *   assigned partition of the topics carrying the large records (the outcome stream and its retry topic);
 * - the copies of deferred records being handed to the retry topic: one request of at most the topic's
 *   max.message.bytes per transaction in flight (NEO4J_MAX_CONCURRENT_WRITES), the record and its gzip form;
 * - V8's young generation (three semi-spaces, --max-semi-space-size);
 * - buffers already released that V8 has not yet collected: it collects once external memory has grown
 *   by its soft limit (64 MiB) since the last collection.
 */
function budgetBytes(config: {
  lanes: number;
  fetchMaxBytesPerPartition: number;
  largestRecordBatch: number;
  maxConcurrentWrites: number;
  maxMessageBytes: number;
  semiSpaceMiB: number;
}): number {
  const fetched = config.lanes * Math.max(config.fetchMaxBytesPerPartition, config.largestRecordBatch);
  const handedOn = config.maxConcurrentWrites * 2 * config.maxMessageBytes;
  const young = 3 * config.semiSpaceMiB * MIB;
  const uncollected = 64 * MIB;
  return fetched + handedOn + young + uncollected;
}

/**
 * Issue 56 item 6, the shape that was tried by hand: 480 outcomes of ~900 KB (a producer's newer
 * schema carries an `attachment` our reader schema drops), 120 of them for agents that arrive later,
 * on six partitions, consumed by `run` as the image runs it. Everything is applied, and the process's
 * peak resident set stays within its idle one plus the bound its configuration sets.
 */
describe("memory stays bounded by configuration under large records", () => {
  let harness: Harness;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    harness = await Harness.create("membound", { TOPIC_PARTITIONS: String(PARTITIONS) });
    await harness.clearGraph();
  });
  afterAll(async () => {
    child?.kill("SIGKILL");
    await harness?.close();
  });

  /** Our encoding of the event, with the writer schema's extra `attachment` (bytes) appended. */
  async function encoderWithAttachment(): Promise<(event: ReturnType<typeof outcome>) => Promise<Buffer>> {
    const schema = readerSchema("outcome-created");
    const writer = { ...schema, fields: [...(schema.fields as object[]), { name: "attachment", type: "bytes" }] };
    const id = await harness.registerVersion("outcome-created", writer);
    return async (event) => {
      const ours = (await harness.encode(event)).value as Buffer;
      const frame = Buffer.alloc(5);
      frame.writeInt32BE(id, 1);
      const length: number[] = [];
      for (let n = ATTACHMENT_BYTES * 2; ; n >>>= 7) {
        if (n < 0x80) {
          length.push(n);
          break;
        }
        length.push((n & 0x7f) | 0x80);
      }
      // Random bytes: compression gains nothing, on the wire or in the retry copies.
      return Buffer.concat([frame, ours.subarray(5), Buffer.from(length), randomBytes(ATTACHMENT_BYTES)]);
    };
  }

  const produced = async () =>
    neo4j.integer.toNumber(
      (
        await harness.driver.executeQuery(
          "MATCH (:Agent)-[:PRODUCED]->(o:Outcome) WHERE o.outcome_id STARTS WITH 'mem-' RETURN count(o) AS n",
          {},
          { database: harness.config.neo4j.database },
        )
      ).records[0]?.get("n"),
    );
  async function eventually(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (child?.exitCode !== null) throw new Error(`run exited (${child?.exitCode}) while waiting for ${what}`);
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  it("480 outcomes of 900 KB, 120 waiting for their agent, six partitions: all applied, peak RSS within the bound", async () => {
    const agent = (n: number) => `mem-agt-${String(n).padStart(3, "0")}`;
    await harness.publish(Array.from({ length: AGENTS }, (_, n) => snapshot(agent(n))));
    const encode = await encoderWithAttachment();
    const outcomeTopic = harness.names.source["outcome-created"];
    // The last WAITING outcomes name the LATE_AGENTS, whose snapshots come once the service runs.
    const records = await Promise.all(
      Array.from({ length: OUTCOMES }, async (_, n) => {
        const waiting = n >= OUTCOMES - WAITING;
        const id = `mem-${String(n).padStart(4, "0")}`;
        const owner = waiting ? agent(AGENTS + (n % LATE_AGENTS)) : agent(n % AGENTS);
        return { key: id, value: await encode(outcome(id, owner)), partition: n % PARTITIONS };
      }),
    );
    // One record per request (the topic takes 1 MB), a request per partition at a time.
    await Promise.all(
      Array.from({ length: PARTITIONS }, async (_, p) => {
        for (const record of records.filter((r) => r.partition === p)) await harness.sendRaw(outcomeTopic, [record]);
      }),
    );

    const started = Date.now();
    const run = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
      env: {
        ...process.env,
        ...harness.env,
        LOG_LEVEL: "info",
        NODE_ENV: "production",
        NODE_OPTIONS: IMAGE_NODE_OPTIONS,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = run;
    let stderr = "";
    run.stderr?.on("data", (chunk) => (stderr += chunk));
    const pid = run.pid as number;
    const idle = await new Promise<number>((resolve, reject) => {
      run.on("close", (code) => reject(new Error(`run exited (${code}) before it ran: ${stderr.slice(-2000)}`)));
      createInterface({ input: run.stdout as NodeJS.ReadableStream }).on("line", (line) => {
        if (line.includes('"msg":"constraints in place"')) resolve(procStatusKb(pid, "VmRSS") * 1024);
      });
    });

    // Every source record handled: applied, or (the WAITING ones) deferred to the retry topic.
    const sourceDone = async () =>
      (await fetchLag(harness.admin, harness.config.kafka.group, [outcomeTopic])).every((p) => p.lag === 0);
    await eventually(
      "the source outcomes applied or deferred",
      async () => (await produced()) >= OUTCOMES - WAITING && (await sourceDone()),
      60_000,
    );
    await harness.publish(Array.from({ length: LATE_AGENTS }, (_, n) => snapshot(agent(AGENTS + n))));
    await eventually("every outcome", async () => (await produced()) === OUTCOMES, 60_000);
    const seconds = (Date.now() - started) / 1000;
    const peak = procStatusKb(pid, "VmHWM") * 1024;

    // Partitions of the outcome stream and its retry topic (all assigned here: one instance).
    const budget = budgetBytes({
      lanes: 2 * PARTITIONS,
      fetchMaxBytesPerPartition: harness.config.kafka.fetchMaxBytesPerPartition,
      largestRecordBatch: ATTACHMENT_BYTES + 4096,
      maxConcurrentWrites: harness.config.neo4j.maxConcurrentWrites,
      maxMessageBytes: 1_048_588,
      semiSpaceMiB: 16,
    });
    console.log(
      `memory bound: ${OUTCOMES} outcomes applied in ${seconds.toFixed(1)} s; idle RSS ${(idle / MIB).toFixed(0)} MiB, ` +
        `peak ${(peak / MIB).toFixed(0)} MiB, bound ${((idle + budget) / MIB).toFixed(0)} MiB (idle + ${(budget / MIB).toFixed(0)} MiB)`,
    );
    expect(peak).toBeLessThanOrEqual(idle + budget);
    // The deferred outcomes did go through the retry topic.
    const retried = await harness.admin.fetchTopicOffsets(harness.names.retry["outcome-created"]);
    expect(retried.reduce((sum, p) => sum + Number(p.high), 0)).toBeGreaterThanOrEqual(WAITING);
  }, 150_000);
});
