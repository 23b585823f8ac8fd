import { describe, expect, it } from "vitest";
import {
  CohortTracker,
  freshnessRates,
  histogramMaxBound,
  recordsDue,
  sampleDelta,
  weightedQuantile,
} from "../../bench/lib/freshness.js";
import { histogramQuantile, parseMetrics } from "../../bench/lib/prom.js";
import { renderChart } from "../../bench/lib/svg.js";

describe("the steady-load rate schedule", () => {
  it("publishes exactly ⌊rate·t⌋ records by time t, whatever the tick", () => {
    for (const [rate, tickMs] of [
      [333, 100],
      [7, 100],
      [5000, 250],
      [1234.5, 1000],
    ] as const) {
      let sent = 0;
      for (let tick = 0; tick < 100; tick++)
        sent += recordsDue(rate, (tick + 1) * tickMs) - recordsDue(rate, tick * tickMs);
      expect(sent).toBe(Math.floor((rate * 100 * tickMs) / 1000));
    }
    expect(recordsDue(0, 5000)).toBe(0);
    expect(recordsDue(100, 0)).toBe(0);
    // Floating-point products such as 0.3 × 10 do not lose a record.
    expect(recordsDue(300, 100)).toBe(30);
  });

  it("takes fractions of the measured capacity unless rates are given", () => {
    expect(freshnessRates(8000, [0.5, 0.9], [])).toEqual([
      { rate: 4000, fractionOfCapacity: 0.5 },
      { rate: 7200, fractionOfCapacity: 0.9 },
    ]);
    expect(freshnessRates(8000, [0.5], [2000])).toEqual([{ rate: 2000, fractionOfCapacity: 0.25 }]);
    expect(freshnessRates(null, [0.5], [2000])).toEqual([{ rate: 2000, fractionOfCapacity: null }]);
    expect(freshnessRates(null, [0.5, 0.9], [])).toEqual([]);
  });
});

describe("freshness from the records' own times and the committed offsets", () => {
  it("settles a cohort once the committed offset passes its end, at that poll's time", () => {
    const tracker = new CohortTracker();
    tracker.add("t", 0, 0, 1_000); // offsets 0..9 stamped at 1.0 s
    tracker.add("t", 0, 10, 1_100); // offsets 10..14 stamped at 1.1 s
    tracker.add("t", 1, 0, 1_000);
    tracker.settle(new Map([["t/0", 9]]), 1_500); // offset 9 not yet committed
    expect(tracker.settled.get("t") ?? []).toEqual([]);
    tracker.settle(new Map([["t/0", 12]]), 1_600);
    expect(tracker.settled.get("t")).toEqual([{ seconds: 0.6, count: 10 }]);
    // The last cohort of a partition needs its end: the high watermark once publishing stopped.
    tracker.settle(new Map([["t/0", 15]]), 1_700);
    expect(tracker.settled.get("t")).toHaveLength(1);
    tracker.close("t", 0, 15);
    tracker.close("t", 1, 4);
    tracker.settle(
      new Map([
        ["t/0", 15],
        ["t/1", 4],
      ]),
      2_100,
    );
    // The second cohort was committed by the poll at 1.7 s, before its end was known.
    expect(tracker.settled.get("t")).toEqual([
      { seconds: 0.6, count: 10 },
      { seconds: 0.6, count: 5 },
      { seconds: 1.1, count: 4 },
    ]);
    expect(tracker.unsettledCohorts()).toBe(0);
  });

  it("settles what no commit covered when the wait gives up, as a lower bound", () => {
    const tracker = new CohortTracker();
    tracker.add("t", 0, 0, 1_000);
    tracker.add("t", 0, 5, 2_000);
    tracker.close("t", 0, 8);
    tracker.settle(new Map([["t/0", 5]]), 3_000);
    expect(tracker.unsettledCohorts()).toBe(1);
    expect(tracker.settleRemaining(10_000)).toBe(3);
    expect(tracker.settled.get("t")).toEqual([
      { seconds: 2, count: 5 },
      { seconds: 8, count: 3 },
    ]);
    expect(tracker.unsettledCohorts()).toBe(0);
  });

  it("ignores an offset reported again by a send retried whole", () => {
    const tracker = new CohortTracker();
    tracker.add("t", 0, 0, 1_000);
    tracker.add("t", 0, 0, 1_050);
    tracker.close("t", 0, 3);
    tracker.settle(new Map([["t/0", 3]]), 2_000);
    expect(tracker.settled.get("t")).toEqual([{ seconds: 1, count: 3 }]);
  });

  it("takes weighted nearest-rank quantiles", () => {
    const values = [
      { seconds: 0.2, count: 98 },
      { seconds: 3, count: 1 },
      { seconds: 9, count: 1 },
    ];
    expect(weightedQuantile(values, 0.5)).toBe(0.2);
    expect(weightedQuantile(values, 0.98)).toBe(0.2);
    expect(weightedQuantile(values, 0.99)).toBe(3);
    expect(weightedQuantile(values, 1)).toBe(9);
    expect(weightedQuantile([], 0.5)).toBeNull();
  });
});

describe("freshness from the service's histogram", () => {
  const scrape = (counts: readonly number[]) => {
    const les = ["0.05", "0.1", "0.25", "0.5", "1", "+Inf"];
    let cumulative = 0;
    return parseMetrics(
      les
        .map((le, i) => {
          cumulative += counts[i] ?? 0;
          return `agp_freshness_seconds_bucket{le="${le}",stream="outcome-created"} ${cumulative}`;
        })
        .join("\n"),
    );
  };

  it("reads the window between two scrapes, with histogram_quantile's interpolation", () => {
    // Before the window: 100 observations of a cold start, all past 1 s.
    const before = scrape([0, 0, 0, 0, 0, 100]);
    // During it: 60 in (0.1, 0.25], 40 in (0.25, 0.5].
    const after = scrape([0, 0, 60, 40, 0, 100]);
    const window = sampleDelta(after, before);
    const filter = { stream: "outcome-created" };
    // rank 50 of 100 lies 50/60 into (0.1, 0.25]
    expect(histogramQuantile(window, "agp_freshness_seconds", 0.5, filter)).toBeCloseTo(0.1 + 0.15 * (50 / 60), 6);
    // rank 99 lies 39/40 into (0.25, 0.5]
    expect(histogramQuantile(window, "agp_freshness_seconds", 0.99, filter)).toBeCloseTo(0.25 + 0.25 * (39 / 40), 6);
    expect(histogramMaxBound(window, "agp_freshness_seconds", filter)).toBe(0.5);
    // Without the delta the cold start's overflow would dominate.
    expect(histogramMaxBound(after, "agp_freshness_seconds", filter)).toBe(Number.POSITIVE_INFINITY);
    expect(histogramMaxBound(sampleDelta(before, before), "agp_freshness_seconds", filter)).toBeNull();
  });
});

describe("the results chart", () => {
  it("draws a row pair per steady-load rate", () => {
    const svg = renderChart({
      title: "t",
      subtitle: "s",
      bars: [{ label: "projector ×1", value: 8000 }],
      freshness: [
        {
          label: "4,000 rec/s (0.5× capacity)",
          records: { p50: 0.4, p99: 1.2, max: 2.5 },
          histogram: { p50: 0.3, p99: 0.9, maxAtMost: 2.5 },
        },
      ],
    });
    expect(svg).toContain("Freshness under a steady load");
    expect(svg).toContain("p50 0.40 / p99 1.20 / max 2.50");
    expect(svg).toContain("p50 0.30 / p99 0.90 / max ≤ 2.5");
  });
});
