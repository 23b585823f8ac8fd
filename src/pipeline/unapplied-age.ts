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
  return oldestUnappliedFrom(records, fetchedAtMs)(0);
}

/**
 * `oldestUnapplied` of each tail of `records`: the function returned gives that of
 * `records.slice(start)`. One pass over the batch, however many sub-batches it is applied in.
 */
export function oldestUnappliedFrom(
  records: readonly { timestamp: string }[],
  fetchedAtMs: number,
): (start: number) => number | undefined {
  const oldest = new Array<number>(records.length);
  let min = Number.POSITIVE_INFINITY;
  for (let i = records.length - 1; i >= 0; i--) {
    const ms = Number((records[i] as { timestamp: string }).timestamp);
    min = Math.min(min, Number.isFinite(ms) && ms >= 0 ? ms : fetchedAtMs);
    oldest[i] = min;
  }
  return (start) => oldest[start];
}

/**
 * Seconds from `sinceMs` (the oldest unapplied record's timestamp, a deferred record's first sight) to
 * `nowMs`: 0 when nothing waits, and never negative (a producer's clock may run ahead of ours).
 */
export function ageSeconds(sinceMs: number | null | undefined, nowMs: number): number {
  if (sinceMs === null || sinceMs === undefined) return 0;
  return Math.max(0, nowMs - sinceMs) / 1000;
}
