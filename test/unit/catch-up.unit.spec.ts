import { describe, expect, it } from "vitest";
import { heldStreams } from "../../src/pipeline/catch-up.js";

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
