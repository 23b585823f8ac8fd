import type { Consumer } from "kafkajs";
import { describe, expect, it } from "vitest";
import { createPartitionPauses } from "../../src/adapters/kafka/partition-pauses.js";
import type { ConsumerMetrics } from "../../src/ports.js";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };

function pausesWithLog() {
  const infos: string[] = [];
  const paused = new Map<string, string | undefined>();
  const pauses = createPartitionPauses({
    consumer: {} as Consumer,
    metrics: {
      setPaused: (topic: string, partition: number, reason?: string) => paused.set(`${topic}/${partition}`, reason),
    } as unknown as ConsumerMetrics,
    logger: { ...quiet, info: (_fields: unknown, message: string) => infos.push(message) },
    onPaused() {},
  });
  return { pauses, infos, paused };
}

describe("partition pauses of the catch-up hold", () => {
  it("resume, as the hold admits later records, only the partitions whose first held record is now admitted", () => {
    const { pauses } = pausesWithLog();
    const resumed: string[] = [];
    const hold = (partition: number, from?: number) =>
      pauses.pauseUntil(
        "escalations",
        partition,
        () => resumed.push(`p${partition}`),
        60_000,
        "catch-up-hold",
        "escalation-edge",
        from,
      );
    hold(0, 1000);
    hold(1, 3000);
    hold(2);
    pauses.releaseHeld(["outcome-created"], 5000);
    expect(resumed).toEqual([]);
    // Partition 2's first held record is not known: fetched again to find out.
    pauses.releaseHeld(["escalation-edge"], 2000);
    expect(resumed.sort()).toEqual(["p0", "p2"]);
    pauses.releaseHeld(["escalation-edge"], 2500);
    expect(resumed).toHaveLength(2);
    // The hold lifts: every partition it held resumes.
    pauses.releaseHeld(["escalation-edge"]);
    expect(resumed.sort()).toEqual(["p0", "p1", "p2"]);
    pauses.stop();
  });

  it("logs a partition's hold pause once per hold, not at every pause while the hold admits records", () => {
    const { pauses, infos } = pausesWithLog();
    const hold = () => pauses.pauseUntil("escalations", 0, () => {}, 60_000, "catch-up-hold", "escalation-edge", 1);
    hold();
    pauses.releaseHeld(["escalation-edge"], 2);
    hold();
    expect(infos).toEqual(["partition paused: an upstream stream is catching up"]);
    pauses.releaseHeld(["escalation-edge"]);
    hold();
    expect(infos).toHaveLength(2);
    pauses.stop();
  });

  it("ends a pause its owner cancels without resuming it, for a hold lifting later too", () => {
    const { pauses, paused } = pausesWithLog();
    const resumed: number[] = [];
    const cancel = pauses.pauseUntil(
      "escalations",
      3,
      () => resumed.push(3),
      60_000,
      "catch-up-hold",
      "escalation-edge",
      1,
    );
    expect(paused.get("escalations/3")).toBe("catch-up-hold");
    cancel();
    expect(paused.get("escalations/3")).toBeUndefined();
    pauses.releaseHeld(["escalation-edge"]);
    expect(resumed).toEqual([]);
    // Cancelling a pause that has already ended changes nothing.
    pauses.pauseUntil("escalations", 3, () => resumed.push(3), 60_000, "catch-up-hold", "escalation-edge", 1);
    pauses.releaseHeld(["escalation-edge"]);
    cancel();
    expect(resumed).toEqual([3]);
    pauses.stop();
  });
});
