import { describe, expect, it } from "vitest";
import { heldStreams, mightRelease } from "../../src/pipeline/catch-up.js";
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
