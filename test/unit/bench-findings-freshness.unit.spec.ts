import { describe, expect, it } from "vitest";
import { findingEventTime, findingsFreshness, type PublishedFinding } from "../../bench/lib/findings-freshness.js";

const T0 = Date.UTC(2026, 11, 7, 7, 0, 0);

function undeclared(id: string, observedAt: number, publishedAt: number, detectedAt = 0): PublishedFinding {
  return {
    findingId: id,
    kind: "undeclared-escalation",
    observedAtMs: observedAt,
    registryOccurredAtMs: T0 - 60_000,
    detectedAtMs: detectedAt,
    publishedAtMs: publishedAt,
  };
}

describe("findings freshness (bench/lib/findings-freshness.ts)", () => {
  it("measures an undeclared escalation from its observed_at, not from the registry change it was judged against", () => {
    expect(findingEventTime(undeclared("a", T0 + 1_000, T0 + 7_000))).toBe(T0 + 1_000);
  });

  it("measures a resolution from its registry change", () => {
    const resolution: PublishedFinding = {
      findingId: "r",
      kind: "undeclared-escalation-resolved",
      observedAtMs: null,
      registryOccurredAtMs: T0 + 2_000,
      detectedAtMs: T0 + 3_000,
      publishedAtMs: T0 + 4_000,
    };
    expect(findingEventTime(resolution)).toBe(T0 + 2_000);
    const f = findingsFreshness([resolution], T0, T0 + 10_000);
    expect(f).toMatchObject({ findings: 1, byKind: { "undeclared-escalation-resolved": 1 }, p50: 2, max: 2 });
    expect(f.detected).toEqual({ p50: 1, p99: 1, max: 1 });
  });

  it("gives p50, p99 and max over the findings of the window, each counted once at its first publication", () => {
    const published: PublishedFinding[] = [];
    // 100 findings in the window, published 6..105 s after their escalation (one per second of delay).
    for (let i = 0; i < 100; i++) published.push(undeclared(`f${i}`, T0 + i * 100, T0 + i * 100 + (6 + i) * 1_000));
    // A repeat of f0 published later: f0 still counts from its first publication.
    published.push(undeclared("f0", T0, T0 + 500_000));
    // A repeat seen first on the topic but published later than the one after it: the earliest wins.
    published.push(undeclared("g", T0 + 50, T0 + 900_000));
    published.push(undeclared("g", T0 + 50, T0 + 50 + 6_000));
    // Outside the window on either side: not counted.
    published.push(undeclared("before", T0 - 1, T0 + 1_000));
    published.push(undeclared("after", T0 + 20_000, T0 + 21_000));
    const f = findingsFreshness(published, T0, T0 + 20_000);
    expect(f.findings).toBe(101);
    expect(f.byKind).toEqual({ "undeclared-escalation": 101 });
    expect(f.repeats).toBe(2);
    expect(f.p50).toBe(55);
    expect(f.p99).toBe(104);
    expect(f.max).toBe(105);
    // No detected_at (a build without the field): no detection figures.
    expect(f.detected).toEqual({ p50: null, p99: null, max: null });
  });

  it("reports nothing, not zeros, when no finding fell in the window (findings off)", () => {
    expect(findingsFreshness([], T0, T0 + 1_000)).toMatchObject({ findings: 0, p50: null, p99: null, max: null });
  });
});
