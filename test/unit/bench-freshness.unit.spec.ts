import avro from "avsc";
import { describe, expect, it } from "vitest";
import { freshnessRow } from "../../bench/lib/chart.js";
import {
  achievedOfCapacity,
  CohortTracker,
  declaredTargets,
  freshnessRates,
  freshnessTimeline,
  gaugeMax,
  histogramMaxBound,
  RecentByAgent,
  recordsDue,
  sampleDelta,
  steadyLoadTicks,
  TICK_MS,
  weightedQuantile,
} from "../../bench/lib/freshness.js";
import { EVENT_TIME_PLACEHOLDER, stampEventTime } from "../../bench/lib/load-producer.js";
import { histogramQuantile, parseMetrics } from "../../bench/lib/prom.js";
import { renderChart, textWidth } from "../../bench/lib/svg.js";
import type { FreshnessResult } from "../../bench/results.js";
import type { EscalationEdge, OutcomeCreated, RegistryEvent } from "../../src/model/events.js";
import { readerSchema } from "../../src/model/schemas.js";
import { generateEventLog, prng } from "../../workload/generate.js";

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

  it("sets the achieved rate against the capacity checked before and after the load", () => {
    expect(achievedOfCapacity(13_500, 15_000, 12_500)).toEqual({ before: 0.9, after: 1.08 });
    expect(achievedOfCapacity(7_000, 14_000, null)).toEqual({ before: 0.5, after: null });
    expect(achievedOfCapacity(7_000, null, 0)).toEqual({ before: null, after: null });
  });
});

describe("escalations drawn like the log's", () => {
  const snapshot = (agent_id: string, escalation_path: string[] | null): RegistryEvent => ({
    kind: "registry-snapshot",
    event_id: `e-${agent_id}`,
    tenant_id: "default",
    registry_version: 1,
    occurred_at: 0,
    agent_id,
    name: agent_id,
    family: null,
    owner: null,
    decision_scope: null,
    status: "active",
    tools: [],
    owned_workflows: [],
    escalation_path,
  });

  it("declares the paths the registry leaves, to registered agents only", () => {
    const registry: RegistryEvent[] = [
      snapshot("a", ["b", "c"]),
      snapshot("a", ["b", "human operator", "gone", "a"]), // the last record wins
      snapshot("b", ["a"]),
      snapshot("gone", ["a"]),
      { kind: "registry-tombstone", tenant_id: "default", agent_id: "gone", registry_version: 2 },
      snapshot("c", null),
    ];
    expect(declaredTargets(registry)).toEqual(
      new Map([
        ["a", ["b"]],
        ["b", ["a"]],
      ]),
    );
  });

  it("draws an agent's recent outcome within the window, keeping the last few per agent", () => {
    const recent = new RecentByAgent(2);
    recent.add("a", "o1", 1_000);
    recent.add("a", "o2", 5_000);
    recent.add("a", "o3", 9_000); // o1 falls out
    recent.add("b", "o4", 5_000);
    expect(recent.pick("a", 4_000, 6_000, () => 0.99)).toBe("o2");
    expect(recent.pick("a", 0, 2_000, () => 0)).toBeUndefined();
    expect(recent.pick("a", 0, 10_000, () => 0.99)).toBe("o3");
    expect(recent.pick("c", 0, 10_000, () => 0)).toBeUndefined();
  });
});

describe("a steady load generated before it runs", () => {
  const log = generateEventLog(3);
  const declared = declaredTargets(log.registry);
  const load = (rate: number, ticks: number, draws = { declared: 0, random: 0 }) => [
    ...steadyLoadTicks(
      {
        rate,
        ticks,
        pool: log.outcomes,
        declared,
        undeclaredRatio: 0.1,
        escalationShare: 0.2,
        random: prng(11),
        label: "t",
      },
      draws,
    ),
  ];

  it("publishes in each tick what is due by its start, outcomes stamped with the tick's time", () => {
    const ticks = load(1_234, 400);
    ticks.forEach((events, tick) => {
      expect(events).toHaveLength(recordsDue(1_234, tick * TICK_MS) - recordsDue(1_234, (tick - 1) * TICK_MS));
      for (const event of events) if (event.kind === "outcome-created") expect(event.created_at).toBe(tick * TICK_MS);
    });
    const ids = ticks.flat().flatMap((e) => (e.kind === "outcome-created" ? [e.outcome_id] : []));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("draws escalations between outcomes published 2 to 30 s before, a tenth of them redelivered copies", () => {
    const draws = { declared: 0, random: 0 };
    const ticks = load(500, 600, draws);
    const publishedAt = new Map<string, number>();
    let copies = 0;
    let escalations = 0;
    ticks.forEach((events, tick) => {
      const now = tick * TICK_MS;
      for (const event of events) {
        if (event.kind === "outcome-created") {
          publishedAt.set(event.outcome_id, event.created_at);
          continue;
        }
        escalations += 1;
        const edge = event as EscalationEdge;
        // A copy keeps its original's time (one of an escalation of the same tick counts as drawn).
        if (edge.observed_at < now) copies += 1;
        for (const id of [edge.source_outcome_id, edge.target_outcome_id]) {
          const at = publishedAt.get(id) as number;
          expect(edge.observed_at - at).toBeGreaterThanOrEqual(2_000);
          expect(edge.observed_at - at).toBeLessThanOrEqual(30_000);
        }
      }
    });
    const all = ticks.flat().length;
    expect(escalations / all).toBeGreaterThan(0.15);
    expect(escalations / all).toBeLessThan(0.2);
    expect(copies / escalations).toBeGreaterThan(0.05);
    expect(copies / escalations).toBeLessThan(0.15);
    // Along declared paths where the target agent has a recent outcome, between any two otherwise.
    expect(draws.declared).toBeGreaterThan(0);
    expect(draws.random).toBeGreaterThan(0);
  });

  it("stamps an encoded value's event time in place, as Avro would have encoded it", () => {
    const type = avro.Type.forSchema(readerSchema("outcome-created") as avro.Schema);
    const outcome = log.outcomes[0] as OutcomeCreated;
    const { kind: _kind, ...fields } = outcome;
    for (const at of [2 ** 40, 1_764_000_000_123, Date.UTC(2039, 0, 1), 2 ** 41 - 1]) {
      const value = type.toBuffer({ ...fields, created_at: EVENT_TIME_PLACEHOLDER });
      stampEventTime(value, value.length, at);
      expect(value.equals(type.toBuffer({ ...fields, created_at: at })), String(at)).toBe(true);
    }
    const value = type.toBuffer({ ...fields, created_at: EVENT_TIME_PLACEHOLDER });
    expect(() => stampEventTime(value, value.length, 2 ** 41)).toThrow(/between 2004 and 2039/);
    expect(() => stampEventTime(value, value.length, 1_000)).toThrow(/between 2004 and 2039/);
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
    expect(tracker.settled.get("t")).toEqual([{ seconds: 0.6, count: 10, eventTimeMs: 1_000 }]);
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
      { seconds: 0.6, count: 10, eventTimeMs: 1_000 },
      { seconds: 0.6, count: 5, eventTimeMs: 1_100 },
      { seconds: 1.1, count: 4, eventTimeMs: 1_000 },
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
      { seconds: 2, count: 5, eventTimeMs: 1_000 },
      { seconds: 8, count: 3, eventTimeMs: 2_000 },
    ]);
    expect(tracker.unsettledCohorts()).toBe(0);
  });

  it("ignores an offset reported again by a send retried whole", () => {
    const tracker = new CohortTracker();
    tracker.add("t", 0, 0, 1_000);
    tracker.add("t", 0, 0, 1_050);
    tracker.close("t", 0, 3);
    tracker.settle(new Map([["t/0", 3]]), 2_000);
    expect(tracker.settled.get("t")).toEqual([{ seconds: 1, count: 3, eventTimeMs: 1_000 }]);
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

  it("lays freshness out second by second of event time, so a stall shows as one", () => {
    const from = 10_000;
    const timeline = freshnessTimeline(
      [
        { seconds: 0.3, count: 50, eventTimeMs: 10_100 },
        { seconds: 0.4, count: 50, eventTimeMs: 10_900 },
        { seconds: 6, count: 70, eventTimeMs: 12_000 },
        { seconds: 5.2, count: 30, eventTimeMs: 12_999 },
        { seconds: 9, count: 5, eventTimeMs: 9_999 }, // before the window
        { seconds: 9, count: 5, eventTimeMs: 14_000 }, // after it
      ],
      from,
      4,
    );
    expect(timeline).toEqual([
      { records: 100, max: 0.4 },
      { records: 0, max: null },
      { records: 100, max: 6 },
      { records: 0, max: null },
    ]);
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

/** Each text's estimated extent (as the chart lays it out) and the canvas width. */
function textExtents(svg: string): { width: number; texts: { text: string; left: number; right: number }[] } {
  const width = Number(/<svg [^>]*width="(\d+)"/.exec(svg)?.[1]);
  const texts = [...svg.matchAll(/<text x="([\d.-]+)"[^>]*?>([^<]*)<\/text>/g)].map((m) => {
    const tag = m[0];
    const x = Number(m[1]);
    const size = Number(/font-size="(\d+)"/.exec(tag)?.[1] ?? 13);
    const text = (m[2] as string).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
    const w = textWidth(text, size, tag.includes('font-weight="bold"'));
    if (tag.includes('text-anchor="end"')) return { text, left: x - w, right: x };
    if (tag.includes('text-anchor="middle"')) return { text, left: x - w / 2, right: x + w / 2 };
    return { text, left: x, right: x + w };
  });
  return { width, texts };
}

const steadyLoad = (rate: number, fraction: number): FreshnessResult =>
  ({
    rate,
    achievedRate: rate,
    fractionOfCapacity: fraction,
    capacity: 6785,
    records: {
      all: { records: 10, p50: 0.6, p99: 147.5, max: 161.8 },
      "outcome-created": { records: 8, p50: 0.4, p99: 1.2, max: 2.5 },
      "escalation-edge": { records: 2, p50: 105.5, p99: 155.2, max: 161.8 },
    },
    histogram: {
      "outcome-created": { observations: 8, p50: 0.3, p99: 0.9, maxAtMost: 2.5 },
      "escalation-edge": { observations: 2, p50: 102.7, p99: 294.2, maxAtMost: 300 },
    },
  }) as FreshnessResult;

describe("the service's oldest-unapplied age", () => {
  it("reads the largest value over a stream's partitions, none when it has no series", () => {
    const samples = parseMetrics(
      [
        'agp_oldest_unapplied_record_age_seconds{topic="b.outcome-created",partition="0"} 0',
        'agp_oldest_unapplied_record_age_seconds{topic="b.outcome-created",partition="1"} 2.5',
        'agp_oldest_unapplied_record_age_seconds{topic="b.escalation-edge",partition="0"} 7',
      ].join("\n"),
    );
    const name = "agp_oldest_unapplied_record_age_seconds";
    expect(gaugeMax(samples, name, { topic: "b.outcome-created" })).toBe(2.5);
    expect(gaugeMax(samples, name, { topic: "b.escalation-edge" })).toBe(7);
    expect(gaugeMax(samples, name, { topic: "b.registry-mutation" })).toBeNull();
  });
});

describe("the results chart", () => {
  it("draws each steady-load rate per stream, from the records' own times and from the histogram", () => {
    const svg = renderChart({
      title: "t",
      subtitle: "s",
      bars: [{ label: "projector ×1", value: 8000 }],
      freshness: [freshnessRow(steadyLoad(3393, 0.5))],
    });
    expect(svg).toContain("Freshness under a steady load");
    expect(svg).toContain("0.5× capacity (6,785 rec/s measured): 3,393 rec/s");
    expect(svg).toContain("outcomes, records' own times");
    expect(svg).toContain("outcomes, service's histogram");
    expect(svg).toContain("escalations, records' own times");
    expect(svg).toContain("escalations, service's histogram");
    expect(svg).toContain("p50 0.40 / p99 1.20 / max 2.50");
    expect(svg).toContain("p50 0.30 / p99 0.90 / max ≤ 2.5");
    expect(svg).toContain("p50 105.5 / p99 155.2 / max 161.8");
    expect(svg).toContain("p50 102.7 / p99 294.2 / max ≤ 300");
  });

  it("says when the capacity was checked right before the load, and what it was after", () => {
    const checked = {
      ...steadyLoad(12_150, 0.9),
      capacity: 13_500,
      capacityFrom: "check-before",
      capacityAfter: 12_875,
    };
    expect(freshnessRow(checked as FreshnessResult).label).toBe(
      "0.9× capacity (13,500 rec/s just before, 12,875 after): 12,150 rec/s",
    );
  });

  it("cuts no text off at either side, however long the labels", () => {
    const svg = renderChart({
      title: "agent-graph-projector: 254,000 records, 2 cores shared with Kafka and Neo4j",
      subtitle:
        "projector/ceiling 0.858, projector/baseline 22.7×, projector/connector 0.93×, peak RSS 265.8 MiB, soak RSS slope 0.46 MiB/min",
      bars: [
        { label: "baseline (1 record/tx)", value: 299 },
        { label: "a connector with a very long name indeed (5000×2)", value: 7262 },
        { label: "projector ×1", value: 6785, highlight: true, note: "(median of three turns, 37.4 s)" },
      ],
      soak: [
        { minute: 0, rssMiB: 150, lag: 5000 },
        { minute: 10, rssMiB: 155, lag: 0 },
      ],
      freshness: [
        freshnessRow(steadyLoad(3393, 0.5)),
        freshnessRow({
          ...steadyLoad(16_107, 0.9),
          capacity: 17_897,
          capacityFrom: "check-before",
          capacityAfter: 15_432,
        } as FreshnessResult),
      ],
    });
    const { width, texts } = textExtents(svg);
    expect(texts.length).toBeGreaterThan(30);
    const outside = texts.filter((t) => t.left < 0 || t.right > width);
    expect(outside).toEqual([]);
  });
});
