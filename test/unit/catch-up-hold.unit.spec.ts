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
        { topic: names.source["registry-mutation"], partition: 0, lag: registryLag },
        { topic: names.source["outcome-created"], partition: 0, lag: 0 },
      ];
    };
    const time = fakeTime();
    const hold = createCatchUpHold(lag, names, 100, quiet, { clock: time.clock, sleep: time.sleep });
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
      100,
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
      0,
      quiet,
      time,
    );
    await off.start();
    expect(asked).toBe(0);
  });
});
