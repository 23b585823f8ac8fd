import { describe, expect, it } from "vitest";
import { longestCommitPause, parseScalePlan, recordsAppliedTwice, settledBetween } from "../../bench/lib/scale-plan.js";

describe("bench scale plan", () => {
  it("reads INSTANCES@SECONDS steps and refuses what it cannot run", () => {
    expect(parseScalePlan("1@0, 3@40,1@100")).toEqual([
      { instances: 1, atSeconds: 0 },
      { instances: 3, atSeconds: 40 },
      { instances: 1, atSeconds: 100 },
    ]);
    expect(() => parseScalePlan("3@40")).toThrow(/first step is at 0/);
    expect(() => parseScalePlan("1@0,3@40,2@40")).toThrow(/rise/);
    expect(() => parseScalePlan("1@0,0@10")).toThrow(/0 instances/);
    expect(() => parseScalePlan("1@0,three@10")).toThrow(/INSTANCES@SECONDS/);
    expect(() => parseScalePlan("")).toThrow(/no steps/);
  });

  it("finds the longest stretch without a commit in a window, a stretch begun before it counted whole", () => {
    const advances = [0, 200, 400, 600, 3_600, 3_800, 4_000];
    expect(longestCommitPause(advances, 0, 10_000)).toBe(6_000); // nothing after 4 000 until the window's end
    expect(longestCommitPause(advances, 0, 4_000)).toBe(3_000);
    expect(longestCommitPause(advances, 1_000, 3_700)).toBe(3_000);
    expect(longestCommitPause(advances, 3_700, 3_900)).toBe(200);
    expect(longestCommitPause([], 0, 1_000)).toBe(0);
  });

  it("counts the records applied twice from every instance's tally", () => {
    expect(recordsAppliedTwice([700, 250, 60], 1_000)).toBe(10);
    expect(recordsAppliedTwice([1_000], 1_000)).toBe(0);
  });

  it("takes the cohorts published in a window", () => {
    const settled = [
      { seconds: 0.2, count: 5, eventTimeMs: 999 },
      { seconds: 0.3, count: 5, eventTimeMs: 1_000 },
      { seconds: 4, count: 5, eventTimeMs: 1_999 },
      { seconds: 0.1, count: 5, eventTimeMs: 2_000 },
    ];
    expect(settledBetween(settled, 1_000, 2_000).map((s) => s.eventTimeMs)).toEqual([1_000, 1_999]);
  });
});
