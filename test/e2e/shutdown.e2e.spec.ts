import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchPositions } from "../../src/adapters/kafka/group-admin.js";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { diffGraphs } from "../../src/model/graph.js";
import { generateEventLog, SMALL_WORKLOAD } from "../../workload/generate.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";

/** A `run` process whose JSON log lines are kept and can be waited for. */
interface RunProcess {
  readonly child: ChildProcess;
  readonly lines: { level: number; msg: string; [field: string]: unknown }[];
  waitFor(message: string, timeoutMs?: number): Promise<void>;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

/** Every `run` this file started: one a failed assertion left running is killed after the file. */
const started = new Set<ChildProcess>();

function startRun(env: Record<string, string>): RunProcess {
  const child = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
    env: { ...process.env, ...env, LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.add(child);
  child.on("close", () => started.delete(child));
  const lines: RunProcess["lines"] = [];
  const waiters: { message: string; resolve: () => void }[] = [];
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    try {
      const entry = JSON.parse(line) as RunProcess["lines"][number];
      lines.push(entry);
      for (const waiter of waiters.filter((w) => w.message === entry.msg)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    } catch {
      lines.push({ level: 60, msg: `not JSON: ${line}` });
    }
  });
  let stderr = "";
  child.stderr?.on("data", (chunk) => (stderr += chunk));
  const killer = setTimeout(() => child.kill("SIGKILL"), 180_000);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on("close", (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, stderr });
    }),
  );
  return {
    child,
    lines,
    exit,
    waitFor(message, timeoutMs = 60_000) {
      if (lines.some((entry) => entry.msg === message)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `no "${message}" within ${timeoutMs} ms; log: ${JSON.stringify(lines.slice(-5))}; stderr: ${stderr.slice(-2000)}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          message,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
  };
}

/** SIGTERM, then the exit: code 0, nothing on stderr, no line at error level (50) or above. */
async function expectCleanStop(run: RunProcess): Promise<void> {
  run.child.kill("SIGTERM");
  const { code, signal, stderr } = await run.exit;
  const errors = run.lines.filter((entry) => entry.level >= 50);
  expect(errors, JSON.stringify(errors)).toEqual([]);
  expect(stderr).toBe("");
  expect({ code, signal }).toEqual({ code: 0, signal: null });
}

/**
 * `run` as a rolling restart meets it: SIGTERM during start-up, while the catch-up hold pauses a
 * backlog, in the middle of applying one, and while the group rebalances. Each stop ends with exit
 * code 0 and no error in the log, offsets are never ahead of the graph, and a later instance finishes
 * the backlog into the graph the log describes.
 */
describe("SIGTERM at any moment ends `run` cleanly", () => {
  const log = generateEventLog(23, { ...SMALL_WORKLOAD, agents: 150, outcomes: 1500, escalations: 600 });
  const events = [...log.registry, ...log.outcomes, ...log.escalations];
  const harnesses: Harness[] = [];

  async function backlog(prefix: string): Promise<Harness> {
    const harness = await Harness.create(prefix, { CATCH_UP_HOLD_RECORDS: "100", BATCH_MAX_RECORDS: "50" });
    harnesses.push(harness);
    await harness.clearGraph();
    await harness.publish(events);
    return harness;
  }

  /** A later instance takes the backlog to its end: nothing the stopped one left is lost. */
  async function finishes(harness: Harness): Promise<void> {
    await harness.startProjector();
    await harness.waitForCaughtUp();
    expect(diffGraphs(referenceGraph(events), await harness.dump())).toEqual([]);
    await harness.stopProjectors();
  }

  beforeAll(() => {
    expect(log.registry.length).toBeGreaterThan(100);
  });
  afterAll(async () => {
    for (const child of started) child.kill("SIGKILL");
    for (const harness of harnesses) await harness.close();
  });

  it("during start-up", async () => {
    const harness = await backlog("stop-startup");
    const run = startRun(harness.env);
    await run.waitFor("constraints in place");
    await expectCleanStop(run);
    expect(run.lines.map((entry) => entry.msg)).toContain("stopped during start-up");
    await finishes(harness);
  });

  it("while the catch-up hold pauses outcomes and escalations", async () => {
    const harness = await backlog("stop-hold");
    const run = startRun(harness.env);
    await run.waitFor("partition paused: an upstream stream is catching up");
    await expectCleanStop(run);
    await finishes(harness);
  });

  it("in the middle of applying a backlog: the batch in flight is committed, offsets never ahead of the graph", async () => {
    const harness = await backlog("stop-midbatch");
    const run = startRun(harness.env);
    await run.waitFor("projector running");
    const outcomes = async () =>
      Number(
        (
          await harness.driver.executeQuery(
            "MATCH (o:Outcome) RETURN count(o) AS n",
            {},
            {
              database: harness.config.neo4j.database,
            },
          )
        ).records[0]?.get("n"),
      );
    const deadline = Date.now() + 90_000;
    while ((await outcomes()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await outcomes()).toBeGreaterThan(0);
    await expectCleanStop(run);

    // Every outcome record below the committed offsets is in the graph, and nothing past them is.
    const topic = harness.names.source["outcome-created"];
    const committed = new Map(
      (await fetchPositions(harness.admin, harness.config.kafka.group, [topic])).map((p) => [
        p.partition,
        BigInt(p.committed),
      ]),
    );
    const below = new Set<string>();
    await readTopicsToEnd(harness.kafka, [topic], (record) => {
      if (BigInt(record.offset) < (committed.get(record.partition) ?? -1n)) below.add(String(record.key));
    });
    const inGraph = (
      await harness.driver.executeQuery(
        "MATCH (o:Outcome) RETURN o.outcome_id AS id",
        {},
        {
          database: harness.config.neo4j.database,
        },
      )
    ).records.map((record) => String(record.get("id")));
    expect(below.size).toBeGreaterThan(0);
    expect(new Set(inGraph)).toEqual(below);
    await finishes(harness);
  });

  it("while the group rebalances: one instance leaves as another joins", async () => {
    const harness = await backlog("stop-rebalance");
    const first = startRun(harness.env);
    await first.waitFor("projector running");
    const second = startRun({ ...harness.env, METRICS_PORT: "0" });
    await second.waitFor("constraints in place");
    await expectCleanStop(first);
    await second.waitFor("projector running");
    await expectCleanStop(second);
    await finishes(harness);
  });
});
