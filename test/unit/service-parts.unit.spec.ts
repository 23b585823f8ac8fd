import type { Admin } from "kafkajs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createHealth } from "../../src/adapters/http/health.js";
import { createLagMonitor, type PartitionLag } from "../../src/adapters/kafka/lag-monitor.js";
import { createLagGauges } from "../../src/adapters/metrics/lag-gauges.js";
import { withTimeout } from "../../src/ports.js";
import { DRIFT_KINDS } from "../../src/reconcile/drift.js";
import { reconcileAll } from "../../src/reconcile/schedule.js";
import { shortTopicNames } from "../support/builders.js";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const names = shortTopicNames();

describe("lag gauges", () => {
  it("set a series per owned partition, clear a drained retry partition's age, drop partitions no longer owned", () => {
    const calls: string[] = [];
    const gauges = createLagGauges(
      {
        setLag: (topic, partition, lag) => void calls.push(`lag ${topic}/${partition}=${lag}`),
        dropLag: (topic, partition) => void calls.push(`drop ${topic}/${partition}`),
        setOldestDeferred: (topic, partition, at) => void calls.push(`oldest ${topic}/${partition}=${at}`),
      },
      names,
      (() => {
        let owned = new Map([
          ["reg", [0, 1]],
          ["out.retry", [0]],
        ]);
        return () => {
          const now = owned;
          owned = new Map([["reg", [0]]]);
          return now;
        };
      })(),
    );
    const lags: PartitionLag[] = [
      { topic: "reg", partition: 0, lag: 5, end: 100 },
      { topic: "reg", partition: 1, lag: 0, end: 100 },
      { topic: "out.retry", partition: 0, lag: 0, end: 100 },
      { topic: "esc", partition: 0, lag: 9, end: 100 },
    ];
    gauges(lags);
    expect(calls).toEqual(["lag reg/0=5", "lag reg/1=0", "lag out.retry/0=0", "oldest out.retry/0=undefined"]);
    calls.length = 0;
    gauges(lags);
    expect(calls).toEqual([
      "lag reg/0=5",
      "drop reg/1",
      "oldest reg/1=undefined",
      "drop out.retry/0",
      "oldest out.retry/0=undefined",
    ]);
  });
});

describe("the lag monitor: one poller for the gauges and the catch-up hold", () => {
  afterEach(() => vi.useRealTimers());

  const admin = (requests: string[]) =>
    ({
      fetchOffsets: async ({ topics }: { topics: string[] }) => {
        requests.push("offsets");
        return topics.map((topic) => ({ topic, partitions: [{ partition: 0, offset: "2" }] }));
      },
      fetchTopicOffsets: async () => [{ partition: 0, high: "10", low: "0", offset: "10" }],
      fetchTopicMetadata: async () => ({ topics: [] }),
    }) as unknown as Admin;

  it("every listener hears each poll", async () => {
    const heard: number[] = [];
    const monitor = createLagMonitor(admin([]), "g", ["reg", "out"], quiet);
    monitor.onLag((lags) => heard.push(lags.reduce((sum, l) => sum + l.lag, 0)));
    expect(await monitor.poll()).toEqual([
      { topic: "reg", partition: 0, lag: 8, end: 10 },
      { topic: "out", partition: 0, lag: 8, end: 10 },
    ]);
    expect(heard).toEqual([16]);
  });

  it("stop waits for the poll in flight and refuses new ones, so the admin client is not closed under a request", async () => {
    let answer: () => void = () => {};
    const slow = {
      fetchOffsets: async ({ topics }: { topics: string[] }) => {
        await new Promise<void>((resolve) => {
          answer = resolve;
        });
        return topics.map((topic) => ({ topic, partitions: [{ partition: 0, offset: "2" }] }));
      },
      fetchTopicOffsets: async () => [{ partition: 0, high: "10", low: "0", offset: "10" }],
      fetchTopicMetadata: async () => ({ topics: [] }),
    } as unknown as Admin;
    const monitor = createLagMonitor(slow, "g", ["reg"], quiet);
    const polling = monitor.poll();
    await new Promise((resolve) => setTimeout(resolve, 10));
    let stopped = false;
    const stopping = monitor.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(stopped).toBe(false);
    answer();
    await stopping;
    expect(await polling).toHaveLength(1);
    await expect(monitor.poll()).rejects.toThrow(/stopped/);
  });

  it("the schedule polls only when nobody else has polled recently", async () => {
    vi.useFakeTimers();
    let now = 0;
    const requests: string[] = [];
    const monitor = createLagMonitor(admin(requests), "g", ["reg"], quiet, { now: () => now });
    monitor.start(10_000);
    now = 10_000;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(requests).toHaveLength(1);
    // The hold polled 2 s before the next tick: the tick leaves it at that.
    now = 18_000;
    await monitor.poll();
    now = 20_000;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(requests).toHaveLength(2);
    now = 30_000;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(requests).toHaveLength(3);
    monitor.stop();
  });
});

describe("scheduled reconciliation", () => {
  it("sets every drift kind per tenant, zero where none, and goes on past a failing tenant", async () => {
    const drift: string[] = [];
    await reconcileAll({
      tenants: [
        { tenantId: "a", database: "neo4j" },
        { tenantId: "b", database: "neo4j" },
      ] as never,
      async reconcile(route) {
        if (route.tenantId === "a") throw new Error("registry unavailable");
        return {
          agents: 2,
          unreadable: 0,
          repaired: 0,
          drift: [
            { agent_id: "x-agt-001", kind: "property", detail: "" },
            { agent_id: "x-agt-002", kind: "property", detail: "" },
          ] as never,
        };
      },
      setDrift: (tenant, kind, count) => void drift.push(`${tenant} ${kind} ${count}`),
      logger: quiet,
    });
    expect(drift).toEqual(DRIFT_KINDS.map((kind) => `b ${kind} ${kind === "property" ? 2 : 0}`));
  });
});

describe("health", () => {
  it("is ready only when joined and both Neo4j and the registry answer; live while the consumer progresses", async () => {
    let joined = false;
    const ready: boolean[] = [];
    const health = createHealth({
      clock: { now: () => 400_000 },
      consumer: { isJoined: () => joined, lastProgressAt: () => 100_000 },
      pingNeo4j: () => new Promise(() => {}),
      pingRegistry: async () => true,
      setReady: (value) => void ready.push(value),
      checkTimeoutMs: 10,
      wedgedAfterMs: 300_000,
    });
    await health.check();
    expect(await health.ready()).toEqual({ ok: false, detail: { joined: false, neo4j: false, registry: true } });
    const answering = createHealth({
      clock: { now: () => 400_000 },
      consumer: { isJoined: () => joined, lastProgressAt: () => 100_001 },
      pingNeo4j: async () => {},
      pingRegistry: async () => true,
      setReady: (value) => void ready.push(value),
      checkTimeoutMs: 10,
      wedgedAfterMs: 300_000,
    });
    joined = true;
    await answering.check();
    expect((await answering.ready()).ok).toBe(true);
    expect(ready).toEqual([false, true]);
    expect(health.live()).toEqual({ ok: false, detail: { consumerIdleSeconds: 300 } });
    expect(answering.live().ok).toBe(true);
  });
});

describe("withTimeout (start-up steps and health probes)", () => {
  it("gives the work's answer, or the caller's error once the time is up; a late failure goes nowhere", async () => {
    const late = () => new Error("too late");
    await expect(withTimeout(Promise.resolve(7), 50, late)).resolves.toBe(7);
    await expect(withTimeout(Promise.reject(new Error("refused")), 50, late)).rejects.toThrow("refused");
    let fail: (error: Error) => void = () => {};
    const slow = new Promise<number>((_, reject) => {
      fail = reject;
    });
    await expect(withTimeout(slow, 10, late)).rejects.toThrow("too late");
    const unhandled = vi.fn();
    process.on("unhandledRejection", unhandled);
    fail(new Error("after the deadline"));
    await new Promise((resolve) => setTimeout(resolve, 20));
    process.off("unhandledRejection", unhandled);
    expect(unhandled).not.toHaveBeenCalled();
  });
});
