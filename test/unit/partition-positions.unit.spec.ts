import { describe, expect, it } from "vitest";
import { createPartitionPositions, positionAfter } from "../../src/pipeline/partition-positions.js";

const fakeClock = (start: number) => {
  let now = start;
  return {
    now: () => now,
    set(at: number) {
      now = at;
    },
  };
};

describe("partition positions", () => {
  it("starts a partition's view at its first fetched record and keeps its commits across fetches", () => {
    const clock = fakeClock(100);
    const positions = createPartitionPositions(clock);
    positions.fetched("outcomes/0", "outcome-created", 50, 10);
    expect(positions.lagSeen()["outcome-created"]).toBe(40);
    positions.committed("outcomes/0", 30, 200);
    clock.set(300);
    // A later fetch brings a new high watermark but does not move the committed position back.
    positions.fetched("outcomes/0", "outcome-created", 60, 30);
    expect(positions.lagSeen()).toEqual({ "registry-mutation": 0, "outcome-created": 30, "escalation-edge": 0 });
    // Nor does it count as progress: the partition last progressed at its commit.
    expect(positions.lastProgressAt(1_000)).toBe(200);
  });

  it("sums the backlog per stream and never counts a partition ahead of its watermark as negative", () => {
    const positions = createPartitionPositions(fakeClock(0));
    positions.fetched("registry/0", "registry-mutation", 20, 5);
    positions.fetched("registry/1", "registry-mutation", 10, 7);
    positions.fetched("edges/0", "escalation-edge", 3, 8);
    expect(positions.lagSeen()).toEqual({ "registry-mutation": 18, "outcome-created": 0, "escalation-edge": 0 });
  });

  it("ignores a commit for a partition it no longer has in view (a rebalance cleared it meanwhile)", () => {
    const positions = createPartitionPositions(fakeClock(0));
    positions.fetched("outcomes/0", "outcome-created", 50, 10);
    positions.clear();
    positions.committed("outcomes/0", 50, 100);
    expect(positions.lagSeen()["outcome-created"]).toBe(0);
    expect(positions.lastProgressAt(700)).toBe(700);
  });

  it("moves past a skipped batch of transaction markers, never backwards", () => {
    const positions = createPartitionPositions(fakeClock(0));
    positions.skipped("outcomes/0", "outcome-created", 12, 11, 100);
    expect(positions.lagSeen()["outcome-created"]).toBe(0);
    positions.committed("outcomes/0", 20, 150);
    positions.skipped("outcomes/0", "outcome-created", 25, 14, 200);
    expect(positions.lagSeen()["outcome-created"]).toBe(5);
    expect(positions.lastProgressAt(1_000)).toBe(200);
  });

  it("takes a touch as progress for that partition, and a stream's touch for all of its partitions", () => {
    const clock = fakeClock(100);
    const positions = createPartitionPositions(clock);
    positions.fetched("outcomes/0", "outcome-created", 50, 10);
    positions.fetched("outcomes/1", "outcome-created", 50, 10);
    positions.fetched("registry/0", "registry-mutation", 50, 10);
    clock.set(500);
    positions.touch("outcomes/0");
    expect(positions.lastProgressAt(1_000)).toBe(100);
    positions.touchStream("outcome-created");
    expect(positions.lastProgressAt(1_000)).toBe(100);
    positions.touch("registry/0");
    expect(positions.lastProgressAt(1_000)).toBe(500);
  });

  it("does not invent a partition on a touch", () => {
    const positions = createPartitionPositions(fakeClock(100));
    positions.touch("outcomes/0");
    positions.touchStream("outcome-created");
    expect(positions.lagSeen()["outcome-created"]).toBe(0);
    expect(positions.lastProgressAt(900)).toBe(900);
  });
});

describe("position after a commit", () => {
  it("is past the batch's trailing markers when the batch's last record was committed", () => {
    expect(positionAfter("7", "7", "9")).toBe(10);
  });

  it("is just past the committed record otherwise", () => {
    expect(positionAfter("4", "7", "9")).toBe(5);
  });
});
