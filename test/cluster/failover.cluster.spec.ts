import { afterAll, describe, expect, it } from "vitest";
import type { ProjectorEvent } from "../../src/model/events.js";
import { consumedTopics } from "../../src/topics.js";
import { stackDown, stackKafkaQuorum, stackStatus, stackUp } from "../../stack/api.js";
import {
  CAN_RESTART_SERVERS,
  Fleet,
  hotWorkload,
  Publisher,
  sleep,
  verify,
  type Workload,
  waitForCaughtUp,
} from "../faults/support.js";
import { Harness } from "../support/harness.js";
import { busiestLeader, StallMonitor, waitForFullIsr } from "./support.js";

/**
 * Leader failover under load on a three-node Kafka (STACK_KAFKA_BROKERS=3): two `agent-graph-projector
 * run` instances consume a generated workload (most outcomes on three hot agents) published at a
 * steady pace to 6-partition topics replicated three times (min.insync.replicas 2), while a broker is
 * killed, every broker is rolled, or the active controller is stopped. Afterwards the graph must equal
 * the reference model, with no duplicate relationship, exact observed_count and declared, and nothing
 * dead-lettered (test/faults/support.ts verify). Each event's stall is measured from committed offsets:
 * the longest time one partition with records waiting committed nothing, and the longest time the
 * whole group committed nothing.
 */

const env = { ...process.env, STACK_KAFKA_BROKERS: process.env.STACK_KAFKA_BROKERS ?? "3" };
const log = (line: string) => console.log(`[cluster] ${line}`);
const summaries: string[] = [];

interface Event {
  readonly name: string;
  readonly at: number;
  end?: number;
}

interface Context {
  readonly harness: Harness;
  readonly fleet: Fleet;
  readonly workload: Workload;
  /** Marks the start of a fault; its stall is measured from here to the next event (or the catch-up). */
  event(name: string): Event;
}

/** Every topic whose partitions must be fully replicated again before the next event. */
function replicatedTopics(harness: Harness): string[] {
  const n = harness.names;
  return [...Object.values(n.source), ...Object.values(n.retry), ...Object.values(n.deadLetter), "__consumer_offsets"];
}

async function nodePid(unit: string): Promise<number> {
  const status = await stackStatus({ env, services: ["kafka"] });
  const pid = status.servers.find((s) => s.unit === unit)?.pid;
  if (pid === undefined) throw new Error(`${unit} is not running`);
  return pid;
}

/** Brings every node back (a no-op when all run) and waits for full ISRs: a clean cluster for the next test. */
async function restoreCluster(harness: Harness): Promise<number> {
  const t0 = Date.now();
  await stackUp({ env, services: ["kafka"] });
  await waitForFullIsr(harness.admin, replicatedTopics(harness), 180_000);
  return Date.now() - t0;
}

async function scenario(
  name: string,
  options: { seed: number; pace: { chunk: number; intervalMs: number } },
  inject: (ctx: Context) => Promise<void>,
): Promise<{ event: string; partitionMs: number; groupMs: number }[]> {
  const started = Date.now();
  const harness = await Harness.create(`cluster-${name}`, {
    TOPIC_PARTITIONS: "6",
    BATCH_MAX_RECORDS: "50",
    RETRY_BACKOFF_MS: "100",
    RETRY_BACKOFF_MAX_MS: "1000",
    RETRY_MAX_ATTEMPTS: "1000",
  });
  const fleet = new Fleet(harness.env);
  const monitor = new StallMonitor(harness.admin, harness.config.kafka.group, consumedTopics(harness.names));
  const events: Event[] = [];
  let watchdog: ReturnType<Fleet["watchdog"]> | undefined;
  try {
    await harness.clearGraph();
    const workload = hotWorkload(options.seed);
    await fleet.add(2);
    // Producers ride out leader elections too: a chunk whose send failed is sent again (a duplicate
    // is a redelivery, which the projector absorbs); only the test's publisher needs this.
    const publishing = {
      async publish(batch: readonly ProjectorEvent[]) {
        for (let attempt = 1; ; attempt++) {
          try {
            return await harness.publish(batch);
          } catch (error) {
            if (attempt >= 10) throw error;
            await sleep(1000);
          }
        }
      },
    } as unknown as Harness;
    const publisher = new Publisher(publishing, workload, options.pace);
    watchdog = fleet.watchdog();
    await inject({
      harness,
      fleet,
      workload,
      event(eventName) {
        const previous = events.at(-1);
        if (previous && previous.end === undefined) previous.end = Date.now();
        const event: Event = { name: eventName, at: Date.now() };
        events.push(event);
        log(`${name}: ${eventName}`);
        return event;
      },
    });
    await publisher.flush();
    await waitForCaughtUp(harness, fleet, 300_000);
    const caughtUp = Date.now();
    watchdog.rethrow();
    await monitor.stop();
    const stalls = events.map((event) => {
      const s = monitor.stalls(event.at, event.end ?? caughtUp);
      return { event: event.name, ...s };
    });
    const verified = await verify(harness, workload.all);
    const line =
      `${name}: ${stalls.map((s) => `${s.event} → partition stall ${(s.partitionMs / 1000).toFixed(1)}s (${s.partition}), group stall ${(s.groupMs / 1000).toFixed(1)}s`).join("; ")}; ` +
      `verified ${verified.records} records (${verified.nodes} nodes, ${verified.relationships} relationships equal to the reference model), ` +
      `${fleet.warnings()} warnings logged; ${((Date.now() - started) / 1000).toFixed(1)}s`;
    log(line);
    summaries.push(line);
    return stalls;
  } finally {
    watchdog?.stop();
    await monitor.stop();
    await fleet.stopAll();
    fleet.saveLogs(`cluster-${name}`);
    await restoreCluster(harness).catch((error) => log(`restoring the cluster failed: ${error}`));
    await harness.close();
  }
}

describe.skipIf(!CAN_RESTART_SERVERS)("Kafka cluster failover under load (3 nodes, 2 projector instances)", () => {
  const suiteStarted = Date.now();
  afterAll(() => {
    log(`${summaries.length} scenario(s) in ${((Date.now() - suiteStarted) / 1000).toFixed(1)}s`);
  });

  it("the cluster under test has three brokers and replicates the test topics three times", async () => {
    const harness = await Harness.create("cluster-shape", { TOPIC_PARTITIONS: "6" });
    try {
      const { brokers } = await harness.admin.describeCluster();
      expect(brokers).toHaveLength(3);
      const { topics } = await harness.admin.fetchTopicMetadata({ topics: Object.values(harness.names.source) });
      for (const topic of topics) for (const p of topic.partitions) expect(p.replicas).toHaveLength(3);
    } finally {
      await harness.close();
    }
  });

  it("kill -9 of the broker leading the busiest partitions, mid-run", async () => {
    const stalls = await scenario(
      "kill-leader",
      { seed: 701, pace: { chunk: 6, intervalMs: 300 } },
      async ({ harness, event }) => {
        await sleep(8_000);
        const { nodeId, leads } = await busiestLeader(
          harness.admin,
          [harness.names.source["outcome-created"], harness.names.source["escalation-edge"]],
          3,
        );
        const pid = await nodePid(`kafka-${nodeId}`);
        event(`kill -9 kafka-${nodeId} (leader of ${leads.join(", ")})`);
        process.kill(pid, "SIGKILL");
        // The run goes on with two brokers for a while, then the node comes back and catches up.
        await sleep(25_000);
        const back = event(`kafka-${nodeId} restarted`);
        await restoreCluster(harness);
        log(`kafka-${nodeId} back with full ISRs after ${((Date.now() - back.at) / 1000).toFixed(1)}s`);
      },
    );
    expect(stalls.length).toBe(2);
  });

  it("rolling restart of all three brokers (clean stop, start, wait for the in-sync replicas)", async () => {
    const stalls = await scenario(
      "rolling-restart",
      { seed: 702, pace: { chunk: 3, intervalMs: 400 } },
      async ({ harness, event }) => {
        await sleep(5_000);
        for (const n of [1, 2, 3]) {
          event(`kafka-${n} rolled`);
          await stackDown({ env, services: ["kafka"], units: [`kafka-${n}`] });
          const isr = await restoreCluster(harness);
          log(`kafka-${n} back with full ISRs in ${(isr / 1000).toFixed(1)}s`);
        }
        event("after the roll");
      },
    );
    expect(stalls.length).toBe(4);
  });

  it("the active controller stops; the quorum elects another", async () => {
    const stalls = await scenario(
      "controller-stop",
      { seed: 703, pace: { chunk: 6, intervalMs: 300 } },
      async ({ harness, event }) => {
        await sleep(6_000);
        const before = await stackKafkaQuorum({ env });
        event(`active controller kafka-${before.leaderId} stopped`);
        await stackDown({ env, services: ["kafka"], units: [`kafka-${before.leaderId}`] });
        // The remaining two elect a new leader; asking may fail while that happens.
        let after = before;
        const deadline = Date.now() + 120_000;
        while (after.leaderId === before.leaderId || after.leaderId < 0) {
          if (Date.now() > deadline) throw new Error(`no new active controller within 120 s (was ${before.leaderId})`);
          after = await stackKafkaQuorum({ env }).catch(() => before);
        }
        expect(after.leaderId).not.toBe(before.leaderId);
        log(`controller moved from node ${before.leaderId} to node ${after.leaderId} (epoch ${after.leaderEpoch})`);
        await sleep(10_000);
        event(`kafka-${before.leaderId} restarted`);
        await restoreCluster(harness);
      },
    );
    expect(stalls.length).toBe(2);
  });
});
