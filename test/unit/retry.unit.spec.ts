import { describe, expect, it } from "vitest";
import {
  backoffMs,
  decideDeferral,
  decodeMark,
  deferralDelayMs,
  encodeMark,
  firstSeenOf,
  isDue,
  nextDeferral,
  retryEnvelope,
  upstreamReached,
} from "../../src/pipeline/retry.js";
import { HEADER } from "../../src/topics.js";

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

  it("takes a new mark when the upstream's retry topics grew past the mark, for one more window at most", () => {
    const mark = { "registry/0": 10, "outcome.retry/0": 5 };
    const committedAtStart = { "registry/0": 10, "outcome.retry/0": 5 };
    const reached = { ...base, mark, committedAtStart };
    // The outcome it waits on was deferred again, past the mark: it may still apply.
    expect(decideDeferral({ ...reached, now: 70_000, retryEndsAtStart: { "outcome.retry/0": 6 } })).toEqual({
      kind: "final-check",
    });
    // Nothing deferred upstream since the mark: nothing it waits on is still alive.
    expect(decideDeferral({ ...reached, now: 70_000, retryEndsAtStart: { "outcome.retry/0": 5 } })).toEqual({
      kind: "dead-letter",
    });
    // Two windows after its first deferral the mark decides, whatever the upstream defers.
    expect(decideDeferral({ ...reached, now: 120_000, retryEndsAtStart: { "outcome.retry/0": 9 } })).toEqual({
      kind: "dead-letter",
    });
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

describe("the backoff", () => {
  it("doubles from the first wait per attempt", () => {
    expect([1, 2, 3, 4].map((attempt) => backoffMs(attempt, 1_000))).toEqual([1_000, 2_000, 4_000, 8_000]);
  });

  it("is capped, however many attempts", () => {
    expect(backoffMs(6, 1_000, 30_000)).toBe(30_000);
    expect(backoffMs(10_000, 1_000, 30_000)).toBe(30_000);
    expect(backoffMs(10_000, 0, 30_000)).toBe(0);
  });
});

describe("attempts and due times of retry records", () => {
  const headers = (entries: Record<string, number>) =>
    retryEnvelope(
      Object.fromEntries(Object.entries(entries).map(([name, value]) => [name, Buffer.from(String(value))])),
    );

  it("starts a record from its source topic at attempt 1, first seen now", () => {
    expect(nextDeferral(headers({}), 10_000, policy)).toEqual({ attempt: 1, firstSeen: 10_000, notBefore: 10_500 });
  });

  it("counts the attempts a record from the retry topic already had, and keeps when it was first seen", () => {
    const deferred = headers({ [HEADER.attempt]: 2, [HEADER.firstSeen]: 4_000, [HEADER.notBefore]: 9_000 });
    expect(nextDeferral(deferred, 10_000, policy)).toEqual({ attempt: 3, firstSeen: 4_000, notBefore: 12_000 });
    expect(firstSeenOf(deferred, 10_000)).toBe(4_000);
  });

  it("is due from its not-before time on; without one, at once", () => {
    const deferred = headers({ [HEADER.notBefore]: 9_000 });
    expect(deferred.notBefore).toBe(9_000);
    expect(isDue(deferred, 8_999)).toBe(false);
    expect(isDue(deferred, 9_000)).toBe(true);
    expect(isDue(headers({}), 0)).toBe(true);
  });
});

describe("retryEnvelope", () => {
  const text = (entries: Record<string, string>) =>
    Object.fromEntries(Object.entries(entries).map(([name, value]) => [name, Buffer.from(value)]));

  it("decodes a record's retry headers once: attempts, due time, first deferral, mark, and whether it is late", () => {
    const mark = { "reg/0": 10, "reg.retry/1": 3 };
    expect(
      retryEnvelope(
        text({
          [HEADER.attempt]: "4",
          [HEADER.notBefore]: "9000",
          [HEADER.firstSeen]: "1000",
          [HEADER.upstreamMark]: encodeMark(mark),
          [HEADER.sourceTopic]: "out",
          [HEADER.sourceOffset]: "17",
        }),
      ),
    ).toEqual({ attempts: 4, notBefore: 9000, firstSeen: 1000, mark, late: true });
  });

  it("reads a record straight from its source as never deferred, due at once, not late", () => {
    expect(retryEnvelope({})).toEqual({
      attempts: 0,
      notBefore: undefined,
      firstSeen: undefined,
      mark: undefined,
      late: false,
    });
  });

  it("counts unreadable numbers and marks as absent", () => {
    const envelope = retryEnvelope(
      text({ [HEADER.attempt]: "many", [HEADER.notBefore]: "soon", [HEADER.upstreamMark]: "{not json" }),
    );
    expect(envelope).toMatchObject({ attempts: 0, notBefore: undefined, mark: undefined });
    expect(isDue(envelope, 0)).toBe(true);
  });
});
