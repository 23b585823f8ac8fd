/**
 * Freshness under a steady load: records published at a fixed rate (fractions of this run's
 * single-instance capacity, or --freshness-rps), each stamped with the time it is published as its
 * event time; freshness read twice: the service's own agp_freshness_seconds histogram (graph commit −
 * event time), and from outside, the consumer group's committed offsets polled every 200 ms (commit
 * seen − event time).
 */

import os from "node:os";
import { keyOf, publishEvents, streamOf } from "../../src/adapters/kafka/event-publisher.js";
import { fetchLag } from "../../src/adapters/kafka/group-admin.js";
import type { Stream } from "../../src/topics.js";
import { generateEventLog, prng } from "../../workload/generate.js";
import { FRESHNESS_SECONDS, FRESHNESS_WARMUP, nullable, round, SEED, say, sleep } from "../args.js";
import { cpuMeter } from "../lib/cpu.js";
import { wipeGraph } from "../lib/direct.js";
import { findingsFreshness } from "../lib/findings-freshness.js";
import { readFindings } from "../lib/findings-reader.js";
import {
  CohortTracker,
  declaredTargets,
  freshnessTimeline,
  gaugeMax,
  histogramMaxBound,
  type Settled,
  type SteadyLoadDraws,
  sampleDelta,
  steadyLoadTicks,
  TICK_MS,
  weightedQuantile,
} from "../lib/freshness.js";
import {
  EVENT_TIME_PLACEHOLDER,
  eventTimeOf,
  framedEncoder,
  type LoadRecord,
  type PreparedSend,
  withEventTime,
} from "../lib/load-producer.js";
import { type ProjectorProcess, startProjector } from "../lib/projector.js";
import { histogramQuantile, type Sample, statementTimes, total, totalsBy } from "../lib/prom.js";
import { longestCommitPause, recordsAppliedTwice, type ScaleStep, settledBetween } from "../lib/scale-plan.js";
import type { CapacitySource, FreshnessResult, ScaleResult } from "../results.js";
import { type BenchRun, loadTopics, sourceTopicEnv } from "./run.js";

/** Records per produce request: publishEvents' chunk, under a partition's 1 MiB message.max.bytes. */
const REQUEST_RECORDS = 2000;
/** A scale step's cost is read over the records published in this long after it. */
const SCALE_WINDOW_MS = 30_000;

export async function runFreshness(
  run: BenchRun,
  runNo: number,
  rate: number,
  fractionOfCapacity: number | null,
  freshnessCapacity: number | null,
  capacityFrom: CapacitySource | undefined,
  scale?: readonly ScaleStep[],
): Promise<FreshnessResult> {
  const { prefix, admin, producer, registry, driver, database, log, size, baseEnv, servers } = run;
  const label = `fresh${runNo}`;
  const { names: freshNames, ids: freshIds } = await loadTopics(run, label, { ownFindingsTopic: true });
  await wipeGraph(driver, database);
  await publishEvents(producer, registry, freshIds, freshNames, log.registry, () => {}, 5000);
  const pool = generateEventLog(SEED + 5 + runNo, { ...size, outcomes: 20_000, escalations: 0 }).outcomes;
  const random = prng(SEED + 20 + runNo);
  const loadProducer = run.openLoadProducer();
  const encode = framedEncoder(freshIds);
  const group = `${prefix}-${label}`;
  const projectorEnv = {
    ...baseEnv,
    CONSUMER_GROUP: group,
    ...sourceTopicEnv(freshNames),
    TOPIC_GOVERNANCE_FINDINGS: freshNames.findings,
    RETRY_TOPIC_SUFFIX: `.retry-${label}`,
    DLQ_TOPIC_SUFFIX: `.dlq-${label}`,
  };
  // The first instance runs throughout; a scale plan adds and stops others beside it (the last added first).
  const child = startProjector(projectorEnv, label);
  const others: ProjectorProcess[] = [];
  const stoppedOthers: Promise<Record<string, number> | undefined>[] = [];
  let started = 1;
  const scaleTo = (instances: number) => {
    while (1 + others.length < instances) others.push(startProjector(projectorEnv, `${label}-${++started}`));
    while (1 + others.length > instances) {
      const leaving = others.pop() as ProjectorProcess;
      stoppedOthers.push(leaving.stop().then(() => leaving.tally));
    }
  };
  scaleTo(scale?.[0]?.instances ?? 1);
  await Promise.all([child.joinedAt, ...others.map((other) => other.joinedAt)]);
  const scaleSteps = (scale ?? []).slice(1);
  let nextStep = 0;
  const scaledAt: number[] = [];
  // The findings the load brings, read back as they are published (their freshness beside the graph's).
  const findingsReader = await readFindings(run.kafka, registry, freshNames.findings, `${group}-findings`);
  for (const started = Date.now(); Date.now() - started < 120_000; ) {
    const lags = await fetchLag(admin, group, [freshNames.source["registry-mutation"]]);
    if (lags.length > 0 && lags.every((l) => l.lag === 0)) break;
    await sleep(250);
  }
  const warmupSeconds = FRESHNESS_WARMUP;
  const escalationShare = 0.2;
  say(
    `freshness ${runNo}: ${rate} records/s${fractionOfCapacity !== null ? ` (${fractionOfCapacity} of ${freshnessCapacity} measured${capacityFrom === "check-before" ? " right before" : ""})` : ""}, ` +
      `${warmupSeconds} s warm-up then ${FRESHNESS_SECONDS} s measured, published with ${loadProducer.kind}; load average ${os
        .loadavg()
        .map((l) => round(l, 2))
        .join(" ")}`,
  );
  const tracker = new CohortTracker();
  const measured = [freshNames.source["outcome-created"], freshNames.source["escalation-edge"]];
  // The whole load generated and encoded before it starts, in sends of at most 2,000 records as
  // publishEvents sends them (a tick that fell behind would otherwise put more than a partition's 1 MiB
  // message.max.bytes in one record batch): the bench's own CPU during the load is then what sending
  // and measuring take, not what making the records takes (the twenty-seventh round: 7.5 of the
  // load's ~110 CPU-seconds at 14,000/s).
  const preparing = Date.now();
  const draws: SteadyLoadDraws = { declared: 0, random: 0 };
  const ticks: PreparedSend[][] = [];
  let prepared = 0;
  for (const events of steadyLoadTicks(
    {
      rate,
      ticks: Math.ceil(((warmupSeconds + FRESHNESS_SECONDS) * 1000) / TICK_MS),
      pool,
      declared: declaredTargets(log.registry),
      undeclaredRatio: size.undeclaredRatio,
      escalationShare,
      random,
      label,
    },
    draws,
  )) {
    const tickAt = ticks.length * TICK_MS;
    const sends: PreparedSend[] = [];
    for (let start = 0; start < events.length; start += REQUEST_RECORDS) {
      const records = events.slice(start, start + REQUEST_RECORDS).map(
        (event): LoadRecord => ({
          topic: freshNames.source[streamOf(event)],
          key: keyOf(event),
          value: encode(withEventTime(event, EVENT_TIME_PLACEHOLDER)),
          eventAgeMs: tickAt - eventTimeOf(event),
        }),
      );
      sends.push(loadProducer.prepare(records));
    }
    prepared += events.length;
    ticks.push(sends);
  }
  say(`  ${label}: ${prepared} records generated and encoded in ${round((Date.now() - preparing) / 1000, 1)} s`);
  let k = 0;
  let published = 0;
  let before: Sample[] = [];
  let meter: ReturnType<typeof cpuMeter> | undefined;
  const loadStart = Date.now();
  const measureFrom = loadStart + warmupSeconds * 1000;
  const measureUntil = measureFrom + FRESHNESS_SECONDS * 1000;
  let measuring = false;
  let polling = true;
  let pollErrors = 0;
  // Per partition, when a poll saw its committed offset move: a partition between owners shows as a gap.
  const commitAdvances = new Map<string, number[]>();
  let lastCommitted = new Map<string, number>();
  const poller = (async () => {
    while (polling) {
      try {
        const committed = await admin.fetchOffsets({ groupId: group, topics: measured });
        const map = new Map<string, number>();
        for (const { topic, partitions } of committed)
          for (const p of partitions) map.set(`${topic}/${p.partition}`, Number(p.offset));
        const now = Date.now();
        for (const [key, offset] of map)
          if (offset > (lastCommitted.get(key) ?? offset)) {
            const advances = commitAdvances.get(key) ?? [];
            advances.push(now);
            commitAdvances.set(key, advances);
          }
        lastCommitted = map;
        tracker.settle(map, now);
      } catch {
        pollErrors += 1; // the next poll settles what this one missed, later
      }
      await sleep(200);
    }
  })();
  // The service's own oldest-unapplied age per stream, its largest value seen from the measured
  // window's start to the drain's end, scraped every second.
  const oldestUnapplied: Record<"outcome-created" | "escalation-edge", number | null> = {
    "outcome-created": null,
    "escalation-edge": null,
  };
  let scrapeErrors = 0;
  const scraper = (async () => {
    while (polling) {
      if (measuring) {
        try {
          const samples = await child.scrape();
          for (const stream of ["outcome-created", "escalation-edge"] as const) {
            const seen = gaugeMax(samples, "agp_oldest_unapplied_record_age_seconds", {
              topic: freshNames.source[stream],
            });
            if (seen !== null) oldestUnapplied[stream] = Math.max(oldestUnapplied[stream] ?? 0, seen);
          }
        } catch {
          scrapeErrors += 1;
        }
      }
      await sleep(1000);
    }
  })();
  let lastReport = loadStart;
  for (const [tick, sends] of ticks.entries()) {
    const tickStart = loadStart + tick * TICK_MS;
    if (tickStart >= measureUntil) break;
    const step = scaleSteps[nextStep];
    if (step && tickStart >= measureFrom + step.atSeconds * 1000) {
      nextStep += 1;
      scaledAt.push(Date.now());
      say(`  ${label}: ${1 + others.length} → ${step.instances} instance(s) at ${step.atSeconds} s`);
      scaleTo(step.instances);
    }
    if (!measuring && tickStart >= measureFrom) {
      before = await child.scrape();
      meter = cpuMeter({
        ...servers,
        projector: child.pid,
        ...(loadProducer.pid ? { "load producer": loadProducer.pid } : {}),
      });
      measuring = true;
    }
    // Stamped when sent, as a producer stamps what it publishes; a tick sent late is caught up by
    // the next one not waiting.
    const now = Date.now();
    for (const send of sends) {
      for (const placed of await loadProducer.send(send, now))
        if (measuring) tracker.add(placed.topic, placed.partition, placed.firstOffset, now);
      k += send.records;
      if (measuring) published += send.records;
    }
    if (Date.now() - lastReport > 15_000) {
      lastReport = Date.now();
      say(`  ${label}: ${k} published, ${tracker.unsettledCohorts()} produce request(s) not yet committed`);
    }
    const wait = loadStart + (tick + 1) * TICK_MS - Date.now();
    if (wait > 0) await sleep(wait);
  }
  ticks.length = 0;
  const publishedSeconds = (Date.now() - measureFrom) / 1000;
  for (const topic of measured)
    for (const p of await admin.fetchTopicOffsets(topic)) tracker.close(topic, p.partition, Number(p.high));
  const drainStart = Date.now();
  while (tracker.unsettledCohorts() > 0 && Date.now() - drainStart < 120_000) await sleep(250);
  const drainSeconds = (Date.now() - drainStart) / 1000;
  polling = false;
  await poller;
  await scraper;
  const unsettledAtEnd = tracker.settleRemaining(Date.now());
  const cpuSeconds = meter?.since() ?? {};
  // After the CPU reading: the Java producer's process is gone once closed.
  await loadProducer.close();
  const after = await child.scrape();
  const window = sampleDelta(after, before);
  const findingsWait = await awaitFindings(child, findingsReader, baseEnv, measureUntil);
  const peak = child.rssKiB();
  scaleTo(1);
  const tallies = [...(await Promise.all(stoppedOthers))];
  await child.stop();
  tallies.unshift(await child.tally);
  let recordsOnTopics = 0;
  for (const topic of Object.values(freshNames.source))
    for (const p of await admin.fetchTopicOffsets(topic)) recordsOnTopics += Number(p.high);
  const fromHistogram = (stream: Stream) => ({
    observations: total(window, "agp_freshness_seconds_count", { stream }),
    p50: nullable(histogramQuantile(window, "agp_freshness_seconds", 0.5, { stream })),
    p99: nullable(histogramQuantile(window, "agp_freshness_seconds", 0.99, { stream })),
    maxAtMost: histogramMaxBound(window, "agp_freshness_seconds", { stream }),
  });
  const fromRecords = (values: readonly Settled[]) => ({
    records: values.reduce((s, v) => s + v.count, 0),
    p50: nullable(weightedQuantile(values, 0.5)),
    p99: nullable(weightedQuantile(values, 0.99)),
    max: nullable(weightedQuantile(values, 1)),
  });
  const outcomesSettled = tracker.settled.get(freshNames.source["outcome-created"]) ?? [];
  const escalationsSettled = tracker.settled.get(freshNames.source["escalation-edge"]) ?? [];
  const scaled = scale
    ? scaleCost(scale, scaledAt, {
        from: measureFrom,
        until: measureUntil,
        commitAdvances,
        settled: [...outcomesSettled, ...escalationsSettled],
        summarize: fromRecords,
        rebalances: total(window, "agp_rebalances_total"),
        tallies,
        recordsOnTopics,
      })
    : undefined;
  const timeline = {
    "outcome-created": freshnessTimeline(outcomesSettled, measureFrom, FRESHNESS_SECONDS),
    "escalation-edge": freshnessTimeline(escalationsSettled, measureFrom, FRESHNESS_SECONDS),
  };
  const result: FreshnessResult = {
    rate,
    fractionOfCapacity,
    capacity: freshnessCapacity,
    ...(capacityFrom ? { capacityFrom } : {}),
    warmupSeconds,
    seconds: FRESHNESS_SECONDS,
    published,
    achievedRate: Math.round(published / publishedSeconds),
    loadProducer: loadProducer.kind,
    drainSeconds: round(drainSeconds, 1),
    unsettledAtEnd,
    offsetPollErrors: pollErrors,
    histogram: {
      "outcome-created": fromHistogram("outcome-created"),
      "escalation-edge": fromHistogram("escalation-edge"),
    },
    records: {
      all: fromRecords([...outcomesSettled, ...escalationsSettled]),
      "outcome-created": fromRecords(outcomesSettled),
      "escalation-edge": fromRecords(escalationsSettled),
    },
    oldestUnappliedMaxSeconds: {
      "outcome-created": nullable(oldestUnapplied["outcome-created"]),
      "escalation-edge": nullable(oldestUnapplied["escalation-edge"]),
    },
    timeline,
    ...(scaled ? { scale: scaled } : {}),
    escalationsOnDeclaredPaths: round(draws.declared / Math.max(1, draws.declared + draws.random), 3),
    metricsScrapeErrors: scrapeErrors,
    deferred: total(window, "agp_records_total", { result: "deferred" }),
    transactionRetries: total(window, "agp_transaction_retries_total"),
    transactionRetriesBy: totalsBy(window, "agp_transaction_retries_total", ["pattern", "reason"]),
    neo4jStatements: statementTimes(window),
    transactions: total(window, "agp_batch_duration_seconds_count"),
    findingsRecorded: total(window, "agp_findings_total"),
    findings: {
      ...findingsFreshness(findingsReader.findings, measureFrom, measureUntil),
      ...findingsWait,
      undecoded: findingsReader.undecoded,
    },
    findingsUnpublishedAtEnd: total(after, "agp_findings_unpublished"),
    batchP50Ms: nullable(histogramQuantile(window, "agp_batch_duration_seconds", 0.5), 1000),
    batchP99Ms: nullable(histogramQuantile(window, "agp_batch_duration_seconds", 0.99), 1000),
    peakRssMiB: round((peak?.hwm ?? 0) / 1024),
    cpuSeconds,
    loadAverageAtEnd: os.loadavg().map((l) => round(l, 2)),
    errors: child.errors.slice(0, 10),
  };
  const q = (f: { p50: number | null; p99: number | null }) => `p50 ${f.p50} s, p99 ${f.p99} s`;
  const perStream = (["outcome-created", "escalation-edge"] as const).map((stream) => {
    const r = result.records[stream];
    const h = result.histogram[stream];
    const oldest = result.oldestUnappliedMaxSeconds[stream];
    return `${stream}: records ${q(r)}, max ${r.max} s; histogram ${q(h)}, max ≤ ${h.maxAtMost} s; oldest unapplied ≤ ${oldest} s`;
  });
  // The seconds whose slowest record took over a second, as `second:max`: one stall or many.
  const lateSeconds = (stream: "outcome-created" | "escalation-edge") =>
    timeline[stream].flatMap((s, i) => (s.max !== null && s.max > 1 ? [`${i}:${round(s.max, 1)}`] : [])).join(" ") ||
    "none";
  const f = result.findings;
  say(
    `freshness ${runNo}: findings (event time → published) ${f ? `${f.findings} ${JSON.stringify(f.byKind)}: p50 ${f.p50} s, p99 ${f.p99} s, max ${f.max} s (→ detected p99 ${f.detected.p99} s); waited ${f.waitedSeconds} s after the drain` : "none"}; the graph's p99 ${result.records.all.p99} s`,
  );
  say(
    `freshness ${runNo}: seconds of the load whose slowest record took over 1 s — outcomes ${lateSeconds("outcome-created")}; escalations ${lateSeconds("escalation-edge")}`,
  );
  say(
    `freshness ${runNo} at ${rate} records/s (achieved ${result.achievedRate}): ${perStream.join("; ")}; ` +
      `drained in ${result.drainSeconds} s, ${result.deferred} deferred, ${result.transactionRetries} transaction retries ${JSON.stringify(result.transactionRetriesBy)}; ${result.findingsRecorded} findings recorded, ${result.findingsUnpublishedAtEnd} unpublished at the end; CPU ${JSON.stringify(cpuSeconds)} s; ${result.transactions} batches, Neo4j's time per pattern ${JSON.stringify(result.neo4jStatements)}`,
  );
  if (scaled) {
    const w = (x: ScaleResult["before"]) =>
      `a partition's commits paused ≤ ${x.commitPauseSeconds} s, records p50 ${x.records.p50} s, p99 ${x.records.p99} s, max ${x.records.max} s`;
    say(
      `freshness ${runNo} scaled: before ${w(scaled.before)}; ${scaled.steps.map((st) => `→ ${st.instances} at ${st.atSeconds} s (next ${scaled.windowSeconds} s): ${w(st)}`).join("; ")}; ` +
        `${scaled.appliedTwice ?? "?"} records applied twice (${JSON.stringify(scaled.processedPerInstance)} processed, ${scaled.recordsOnTopics} on the topics, ${scaled.deferred} deferred), ${scaled.rebalancesSeenByFirstInstance} rebalances`,
    );
  }
  return result;
}

/**
 * What scaling the group cost: per step, the longest pause in a partition's commits and the freshness of
 * the records published in the SCALE_WINDOW_MS after it, beside the same before the first step; and
 * the records applied twice over the whole load (every instance's tally from its "stopped" line).
 */
function scaleCost(
  plan: readonly ScaleStep[],
  scaledAt: readonly number[],
  seen: {
    readonly from: number;
    readonly until: number;
    readonly commitAdvances: ReadonlyMap<string, readonly number[]>;
    readonly settled: readonly Settled[];
    readonly summarize: (values: readonly Settled[]) => ScaleResult["before"]["records"];
    readonly rebalances: number;
    readonly tallies: readonly (Record<string, number> | undefined)[];
    readonly recordsOnTopics: number;
  },
): ScaleResult {
  const window = (from: number, to: number) => ({
    commitPauseSeconds: round(
      Math.max(0, ...[...seen.commitAdvances.values()].map((advances) => longestCommitPause(advances, from, to))) /
        1000,
      2,
    ),
    records: seen.summarize(settledBetween(seen.settled, from, to)),
  });
  const final = (tally: Record<string, number> | undefined) =>
    tally === undefined
      ? null
      : Object.entries(tally).reduce((sum, [fate, n]) => sum + (fate === "deferred" ? 0 : n), 0);
  const processed = seen.tallies.map(final);
  const complete = processed.every((n) => n !== null);
  return {
    plan,
    windowSeconds: SCALE_WINDOW_MS / 1000,
    before: window(seen.from, scaledAt[0] ?? seen.until),
    steps: scaledAt.map((at, i) => ({
      atSeconds: plan[i + 1]?.atSeconds ?? 0,
      instances: plan[i + 1]?.instances ?? 0,
      ...window(at, Math.min(at + SCALE_WINDOW_MS, seen.until)),
    })),
    rebalancesSeenByFirstInstance: seen.rebalances,
    recordsOnTopics: seen.recordsOnTopics,
    processedPerInstance: processed,
    deferred: seen.tallies.reduce((sum, tally) => sum + (tally?.deferred ?? 0), 0),
    appliedTwice: complete ? recordsAppliedTwice(processed as number[], seen.recordsOnTopics) : null,
  };
}

/**
 * After the drain, the findings of the window's last escalations are still waiting for their judge
 * (the allowed lateness past their observed_at, then a round): wait until that horizon has passed and
 * the findings topic holds every finding the projector recorded (agp_findings_total), at most a
 * minute past the horizon. Nothing to wait for with FINDINGS_ENABLED=false.
 */
async function awaitFindings(
  child: { scrape(): Promise<Sample[]> },
  reader: { readonly findings: readonly { findingId: string }[]; stop(): Promise<void> },
  env: Readonly<Record<string, string>>,
  measureUntil: number,
): Promise<{ waitedSeconds: number; recordedByProjector: number; complete: boolean; allowedLatenessMs: number }> {
  const allowedLatenessMs = Number(env.FINDINGS_ALLOWED_LATENESS_MS ?? 5_000);
  const started = Date.now();
  let recordedByProjector = 0;
  let complete = env.FINDINGS_ENABLED === "false";
  const horizon = measureUntil + allowedLatenessMs + Number(env.FINDINGS_JUDGE_INTERVAL_MS ?? 1_000) + 2_000;
  while (!complete && Date.now() < horizon + 60_000) {
    try {
      recordedByProjector = total(await child.scrape(), "agp_findings_total");
    } catch {
      // the next scrape
    }
    const read = new Set(reader.findings.map((finding) => finding.findingId)).size;
    complete = Date.now() >= horizon && read >= recordedByProjector;
    if (!complete) await sleep(500);
  }
  await reader.stop();
  return { waitedSeconds: round((Date.now() - started) / 1000, 1), recordedByProjector, complete, allowedLatenessMs };
}
