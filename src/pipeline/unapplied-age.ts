/**
 * The age of the oldest record fetched and not yet applied: the number a freshness objective is
 * written against. The histogram of applied records' freshness only learns of a stall once the stuck
 * batch finally commits; this age grows while it is stuck. Records not fetched yet are not in it (the
 * consumer-lag gauge counts them).
 */

/**
 * The oldest Kafka timestamp (ms) among records fetched and not yet applied, or undefined when there
 * are none. A record without a usable timestamp counts from `fetchedAtMs`, when we saw it first.
 */
export function oldestUnapplied(records: readonly { timestamp: string }[], fetchedAtMs: number): number | undefined {
  let oldest: number | undefined;
  for (const { timestamp } of records) {
    const ms = Number(timestamp);
    const at = Number.isFinite(ms) && ms >= 0 ? ms : fetchedAtMs;
    if (oldest === undefined || at < oldest) oldest = at;
  }
  return oldest;
}

/**
 * Seconds from `sinceMs` (the oldest unapplied record's timestamp, a deferred record's first sight) to
 * `nowMs`: 0 when nothing waits, and never negative (a producer's clock may run ahead of ours).
 */
export function ageSeconds(sinceMs: number | null | undefined, nowMs: number): number {
  if (sinceMs === null || sinceMs === undefined) return 0;
  return Math.max(0, nowMs - sinceMs) / 1000;
}
