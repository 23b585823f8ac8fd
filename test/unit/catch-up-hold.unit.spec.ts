import { setImmediate as flush } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import {
  createCatchUpHold,
  HOLDING_CHECK_MS,
  IDLE_CHECK_MS,
  type Sleep,
} from "../../src/adapters/kafka/catch-up-hold.js";
import type { PartitionLag } from "../../src/adapters/kafka/lag-monitor.js";
import type { Stream } from "../../src/topics.js";
import { shortTopicNames } from "../support/builders.js";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const LIMITS = { records: 100, seconds: 5 };

/** A clock the test moves, and a sleep that returns when the test says so (or rejects when aborted). */
function fakeTime() {
  let now = 0;
  const pauses: { ms: number; wake: () => void }[] = [];
  const sleep: Sleep = (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      pauses.push({ ms, wake: resolve });
      signal.addEventListener("abort", () => reject(new Error("aborted")));
    });
  return {
    clock: { now: () => now },
    sleep,
    pauses,
    /** Moves the clock to `at`, ends the pending pause and lets the check that follows run. */
    async wakeAt(at: number) {
      now = at;
      pauses.at(-1)?.wake();
      await flush();
      await flush();
    },
  };
}

describe("the catch-up hold, on a fake clock", () => {
  it("asks the broker at most once a second while its own lag keeps everything held, then lifts", async () => {
    const names = shortTopicNames();
    let registryLag = 500;
    let asked = 0;
    const lag = async (): Promise<PartitionLag[]> => {
      asked += 1;
      return [
        // A backlog written before the start: the end offset does not move while it drains.
        { topic: names.source["registry-mutation"], partition: 0, lag: registryLag, end: 500 },
        { topic: names.source["outcome-created"], partition: 0, lag: 0, end: 0 },
      ];
    };
    const time = fakeTime();
    const hold = createCatchUpHold(lag, names, LIMITS, quiet, { clock: time.clock, sleep: time.sleep });
    const lifted: Stream[][] = [];
    hold.onLifted((streams) => lifted.push(streams));
    let localRegistryLag = 500;
    hold.useLocalLag(() => ({ "registry-mutation": localRegistryLag, "outcome-created": 0, "escalation-edge": 0 }));

    await hold.start();
    expect(asked).toBe(1);
    expect(hold.isHeld("outcome-created")).toBe(true);
    expect(hold.isHeld("escalation-edge")).toBe(true);
    expect(hold.isHeld("registry-mutation")).toBe(false);
    expect(time.pauses.map((p) => p.ms)).toEqual([HOLDING_CHECK_MS]);

    // A quarter second on, this instance alone still sees the backlog: the broker is not asked.
    await time.wakeAt(250);
    expect(asked).toBe(1);
    // A commit upstream within the second: still answered locally.
    hold.committed("registry-mutation");
    await flush();
    expect(asked).toBe(1);

    // A second after the last answer (on the fake clock), the broker is asked again: still held.
    await time.wakeAt(1000);
    expect(asked).toBe(2);
    expect(hold.isHeld("outcome-created")).toBe(true);

    // Locally drained: the next check asks the broker even within the second, and the hold lifts.
    localRegistryLag = 0;
    registryLag = 0;
    await time.wakeAt(1250);
    expect(asked).toBe(3);
    expect(lifted.map((streams) => [...streams].sort())).toEqual([["escalation-edge", "outcome-created"]]);
    expect(hold.isHeld("outcome-created")).toBe(false);
    // Nothing held: the schedule slows down to once a second, and commits no longer trigger checks.
    expect(time.pauses.at(-1)?.ms).toBe(IDLE_CHECK_MS);
    hold.committed("registry-mutation");
    await flush();
    expect(asked).toBe(3);
    await time.wakeAt(2250);
    expect(asked).toBe(4);

    hold.stop();
    await time.wakeAt(3250);
    expect(asked).toBe(4);
  });

  it("a failed lag check holds nothing; a threshold of 0 never asks", async () => {
    const names = shortTopicNames();
    const time = fakeTime();
    const failing = createCatchUpHold(
      async () => {
        throw new Error("broker away");
      },
      names,
      LIMITS,
      quiet,
      time,
    );
    await failing.start();
    expect(failing.isHeld("outcome-created")).toBe(false);
    failing.stop();

    let asked = 0;
    const off = createCatchUpHold(
      async () => {
        asked += 1;
        return [];
      },
      names,
      { records: 0, seconds: 5 },
      quiet,
      time,
    );
    await off.start();
    expect(asked).toBe(0);
  });

  it("under steady load, outcomes hundreds of records behind but fresh, escalations flow after the first look", async () => {
    const names = shortTopicNames();
    // 3,000 outcomes a second, 600 always in flight: 0.2 s of lag, never under 100 records.
    const outcomesEnd = (at: number) => 10_000 + Math.floor((at * 3000) / 1000);
    const time = fakeTime();
    const lag = async (): Promise<PartitionLag[]> => [
      { topic: names.source["registry-mutation"], partition: 0, lag: 0, end: 50 },
      { topic: names.source["outcome-created"], partition: 0, lag: 600, end: outcomesEnd(time.clock.now()) },
    ];
    const hold = createCatchUpHold(lag, names, LIMITS, quiet, { clock: time.clock, sleep: time.sleep });
    const lifted: Stream[][] = [];
    hold.onLifted((streams) => lifted.push(streams));

    // The first look cannot tell records in flight from a backlog written before the start: held.
    await hold.start();
    expect(hold.isHeld("escalation-edge")).toBe(true);
    // A second on, the position is past what was the end at the first look: those 600 are in flight.
    const seen: boolean[] = [];
    for (let at = 250; at <= 20_000; at += time.pauses.at(-1)?.ms ?? IDLE_CHECK_MS) {
      await time.wakeAt(at);
      if (at >= 1000) seen.push(hold.isHeld("escalation-edge"));
    }
    expect(lifted).toEqual([["escalation-edge"]]);
    expect(seen.filter(Boolean)).toEqual([]);
    hold.stop();
  });

  it("a commit upstream asks the broker at once while part of what waits is in flight, whatever the local lag", async () => {
    const names = shortTopicNames();
    const time = fakeTime();
    let stalledLag = 200;
    let asked = 0;
    const lag = async (): Promise<PartitionLag[]> => {
      asked += 1;
      return [
        { topic: names.source["registry-mutation"], partition: 0, lag: 0, end: 50 },
        // Partition 0: 200 outcomes written before the start, stuck; partition 1: 1,000/s, 500 in flight.
        { topic: names.source["outcome-created"], partition: 0, lag: stalledLag, end: 1000 },
        { topic: names.source["outcome-created"], partition: 1, lag: 500, end: 1000 + time.clock.now() },
      ];
    };
    const hold = createCatchUpHold(lag, names, LIMITS, quiet, { clock: time.clock, sleep: time.sleep });
    const lifted: Stream[][] = [];
    hold.onLifted((streams) => lifted.push(streams));
    // This instance's own lag stays above the threshold: it counts the records in flight too.
    hold.useLocalLag(() => ({ "registry-mutation": 0, "outcome-created": 700, "escalation-edge": 0 }));

    await hold.start();
    await time.wakeAt(1000);
    expect(hold.isHeld("escalation-edge")).toBe(true);
    expect(asked).toBe(2);

    stalledLag = 0;
    hold.committed("outcome-created");
    await flush();
    await flush();
    expect(asked).toBe(3);
    expect(lifted).toEqual([["escalation-edge"]]);
    hold.stop();
  });

  it("while escalations are held behind a steady load, admits those written before the outcomes applied, and says when that moves", async () => {
    const names = shortTopicNames();
    // 1,000 outcomes a second, the group 8 s behind: past the 5 s window, so escalations are held.
    const outcomesEnd = (at: number) => 10_000 + at;
    const time = fakeTime();
    const lag = async (): Promise<PartitionLag[]> => [
      { topic: names.source["registry-mutation"], partition: 0, lag: 0, end: 50 },
      { topic: names.source["outcome-created"], partition: 0, lag: 8000, end: outcomesEnd(time.clock.now()) },
    ];
    const hold = createCatchUpHold(lag, names, LIMITS, quiet, { clock: time.clock, sleep: time.sleep });
    const advanced: [Stream, number][] = [];
    hold.onAdvanced((stream, before) => advanced.push([stream, before]));

    await hold.start();
    expect(hold.isHeld("escalation-edge")).toBe(true);
    // Nothing is known yet to be applied: nothing goes ahead.
    expect(hold.admitsBefore("escalation-edge")).toBe(Number.NEGATIVE_INFINITY);
    expect(hold.admitsBefore("registry-mutation")).toBe(Number.POSITIVE_INFINITY);
    for (let at = 1000; at <= 12_000; at += 1000) await time.wakeAt(at);
    // At 12 s the position is 10,000 + 4,000: the end the look at 4 s saw.
    expect(hold.isHeld("escalation-edge")).toBe(true);
    expect(hold.admitsBefore("escalation-edge")).toBe(4000);
    expect(advanced.at(-1)).toEqual(["escalation-edge", 4000]);
    expect(advanced.map(([, before]) => before)).toEqual([0, 1000, 2000, 3000, 4000]);
    hold.stop();
  });
});
