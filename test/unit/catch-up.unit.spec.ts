import { describe, expect, it } from "vitest";
import {
  admitBefore,
  appliedThrough,
  behind,
  heldStreams,
  holdDecision,
  mightRelease,
  type UpstreamPartition,
} from "../../src/pipeline/catch-up.js";
import type { Stream } from "../../src/topics.js";

const lag = (registry: number, outcomes: number, escalations = 0) => ({
  "registry-mutation": registry,
  "outcome-created": outcomes,
  "escalation-edge": escalations,
});

describe("heldStreams", () => {
  it("holds dependents while an upstream backlog is above the threshold, never the registry", () => {
    expect([...heldStreams(lag(5000, 0), 1000)].sort()).toEqual(["escalation-edge", "outcome-created"]);
    expect([...heldStreams(lag(0, 5000, 9999), 1000)]).toEqual(["escalation-edge"]);
    expect([...heldStreams(lag(1000, 1000, 99999), 1000)]).toEqual([]);
  });

  it("is off with a threshold of 0", () => {
    expect([...heldStreams(lag(1e6, 1e6), 0)]).toEqual([]);
  });
});

describe("mightRelease", () => {
  const held = (...streams: Stream[]) => new Set<Stream>(streams);

  it("says no while this instance alone still sees enough backlog to keep every held stream held", () => {
    expect(mightRelease(held("escalation-edge"), lag(0, 5000), 100)).toBe(false);
    expect(mightRelease(held("outcome-created", "escalation-edge"), lag(5000, 0), 100)).toBe(false);
  });

  it("says yes when the lower bound would release one of them, or knows nothing", () => {
    expect(mightRelease(held("escalation-edge"), lag(0, 100), 100)).toBe(true);
    expect(mightRelease(held("outcome-created", "escalation-edge"), lag(50, 5000), 100)).toBe(true);
    expect(mightRelease(held("escalation-edge"), lag(0, 0), 100)).toBe(true);
  });

  it("has nothing to release when nothing is held", () => {
    expect(mightRelease(held(), lag(0, 0), 100)).toBe(false);
  });
});

/**
 * The looks the hold took at one partition, one a second up to `now` (ms) over the last `seconds`,
 * with the end offset `endAt(t)` had at each, and the group's lag on it now.
 */
function partition(endAt: (t: number) => number, lagNow: number, now = NOW, seconds = 5): UpstreamPartition {
  const ends = [];
  for (let at = now - seconds * 1000; at <= now; at += 1000) ends.push({ at, end: endAt(at) });
  return { lag: lagNow, position: endAt(now) - lagNow, ends };
}
const NOW = 600_000;
const LIMITS = { records: 100, seconds: 5 };
/** Six partitions alike. */
const six = (p: UpstreamPartition) => Array.from({ length: 6 }, () => p);
/** A steady producer: `perSecond` records a second on each partition. */
const steady = (perSecond: number) => (t: number) => Math.floor((t * perSecond) / 1000);
/** A backlog written before the first look: the end never moves. */
const fixed = (end: number) => () => end;
/** A single look at start-up: only the one answer there is so far. */
const firstLook = (end: number, lag: number): UpstreamPartition => ({
  lag,
  position: end - lag,
  ends: [{ at: NOW, end }],
});

describe("holdDecision: the records behind by more than CATCH_UP_HOLD_SECONDS, above CATCH_UP_HOLD_RECORDS", () => {
  const none: UpstreamPartition[] = six({ lag: 0, position: 0, ends: [] });
  const cases: {
    name: string;
    registry?: UpstreamPartition[];
    outcomes?: UpstreamPartition[];
    limits?: { records: number; seconds: number };
    held: Stream[];
  }[] = [
    {
      name: "steady load, 2,400 outcomes/s with 720 in flight (0.3 s): escalations flow",
      outcomes: six(partition(steady(400), 120)),
      held: [],
    },
    {
      name: "steady load, 6,000 outcomes/s with 4,800 in flight (0.8 s): escalations flow",
      outcomes: six(partition(steady(1000), 800)),
      held: [],
    },
    {
      name: "steady registry traffic with 300 in flight: outcomes and escalations flow",
      registry: six(partition(steady(100), 50)),
      held: [],
    },
    {
      name: "a fresh deployment: 200,000 outcomes waiting at the first look",
      outcomes: six(firstLook(33_334, 33_334)),
      held: ["escalation-edge"],
    },
    {
      name: "a fresh deployment: a registry backlog holds outcomes and escalations",
      registry: six(firstLook(700, 700)),
      held: ["escalation-edge", "outcome-created"],
    },
    {
      name: "a fresh deployment with 60 records waiting: under the record threshold, as before",
      outcomes: six(firstLook(10, 10)),
      held: [],
    },
    {
      name: "a backlog met at start-up, 30 s on, 300 records left: still held",
      outcomes: six(partition(fixed(33_334), 50)),
      held: ["escalation-edge"],
    },
    {
      name: "the same backlog down to 90 records: released, as before",
      outcomes: six(partition(fixed(33_334), 15)),
      held: [],
    },
    {
      name: "a burst of 200,000 written while running, 30,000 applied so far",
      outcomes: six({
        lag: 28_334,
        position: 6_000,
        ends: [0, 1, 2, 3, 4, 5].map((s) => ({ at: NOW - 5000 + s * 1000, end: 34_334 })),
      }),
      held: ["escalation-edge"],
    },
    {
      name: "outcomes stalled for 6 s while the producers go on: held",
      outcomes: six({
        lag: 2_400,
        position: 100_000,
        ends: [0, 1, 2, 3, 4, 5].map((s) => ({ at: NOW - 5000 + s * 1000, end: 100_400 + s * 400 })),
      }),
      held: ["escalation-edge"],
    },
    {
      name: "one partition behind with 60 records, five in flight with 1,000 each: not held",
      outcomes: [
        { lag: 60, position: 0, ends: [{ at: NOW - 5000, end: 60 }] },
        ...Array.from({ length: 5 }, () => partition(steady(2000), 1000)),
      ],
      held: [],
    },
    {
      name: "CATCH_UP_HOLD_SECONDS=0: off",
      outcomes: six(firstLook(33_334, 33_334)),
      limits: { records: 100, seconds: 0 },
      held: [],
    },
    {
      name: "CATCH_UP_HOLD_RECORDS=0: off",
      registry: six(firstLook(33_334, 33_334)),
      limits: { records: 0, seconds: 5 },
      held: [],
    },
  ];

  it.each(cases)("$name", ({ registry = none, outcomes = none, limits = LIMITS, held }) => {
    const decided = holdDecision({ "registry-mutation": registry, "outcome-created": outcomes }, NOW, limits);
    expect([...decided].sort()).toEqual(held);
  });
});

describe("behind", () => {
  it("tells records in flight from a backlog by whether the position was the end at a look within the window", () => {
    const looks = [
      { at: 1000, end: 100 },
      { at: 2000, end: 200 },
      { at: 3000, end: 300 },
    ];
    expect(behind({ lag: 0, position: 300, ends: looks }, 3000, 5)).toBe(false);
    expect(behind({ lag: 150, position: 150, ends: looks }, 3000, 5)).toBe(false);
    // The same position, but the look that shows it was already written has left the window.
    expect(behind({ lag: 150, position: 150, ends: looks }, 3000, 1.5)).toBe(true);
    expect(behind({ lag: 250, position: 50, ends: looks }, 3000, 5)).toBe(true);
  });
});

describe("appliedThrough and admitBefore: how far a held stream may go", () => {
  const looks = [
    { at: 1000, end: 100 },
    { at: 2000, end: 200 },
    { at: 3000, end: 300 },
  ];
  it("is the latest look whose end the position reached, the earliest over partitions", () => {
    expect(appliedThrough([{ lag: 150, position: 250, ends: looks }], 3000)).toBe(2000);
    expect(appliedThrough([{ lag: 0, position: 300, ends: looks }], 3000)).toBe(3000);
    expect(
      appliedThrough(
        [
          { lag: 150, position: 250, ends: looks },
          { lag: 10, position: 150, ends: looks },
        ],
        3000,
      ),
    ).toBe(1000);
    // A backlog older than every look kept: nothing is known to be applied.
    expect(appliedThrough([{ lag: 500, position: 50, ends: looks }], 3000)).toBe(Number.NEGATIVE_INFINITY);
    expect(appliedThrough([], 3000)).toBe(3000);
  });

  it("lets outcomes go by the registry, escalations by the registry and the outcomes", () => {
    const registry = [{ lag: 0, position: 300, ends: looks }];
    const outcomes = [{ lag: 150, position: 250, ends: looks }];
    expect(admitBefore({ "registry-mutation": registry, "outcome-created": outcomes }, 3000)).toEqual({
      "registry-mutation": Number.POSITIVE_INFINITY,
      "outcome-created": 3000,
      "escalation-edge": 2000,
    });
    const registryBehind = [{ lag: 250, position: 50, ends: looks }];
    expect(admitBefore({ "registry-mutation": registryBehind, "outcome-created": outcomes }, 3000)).toEqual({
      "registry-mutation": Number.POSITIVE_INFINITY,
      "outcome-created": Number.NEGATIVE_INFINITY,
      "escalation-edge": Number.NEGATIVE_INFINITY,
    });
  });
});
