/** The projector as N `run` child processes in one group, timed from the first join to zero lag. */
import type { Admin } from "kafkajs";
import { ensureTopics, topicSpecs } from "../../src/adapters/kafka/admin.js";
import { fetchLag, partitionLag } from "../../src/adapters/kafka/group-admin.js";
import { consumedTopics, STREAMS, type Stream, type TopicNames, topicNames } from "../../src/topics.js";
import { PARTITIONS, round, say, sleep } from "../args.js";
import { runAccounting } from "../lib/accounting.js";
import { cpuMeter, cpuSecondsOf } from "../lib/cpu.js";
import { graphFingerprint } from "../lib/direct.js";
import { type ProjectorProcess, startProjector } from "../lib/projector.js";
import { histogramQuantile, type Sample, statementTimes, sumSamples, total, totalsBy } from "../lib/prom.js";
import type { RunResult } from "../results.js";
import type { BenchRun } from "./run.js";

/**
 * Lag every 200 ms, cheaply enough not to slow the run it measures: the source topics' high
 * watermarks are fixed (the workload was published before), so a poll is one committed-offsets
 * request; the retry topics, which can grow, are checked in full every 2 s and before declaring
 * zero lag. Polling everything each time cost the broker and this process ~3 CPU-s per run.
 */
async function lagWatcher(admin: Admin, group: string, runNames: TopicNames) {
  const sources = new Set(Object.values(runNames.source));
  const watermarks = new Map<string, { high: number; low: number }>();
  for (const topic of sources)
    for (const p of await admin.fetchTopicOffsets(topic))
      watermarks.set(`${topic}/${p.partition}`, { high: Number(p.high), low: Number(p.low) });
  let retryLags: { topic: string; partition: number; lag: number }[] = [];
  let retryCheckedAt = 0;
  return {
    async poll() {
      const committed = await admin.fetchOffsets({ groupId: group, topics: [...sources] });
      const sourceLags = committed.flatMap(({ topic, partitions }) =>
        partitions.map((p) => {
          const { high, low } = watermarks.get(`${topic}/${p.partition}`) ?? { high: 0, low: 0 };
          return { topic, partition: p.partition, lag: partitionLag(p.offset, high, low) };
        }),
      );
      const sourcesDone = sourceLags.every((l) => l.lag === 0);
      if (sourcesDone || Date.now() - retryCheckedAt > 2_000) {
        retryLags = (await fetchLag(admin, group, consumedTopics(runNames))).filter((l) => !sources.has(l.topic));
        retryCheckedAt = Date.now();
      }
      return [...sourceLags, ...retryLags];
    },
  };
}

export async function runProjectors(
  run: BenchRun,
  instances: number,
  label: string,
  extraEnv: Record<string, string> = {},
): Promise<RunResult> {
  const { config, admin, prefix, baseEnv, servers, events, counts, driver, database } = run;
  const group = `${prefix}-${label}`;
  const runNames: TopicNames = topicNames({
    ...config.topics,
    scope: config.topics.scope === undefined ? undefined : group,
    retrySuffix: `.retry-${label}`,
    dlqSuffix: `.dlq-${label}`,
  });
  await ensureTopics(
    admin,
    topicSpecs(runNames, { partitions: PARTITIONS, replicationFactor: 1 }).filter(
      (spec) => !Object.values(runNames.source).includes(spec.topic),
    ),
  );
  const env = {
    ...baseEnv,
    CONSUMER_GROUP: group,
    RETRY_TOPIC_SUFFIX: `.retry-${label}`,
    DLQ_TOPIC_SUFFIX: `.dlq-${label}`,
    ...extraEnv,
  };
  const children: ProjectorProcess[] = [];
  for (let n = 0; n < instances; n++) children.push(startProjector(env, `${label}-${n}`));
  const t0 = await Promise.race(children.map((child) => child.joinedAt));
  const meter = cpuMeter({
    ...servers,
    ...Object.fromEntries(children.map((child, n) => [`projector${children.length > 1 ? n + 1 : ""}`, child.pid])),
  });
  // An instance that joins after the first is still starting when the clock starts: what it spends
  // from then to its own join (its start-up's tail, not records) is told apart in the accounting.
  const atStart = children.map((child) => cpuSecondsOf(child.pid));
  const joinedLate = children.map(async (child, n) => {
    const at = await child.joinedAt;
    const cpu = cpuSecondsOf(child.pid);
    const before = atStart[n];
    return {
      afterSeconds: round((at - t0) / 1000, 2),
      cpuSeconds: cpu === null || before === null || before === undefined ? null : round(cpu - before, 2),
    };
  });
  const lastBusy: Record<string, number> = Object.fromEntries(STREAMS.map((s) => [s, t0]));
  const topicsOf = (stream: Stream) => [runNames.source[stream], runNames.retry[stream]];
  let end = 0;
  let lastReport = 0;
  const rssPeak = children.map(() => 0);
  const watch = await lagWatcher(admin, group, runNames);
  for (;;) {
    const lags = await watch.poll();
    const now = Date.now();
    children.forEach((child, n) => {
      rssPeak[n] = Math.max(rssPeak[n] as number, child.rssKiB()?.hwm ?? 0);
    });
    let behind = 0;
    for (const stream of STREAMS) {
      const lag = lags.filter((l) => topicsOf(stream).includes(l.topic)).reduce((s, l) => s + l.lag, 0);
      if (lag > 0) lastBusy[stream] = now;
      behind += lag;
    }
    if (now - lastReport > 10_000) {
      say(`  ${label}: ${behind} record(s) behind after ${round((now - t0) / 1000)} s`);
      lastReport = now;
    }
    if (behind === 0) {
      end = now;
      break;
    }
    if (children.some((child) => child.errors.some((e) => /fatal/.test(e))))
      throw new Error(children.flatMap((c) => c.errors).join("\n"));
    await sleep(200);
  }
  const cpuSeconds = meter.since();
  const scraped = await Promise.all(children.map((child) => child.scrape()));
  const samples: Sample[] = sumSamples(scraped);
  children.forEach((child, n) => {
    rssPeak[n] = Math.max(rssPeak[n] as number, child.rssKiB()?.hwm ?? 0);
  });
  await Promise.all(children.map((child) => child.stop()));
  const seconds = (end - t0) / 1000;
  const records = events.length;
  const perTopic = Object.fromEntries(
    STREAMS.map((stream) => {
      const s = ((lastBusy[stream] as number) - t0) / 1000 + 0.2;
      return [
        stream,
        { records: counts[stream], seconds: round(s, 2), recordsPerSecond: Math.round(counts[stream] / s) },
      ];
    }),
  );
  const ms = (v: number | null) => (v === null ? null : round(v * 1000, 1));
  const byStream = (q: number) =>
    Object.fromEntries(
      STREAMS.map((stream) => [stream, ms(histogramQuantile(samples, "agp_batch_duration_seconds", q, { stream }))]),
    );
  const result: RunResult = {
    instances,
    seconds: round(seconds, 2),
    records,
    recordsPerSecond: Math.round(records / seconds),
    perTopic,
    batchP50Ms: ms(histogramQuantile(samples, "agp_batch_duration_seconds", 0.5)),
    batchP99Ms: ms(histogramQuantile(samples, "agp_batch_duration_seconds", 0.99)),
    batchP50MsByStream: byStream(0.5),
    batchP99MsByStream: byStream(0.99),
    transactions: total(samples, "agp_batch_duration_seconds_count"),
    neo4jStatements: statementTimes(samples),
    transactionRetries: total(samples, "agp_transaction_retries_total"),
    transactionRetriesBy: totalsBy(samples, "agp_transaction_retries_total", ["pattern", "reason"]),
    deferred: total(samples, "agp_records_total", { result: "deferred" }),
    deadLettered: total(samples, "agp_records_total", { result: "dead-lettered" }),
    rebalances: total(samples, "agp_rebalances_total"),
    peakRssMiB: rssPeak.map((kib) => round(kib / 1024)),
    fingerprint: await graphFingerprint(driver, database),
    errors: children.flatMap((child) => child.errors).slice(0, 10),
    cpuSeconds,
    accounting: runAccounting(
      samples,
      cpuSeconds,
      records,
      Object.values(runNames.retry),
      await Promise.all(joinedLate),
    ),
  };
  const perRecord = result.accounting?.cpuSecondsPerRecord;
  say(
    `projector ×${instances}: ${result.recordsPerSecond} rec/s over ${result.seconds} s; batch p50 ${result.batchP50Ms} ms, ` +
      `p99 ${result.batchP99Ms} ms; ${result.transactions} tx, ${result.transactionRetries} retries ${JSON.stringify(result.transactionRetriesBy)}, ` +
      `${result.deferred} deferred; Neo4j's time per pattern ${JSON.stringify(result.neo4jStatements)}; peak RSS ${result.peakRssMiB.join("/")} MiB; CPU ${JSON.stringify(cpuSeconds)} s; ` +
      `CPU µs/record ${round((perRecord?.total ?? Number.NaN) * 1e6)} (Neo4j ${round((perRecord?.neo4j ?? Number.NaN) * 1e6)})`,
  );
  return result;
}
