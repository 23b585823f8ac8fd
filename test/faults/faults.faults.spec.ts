import { afterAll, describe, expect, it } from "vitest";
import { migrate } from "../../src/adapters/neo4j/migrate.js";
import { stackDown, stackUp } from "../../stack/api.js";
import { Harness } from "../support/harness.js";
import {
  CAN_RESTART_SERVERS,
  Fleet,
  holdAgentLock,
  holdOutcomes,
  hotWorkload,
  instanceMidBatch,
  Publisher,
  SCALE,
  sleep,
  verify,
  type Workload,
  waitForCaughtUp,
} from "./support.js";

/**
 * Fault injection: a generated workload whose outcomes mostly belong to three hot agents is published
 * at a steady pace to 6-partition topics and consumed by `agent-graph-projector run` processes while
 * faults are injected — SIGKILLed instances, a Neo4j restart, a broker restart, instances joining and
 * leaving the group, a lock held past the transaction timeout. Afterwards the graph must equal the
 * reference model exactly, with no duplicate relationship, observed_count matching the distinct
 * observed pairs and declared matching the registry's latest state. FAULTS_SCALE enlarges the
 * workload and the number of faults.
 */

interface Context {
  readonly harness: Harness;
  readonly fleet: Fleet;
  readonly publisher: Publisher;
  readonly workload: Workload;
  /** Counts of injected faults by kind; the summary line prints them. */
  readonly faults: Record<string, number>;
}

interface ScenarioOptions {
  readonly seed: number;
  readonly instances: number;
  readonly env?: Record<string, string>;
  readonly pace: { chunk: number; intervalMs: number };
  /** The workload's size; hotWorkload's own by default. */
  readonly size?: { outcomes: number; escalations: number };
  /**
   * The service's own transaction sizes (2,000 records caught up, 5,000 behind) instead of 50, which
   * the other scenarios set so that a small workload makes many transactions.
   */
  readonly defaultBatchSizes?: boolean;
}

const summaries: string[] = [];
const log = (line: string) => console.log(`[faults] ${line}`);

async function scenario(
  name: string,
  options: ScenarioOptions,
  inject: (ctx: Context) => Promise<void>,
): Promise<Record<string, number>> {
  const started = Date.now();
  const harness = await Harness.create(`faults-${name}`, {
    TOPIC_PARTITIONS: "6",
    ...(options.defaultBatchSizes ? {} : { BATCH_MAX_RECORDS: "50" }),
    RETRY_BACKOFF_MS: "100",
    RETRY_BACKOFF_MAX_MS: "1000",
    RETRY_MAX_ATTEMPTS: "1000",
    ...options.env,
  });
  const fleet = new Fleet(harness.env);
  const faults: Record<string, number> = {};
  let watchdog: ReturnType<Fleet["watchdog"]> | undefined;
  try {
    await harness.clearGraph();
    const workload = hotWorkload(options.seed, options.size);
    await fleet.add(options.instances);
    const publisher = new Publisher(harness, workload, options.pace);
    watchdog = fleet.watchdog();
    await inject({ harness, fleet, publisher, workload, faults });
    await publisher.flush();
    await waitForCaughtUp(harness, fleet, 240_000);
    watchdog.rethrow();
    const stats = await fleet.stats();
    const verified = await verify(harness, workload.all);
    const injected = Object.values(faults).reduce((sum, n) => sum + n, 0);
    const line =
      `${name}: ${injected} fault(s) injected ${JSON.stringify(faults)}; verified ${verified.records} records ` +
      `(${verified.nodes} nodes, ${verified.relationships} relationships equal to the reference model); ` +
      `${stats.txRetries} transaction retries, ${stats.pauses} partition pauses, ${stats.warnings} warnings logged; ` +
      `${((Date.now() - started) / 1000).toFixed(1)}s`;
    log(line);
    summaries.push(line);
    return { ...faults, ...stats };
  } finally {
    watchdog?.stop();
    await fleet.stopAll();
    fleet.saveLogs(name);
    await harness.close();
  }
}

/** Stops one server of the local stack and starts it again; returns how long it was unreachable (s). */
async function restartServer(service: "neo4j" | "kafka", downMs: number): Promise<number> {
  const stopped = Date.now();
  try {
    await stackDown({ services: [service] });
    await sleep(downMs);
  } finally {
    // Always brought back, also when the scenario fails: in CI this is the shared stack.
    await stackUp({ services: [service] });
  }
  const seconds = (Date.now() - stopped) / 1000;
  log(`${service} was down for ${seconds.toFixed(1)}s`);
  return seconds;
}

describe(`faults (scale ${SCALE})`, () => {
  const suiteStarted = Date.now();
  afterAll(() => {
    log(`${summaries.length} scenario(s) in ${((Date.now() - suiteStarted) / 1000).toFixed(1)}s`);
  });

  it("6 partitions × 3 instances on three hot agents: MERGEs contend on the same nodes", async () => {
    const stats = await scenario(
      "contention",
      { seed: 601, instances: 3, pace: { chunk: 40, intervalMs: 100 } },
      async () => {},
    );
    expect(stats).toBeDefined();
  });

  it("SIGKILL of instances in the middle of a batch, each restarted", async () => {
    const kills = 4 * SCALE;
    const faults = await scenario(
      "sigkill",
      { seed: 602, instances: 3, pace: { chunk: 8, intervalMs: 300 } },
      async ({ harness, fleet, faults }) => {
        // Kills come in pairs: the second victim is taken while the survivors still consume, before
        // the replacements join; each pair then costs one rebalance that waits for the dead members'
        // sessions to expire (30 s), instead of one per kill.
        for (let n = 0; n < kills; n += 2) {
          const replacements: Promise<unknown>[] = [];
          for (let k = 0; k < 2 && n + k < kills; k++) {
            const live = fleet.live();
            const pid = await instanceMidBatch(
              harness,
              live.map((instance) => instance.pid),
              45_000,
            );
            const victim = live.find((instance) => instance.pid === pid) ?? (live[0] as (typeof live)[0]);
            await fleet.retire(victim, "kill");
            const kind = pid === undefined ? "SIGKILL between batches" : "SIGKILL mid-batch";
            faults[kind] = (faults[kind] ?? 0) + 1;
            replacements.push(fleet.add(1));
          }
          await Promise.all(replacements);
        }
      },
    );
    expect(faults["SIGKILL mid-batch"] ?? 0).toBeGreaterThan(0);
  });

  it("SIGKILL in the middle of a backlog batch at the default sizes (a transaction of over 2,000 records)", async () => {
    const kills = 2 * SCALE;
    const faults = await scenario(
      "sigkill-backlog",
      {
        seed: 607,
        instances: 0,
        defaultBatchSizes: true,
        // Two partitions a topic, so that each holds a backlog several transactions deep. A fetch of
        // 4 MiB brings more than 2,000 records of a partition at once, which backlog batching splits
        // into transactions of up to 5,000: with 1 MiB (~1,800 outcomes), a transaction takes more than
        // 2,000 only when fetches queue behind busy write slots, which a loaded machine may not do.
        // The test creates the constraints itself (below), before it holds outcomes.
        env: {
          TOPIC_PARTITIONS: "2",
          FETCH_MAX_BYTES_PER_PARTITION: String(4 * 1024 * 1024),
          MIGRATE_ON_START: "false",
        },
        size: { outcomes: 12_000 * SCALE, escalations: 8_000 * SCALE },
        pace: { chunk: 100_000, intervalMs: 0 },
      },
      async ({ harness, fleet, publisher, workload, faults }) => {
        // A backlog transaction runs for a few hundred milliseconds, and a fast machine drains this log
        // in seconds: polled for, it was missed in one CI run of three. So some outcomes of the first
        // part of the log are held (uncommitted, by the test) until the kills are done, and the first
        // transaction of each outcome partition waits on one of them in flight, having written the rows
        // before it. The held ids lie within each partition's first 5,000 records, in its first batch.
        await migrate(harness.driver, [harness.config.neo4j.database]);
        const held = workload.outcomes.slice(600, 6_600).filter((_, n) => n % 300 === 0);
        const release = await holdOutcomes(
          harness,
          held.map((outcome) => outcome.outcome_id),
        );
        try {
          // The whole log is in the topics before anyone consumes: every partition starts behind.
          await publisher.flush();
          await fleet.add(2);
          for (let n = 0; n < kills; n++) {
            const live = fleet.live();
            const pid = await instanceMidBatch(
              harness,
              live.map((instance) => instance.pid),
              45_000,
              2_000,
            );
            if (pid === undefined) {
              faults["no backlog batch seen in flight"] = (faults["no backlog batch seen in flight"] ?? 0) + 1;
              break;
            }
            await fleet.retire(live.find((instance) => instance.pid === pid) as (typeof live)[0], "kill");
            faults["SIGKILL mid-backlog-batch"] = (faults["SIGKILL mid-backlog-batch"] ?? 0) + 1;
            await fleet.add(1);
          }
        } finally {
          await release();
        }
      },
    );
    // The fault must have hit a transaction larger than the caught-up cap, every time.
    expect(faults["SIGKILL mid-backlog-batch"] ?? 0).toBe(kills);
  });

  it("instances join and leave the group while it consumes (rebalances)", async () => {
    await scenario(
      "rebalance",
      { seed: 603, instances: 1, pace: { chunk: 12, intervalMs: 150 } },
      async ({ fleet, faults }) => {
        const steps = ["join", "join", "leave", "join", "leave", "leave", "join"];
        for (let round = 0; round < SCALE; round++) {
          for (const step of steps) {
            await sleep(1500);
            if (step === "join") await fleet.add(1);
            else await fleet.retire(fleet.live()[0] as NonNullable<ReturnType<Fleet["live"]>[0]>, "terminate");
            faults[step] = (faults[step] ?? 0) + 1;
          }
        }
      },
    );
  });

  it("a conflicting lock on a hot agent held past NEO4J_TX_TIMEOUT_MS: batches block and time out, then go through", async () => {
    const stats = await scenario(
      "lock",
      {
        seed: 604,
        instances: 3,
        env: { NEO4J_TX_TIMEOUT_MS: "2000" },
        pace: { chunk: 12, intervalMs: 150 },
      },
      async ({ harness, workload, faults }) => {
        const database = harness.config.neo4j.database;
        const deadline = Date.now() + 60_000;
        for (;;) {
          const { records } = await harness.driver.executeQuery(
            "MATCH (a:Agent) WHERE a.agent_id IN $ids AND a.registry_version IS NOT NULL RETURN count(a) AS n",
            { ids: workload.hotAgents },
            { database },
          );
          if (Number(records[0]?.get("n")) === workload.hotAgents.length) break;
          if (Date.now() > deadline) throw new Error("the hot agents were never projected");
          await sleep(200);
        }
        for (let n = 0; n < 3 * SCALE; n++) {
          await holdAgentLock(harness, workload.hotAgents[n % 3] as string, 5_000);
          faults["lock held 5s > 2s tx timeout"] = (faults["lock held 5s > 2s tx timeout"] ?? 0) + 1;
          await sleep(500);
        }
      },
    );
    // The fault must have bitten: some transaction waited on the lock, timed out and was retried.
    expect((stats.txRetries ?? 0) + (stats.pauses ?? 0)).toBeGreaterThan(0);
  });

  it.skipIf(!CAN_RESTART_SERVERS)("Neo4j restarts while the group consumes", async () => {
    await scenario(
      "neo4j-restart",
      { seed: 605, instances: 3, pace: { chunk: 12, intervalMs: 150 } },
      async ({ faults }) => {
        for (let n = 0; n < SCALE; n++) {
          await sleep(3_000);
          await restartServer("neo4j", 10_000);
          faults["neo4j restart"] = (faults["neo4j restart"] ?? 0) + 1;
        }
      },
    );
  });

  it.skipIf(!CAN_RESTART_SERVERS)("the Kafka broker restarts while the group consumes", async () => {
    await scenario(
      "kafka-restart",
      { seed: 606, instances: 3, pace: { chunk: 12, intervalMs: 150 } },
      async ({ publisher, faults }) => {
        for (let n = 0; n < SCALE; n++) {
          await sleep(3_000);
          await publisher.hold();
          try {
            await restartServer("kafka", 12_000);
          } finally {
            publisher.release();
          }
          faults["kafka restart"] = (faults["kafka restart"] ?? 0) + 1;
        }
      },
    );
  });
});
