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
import type { EscalationEdge, OutcomeCreated } from "../../src/model/events.js";
import type { Stream } from "../../src/topics.js";
import { generateEventLog, prng } from "../../workload/generate.js";
import { FRESHNESS_SECONDS, FRESHNESS_WARMUP, nullable, round, SEED, say, sleep } from "../args.js";
import { cpuMeter } from "../lib/cpu.js";
import { wipeGraph } from "../lib/direct.js";
import {
  CohortTracker,
  declaredTargets,
  freshnessTimeline,
  gaugeMax,
  histogramMaxBound,
  RecentByAgent,
  recordsDue,
  type Settled,
  sampleDelta,
  weightedQuantile,
} from "../lib/freshness.js";
import { framedEncoder } from "../lib/load-producer.js";
import { startProjector } from "../lib/projector.js";
import { histogramQuantile, type Sample, statementTimes, total, totalsBy } from "../lib/prom.js";
import type { FreshnessResult } from "../results.js";
import { type BenchRun, loadTopics, sourceTopicEnv } from "./run.js";

/** Records per produce request: publishEvents' chunk, under a partition's 1 MiB message.max.bytes. */
const REQUEST_RECORDS = 2000;

export async function runFreshness(
  run: BenchRun,
  runNo: number,
  rate: number,
  fractionOfCapacity: number | null,
  freshnessCapacity: number | null,
): Promise<FreshnessResult> {
  const { prefix, admin, producer, registry, driver, database, log, size, baseEnv, servers } = run;
  const label = `fresh${runNo}`;
  const { names: freshNames, ids: freshIds } = await loadTopics(run, label);
  await wipeGraph(driver, database);
  await publishEvents(producer, registry, freshIds, freshNames, log.registry, () => {}, 5000);
  const pool = generateEventLog(SEED + 5 + runNo, { ...size, outcomes: 20_000, escalations: 0 }).outcomes;
  const random = prng(SEED + 20 + runNo);
  const loadProducer = run.openLoadProducer();
  const encode = framedEncoder(freshIds);
  const group = `${prefix}-${label}`;
  const child = startProjector(
    {
      ...baseEnv,
      CONSUMER_GROUP: group,
      ...sourceTopicEnv(freshNames),
      RETRY_TOPIC_SUFFIX: `.retry-${label}`,
      DLQ_TOPIC_SUFFIX: `.dlq-${label}`,
    },
    label,
  );
  await child.joinedAt;
  for (const started = Date.now(); Date.now() - started < 120_000; ) {
    const lags = await fetchLag(admin, group, [freshNames.source["registry-mutation"]]);
    if (lags.length > 0 && lags.every((l) => l.lag === 0)) break;
    await sleep(250);
  }
  const warmupSeconds = FRESHNESS_WARMUP;
  const escalationShare = 0.2;
  say(
    `freshness ${runNo}: ${rate} records/s${fractionOfCapacity !== null ? ` (${fractionOfCapacity} of ${freshnessCapacity} measured)` : ""}, ` +
      `${warmupSeconds} s warm-up then ${FRESHNESS_SECONDS} s measured, published with ${loadProducer.kind}; load average ${os
        .loadavg()
        .map((l) => round(l, 2))
        .join(" ")}`,
  );
  const tracker = new CohortTracker();
  const measured = [freshNames.source["outcome-created"], freshNames.source["escalation-edge"]];
  // Outcomes published in the last 30 s, oldest first: [head, eligibleEnd) were published 2-30 s ago.
  const recent: { id: string; at: number; agent: string }[] = [];
  const byAgent = new RecentByAgent();
  const declared = declaredTargets(log.registry);
  let declaredDrawn = 0;
  let randomDrawn = 0;
  let head = 0;
  let eligibleEnd = 0;
  const redelivery: EscalationEdge[] = [];
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
  const poller = (async () => {
    while (polling) {
      try {
        const committed = await admin.fetchOffsets({ groupId: group, topics: measured });
        const map = new Map<string, number>();
        for (const { topic, partitions } of committed)
          for (const p of partitions) map.set(`${topic}/${p.partition}`, Number(p.offset));
        tracker.settle(map, Date.now());
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
  for (let tick = 0; ; tick++) {
    const tickStart = loadStart + tick * 100;
    if (tickStart >= measureUntil) break;
    if (!measuring && tickStart >= measureFrom) {
      before = await child.scrape();
      meter = cpuMeter({
        ...servers,
        projector: child.pid,
        ...(loadProducer.pid ? { "load producer": loadProducer.pid } : {}),
      });
      measuring = true;
    }
    const elapsed = Date.now() - loadStart;
    // Records due by now minus those already sent: a slow send is caught up by the next tick.
    const due = recordsDue(rate, Math.min(elapsed, measureUntil - loadStart)) - k;
    const now = Date.now();
    const batch: (OutcomeCreated | EscalationEdge)[] = [];
    // Escalations between outcomes published 2 to 30 s earlier (10% redelivered copies), once
    // there is such a history; the rest outcomes, stamped with the time they are published.
    while (head < recent.length && (recent[head] as { at: number }).at < now - 30_000) head++;
    eligibleEnd = Math.max(eligibleEnd, head);
    while (eligibleEnd < recent.length && (recent[eligibleEnd] as { at: number }).at <= now - 2_000) eligibleEnd++;
    if (head > 100_000) {
      recent.splice(0, head);
      eligibleEnd -= head;
      head = 0;
    }
    const eligible = eligibleEnd - head;
    for (let i = 0; i < due; i++) {
      if (eligible > 1 && random() < escalationShare) {
        if (redelivery.length > 0 && random() < 0.1) {
          batch.push({ ...(redelivery[Math.floor(random() * redelivery.length)] as EscalationEdge) });
          continue;
        }
        const source = recent[head + Math.floor(random() * eligible)] as (typeof recent)[number];
        // As in the log the capacity was measured on: all but undeclaredRatio of the escalations
        // follow a path the source's agent declares, so only those few are governance findings.
        const targets = random() >= size.undeclaredRatio ? declared.get(source.agent) : undefined;
        const declaredTarget = targets
          ? byAgent.pick(targets[Math.floor(random() * targets.length)] as string, now - 30_000, now - 2_000, random)
          : undefined;
        const target = declaredTarget ?? (recent[head + Math.floor(random() * eligible)] as { id: string }).id;
        if (declaredTarget !== undefined) declaredDrawn += 1;
        else randomDrawn += 1;
        if (source.id !== target) {
          const edge: EscalationEdge = {
            kind: "escalation-edge",
            event_id: `${label}-e${k}-${i}`,
            tenant_id: "default",
            source_outcome_id: source.id,
            target_outcome_id: target,
            observed_at: now,
          };
          batch.push(edge);
          redelivery.push(edge);
          if (redelivery.length > 2000) redelivery.shift();
          continue;
        }
      }
      const base = pool[(k + i) % pool.length] as OutcomeCreated;
      const id = `${base.outcome_id}-${label}-${k + i}`;
      batch.push({ ...base, outcome_id: id, event_id: `${base.event_id}-${label}-${k + i}`, created_at: now });
      recent.push({ id, at: now, agent: base.agent_id });
      byAgent.add(base.agent_id, id, now);
    }
    k += due;
    // In sends of at most 2,000 records, as publishEvents sends them: a tick that fell behind would
    // otherwise put more than a partition's 1 MiB message.max.bytes in one record batch.
    for (let start = 0; start < batch.length; start += REQUEST_RECORDS) {
      const records = batch.slice(start, start + REQUEST_RECORDS).map((event) => ({
        topic: freshNames.source[streamOf(event)],
        key: keyOf(event),
        value: encode(event),
        timestamp: now,
      }));
      for (const placed of await loadProducer.send(records))
        if (measuring) tracker.add(placed.topic, placed.partition, placed.firstOffset, now);
    }
    if (measuring) published += batch.length;
    if (Date.now() - lastReport > 15_000) {
      lastReport = Date.now();
      say(`  ${label}: ${k} published, ${tracker.unsettledCohorts()} produce request(s) not yet committed`);
    }
    const wait = loadStart + (tick + 1) * 100 - Date.now();
    if (wait > 0) await sleep(wait);
  }
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
  const peak = child.rssKiB();
  await child.stop();
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
  const timeline = {
    "outcome-created": freshnessTimeline(outcomesSettled, measureFrom, FRESHNESS_SECONDS),
    "escalation-edge": freshnessTimeline(escalationsSettled, measureFrom, FRESHNESS_SECONDS),
  };
  const result: FreshnessResult = {
    rate,
    fractionOfCapacity,
    capacity: freshnessCapacity,
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
    escalationsOnDeclaredPaths: round(declaredDrawn / Math.max(1, declaredDrawn + randomDrawn), 3),
    metricsScrapeErrors: scrapeErrors,
    deferred: total(window, "agp_records_total", { result: "deferred" }),
    transactionRetries: total(window, "agp_transaction_retries_total"),
    transactionRetriesBy: totalsBy(window, "agp_transaction_retries_total", ["pattern", "reason"]),
    neo4jStatements: statementTimes(window),
    transactions: total(window, "agp_batch_duration_seconds_count"),
    findingsRecorded: total(window, "agp_findings_total"),
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
  say(
    `freshness ${runNo}: seconds of the load whose slowest record took over 1 s — outcomes ${lateSeconds("outcome-created")}; escalations ${lateSeconds("escalation-edge")}`,
  );
  say(
    `freshness ${runNo} at ${rate} records/s (achieved ${result.achievedRate}): ${perStream.join("; ")}; ` +
      `drained in ${result.drainSeconds} s, ${result.deferred} deferred, ${result.transactionRetries} transaction retries ${JSON.stringify(result.transactionRetriesBy)}; ${result.findingsRecorded} findings recorded, ${result.findingsUnpublishedAtEnd} unpublished at the end; CPU ${JSON.stringify(cpuSeconds)} s; ${result.transactions} batches, Neo4j's time per pattern ${JSON.stringify(result.neo4jStatements)}`,
  );
  return result;
}
