import { describe, expect, it } from "vitest";
import {
  decideDeferral,
  decodeMark,
  deferralDelayMs,
  encodeMark,
  upstreamReached,
} from "../../src/pipeline/retry-window.js";

const policy = { maxAttempts: 0, maxAgeMs: 60_000, backoffMs: 500, backoffMaxMs: 60_000 };
const base = { attempt: 5, firstSeen: 0, mark: undefined, committedAtStart: undefined, policy };

describe("the retry window", () => {
  it("retries within RETRY_MAX_AGE_MS, however many attempts, when RETRY_MAX_ATTEMPTS is 0", () => {
    expect(decideDeferral({ ...base, attempt: 500, now: 59_999 })).toEqual({ kind: "retry" });
  });

  it("past the window, marks the upstream first instead of dead-lettering", () => {
    expect(decideDeferral({ ...base, now: 60_000 })).toEqual({ kind: "final-check" });
    expect(decideDeferral({ ...base, attempt: 3, now: 10, policy: { ...policy, maxAttempts: 3 } })).toEqual({
      kind: "final-check",
    });
  });

  it("keeps the mark and retries while the group has not applied the upstream up to it", () => {
    const mark = { "registry/0": 10, "registry/1": 4 };
    const committedAtStart = { "registry/0": 10, "registry/1": 3 };
    expect(decideDeferral({ ...base, now: 3_600_000, mark, committedAtStart })).toEqual({ kind: "retry", mark });
  });

  it("dead-letters once an attempt started with the upstream applied up to the mark", () => {
    const mark = { "registry/0": 10, "registry/1": 4 };
    expect(
      decideDeferral({ ...base, now: 70_000, mark, committedAtStart: { "registry/0": 12, "registry/1": 4 } }),
    ).toEqual({ kind: "dead-letter" });
  });

  it("reads a partition the group has no position on as not reached", () => {
    expect(upstreamReached({}, { "registry/0": 1 })).toBe(false);
    expect(upstreamReached({}, {})).toBe(true);
  });

  it("round-trips a mark through its header and ignores an unreadable one", () => {
    const mark = { "a.registry-mutation/0": 7 };
    expect(decodeMark(encodeMark(mark))).toEqual(mark);
    for (const bad of ["", "[1]", "null", '{"a":"x"}', "{"]) expect(decodeMark(bad)).toBeUndefined();
  });

  it("backs off exponentially up to RETRY_BACKOFF_MAX_MS", () => {
    expect([1, 2, 3].map((attempt) => deferralDelayMs(attempt, policy))).toEqual([500, 1000, 2000]);
    expect(deferralDelayMs(20, policy)).toBe(60_000);
    expect(deferralDelayMs(5_000, policy)).toBe(60_000);
  });
});
