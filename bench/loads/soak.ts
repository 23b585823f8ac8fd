/** A soak at a steady produce rate: RSS and lag every 10 s, and their trend. */

import { publishEvents } from "../../src/adapters/kafka/event-publisher.js";
import { fetchLag } from "../../src/adapters/kafka/group-admin.js";
import type { EscalationEdge, OutcomeCreated, ProjectorEvent } from "../../src/model/events.js";
import { consumedTopics } from "../../src/topics.js";
import { generateEventLog, prng } from "../../workload/generate.js";
import { round, SEED, SOAK_MINUTES, SOAK_RATE, say, sleep } from "../args.js";
import { startProjector } from "../lib/projector.js";
import { slope } from "../lib/prom.js";
import { type BenchRun, loadTopics, sourceTopicEnv } from "./run.js";

export async function runSoak(run: BenchRun) {
  const { prefix, admin, producer, registry, log, size, baseEnv } = run;
  const { names: soakNames, ids: soakIds } = await loadTopics(run, "soak");
  await publishEvents(producer, registry, soakIds, soakNames, log.registry, () => {}, 5000);
  const seconds = SOAK_MINUTES * 60;
  const outcomeRate = Math.max(1, Math.round(SOAK_RATE * 0.8));
  const escalationRate = Math.max(1, SOAK_RATE - outcomeRate);
  const soakLog = generateEventLog(SEED + 3, { ...size, outcomes: outcomeRate * seconds, escalations: 0 });
  const random = prng(SEED + 4);
  const group = `${prefix}-soak`;
  const child = startProjector(
    {
      ...baseEnv,
      CONSUMER_GROUP: group,
      ...sourceTopicEnv(soakNames),
    },
    "soak",
  );
  await child.joinedAt;
  say(`soak: ${SOAK_MINUTES} min at ${SOAK_RATE} records/s (${outcomeRate} outcomes + ${escalationRate} escalations)`);
  const points: { minute: number; rssMiB: number; lag: number }[] = [];
  const soakStart = Date.now();
  const recent: EscalationEdge[] = [];
  let nextSample = soakStart;
  for (let second = 0; second < seconds; second++) {
    const batch: ProjectorEvent[] = soakLog.outcomes.slice(second * outcomeRate, (second + 1) * outcomeRate);
    // Escalations between outcomes published 2 to 30 seconds earlier; 10% are redelivered copies.
    const low = Math.max(0, second - 30) * outcomeRate;
    const high = Math.max(0, second - 2) * outcomeRate;
    if (high - low > 1) {
      for (let n = 0; n < escalationRate; n++) {
        if (recent.length > 0 && random() < 0.1) {
          batch.push({ ...(recent[Math.floor(random() * recent.length)] as EscalationEdge) });
          continue;
        }
        const source = soakLog.outcomes[low + Math.floor(random() * (high - low))] as OutcomeCreated;
        const target = soakLog.outcomes[low + Math.floor(random() * (high - low))] as OutcomeCreated;
        if (source.outcome_id === target.outcome_id) continue;
        const edge: EscalationEdge = {
          kind: "escalation-edge",
          event_id: `soak-${second}-${n}`,
          tenant_id: "default",
          source_outcome_id: source.outcome_id,
          target_outcome_id: target.outcome_id,
          observed_at: source.created_at + 1000,
        };
        batch.push(edge);
        recent.push(edge);
        if (recent.length > 2000) recent.shift();
      }
    }
    await publishEvents(producer, registry, soakIds, soakNames, batch, () => {}, 5000);
    if (Date.now() >= nextSample) {
      const lags = await fetchLag(admin, group, consumedTopics(soakNames));
      const rss = child.rssKiB();
      points.push({
        minute: round((Date.now() - soakStart) / 60_000, 3),
        rssMiB: round((rss?.rss ?? 0) / 1024),
        lag: lags.reduce((s, l) => s + l.lag, 0),
      });
      nextSample += 10_000;
      const last = points.at(-1);
      if (points.length % 6 === 1) say(`  soak ${last?.minute} min: RSS ${last?.rssMiB} MiB, lag ${last?.lag}`);
    }
    const wait = soakStart + (second + 1) * 1000 - Date.now();
    if (wait > 0) await sleep(wait);
  }
  const drainStart = Date.now();
  for (;;) {
    const lags = await fetchLag(admin, group, consumedTopics(soakNames));
    if (lags.every((l) => l.lag === 0) || Date.now() - drainStart > 120_000) break;
    await sleep(250);
  }
  const drainSeconds = (Date.now() - drainStart) / 1000;
  const peak = child.rssKiB();
  await child.stop();
  const warm = points.filter((p) => p.minute >= 1);
  const rssSlope = slope(warm.map((p) => ({ x: p.minute, y: p.rssMiB })));
  const lagSlope = slope(warm.map((p) => ({ x: p.minute, y: p.lag })));
  const third = Math.max(1, Math.floor(warm.length / 3));
  const avg = (list: typeof warm) => list.reduce((s, p) => s + p.rssMiB, 0) / Math.max(1, list.length);
  const result = {
    minutes: SOAK_MINUTES,
    rate: SOAK_RATE,
    samples: points.length,
    rssSlopeMiBPerMinute: round(rssSlope, 2),
    rssFirstThirdMiB: round(avg(warm.slice(0, third))),
    rssLastThirdMiB: round(avg(warm.slice(-third))),
    rssPeakMiB: round((peak?.hwm ?? 0) / 1024),
    lagSlopePerMinute: round(lagSlope, 1),
    lagMax: Math.max(0, ...points.map((p) => p.lag)),
    drainSeconds: round(drainSeconds, 1),
    rssFlat: Math.abs(rssSlope) < 1,
    lagFlat: Math.abs(lagSlope) < SOAK_RATE * 0.05,
    errors: child.errors.slice(0, 10),
  };
  say(
    `soak: RSS slope ${result.rssSlopeMiBPerMinute} MiB/min (${result.rssFlat ? "flat" : "NOT flat"}), ` +
      `lag slope ${result.lagSlopePerMinute}/min (max ${result.lagMax}), drained in ${result.drainSeconds} s`,
  );
  return { soak: result, soakPoints: points };
}
