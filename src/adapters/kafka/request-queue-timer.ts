import { createRequire } from "node:module";

/**
 * kafkajs 2.2.4's request queue (one per broker connection) keeps a 1 ms timer running for as long as
 * the connection lives: after every answered request it schedules its next look at the queue of
 * throttled requests at `throttledUntil - now`, a negative delay that Node turns into 1 ms, even when
 * nothing is queued, and each look schedules the next (kafkajs issues 1556, 1604 and 1704, fixed
 * upstream by an unreleased pull request, 1667). With it an idle instance spent 0.06-0.07 of a core,
 * without it 0.04, and every instance added to a group pays that again, whatever its share of the
 * records (bench/HISTORY.md, fortieth round).
 *
 * The replacement schedules a look only while requests wait, as kafkajs meant to: at the end of a
 * throttle, else after its 10 ms interval. Requests wait only while the broker throttles the client
 * or the connection has its maximum in flight, and both ends are already handled elsewhere in the
 * queue: an answered or timed-out request looks at the queue again, and `push` schedules a look when
 * it queues one.
 */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

/** The text of the method this replaces, as kafkajs 2.2.4 has it: a different one is left alone. */
const REPLACED = "let scheduleAt = this.throttledUntil - Date.now()";

function scheduleOnlyWhilePending(this: RequestQueue): void {
  if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
  const throttledFor = this.throttledUntil - Date.now();
  this.throttleCheckTimeoutId = setTimeout(
    () => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    },
    throttledFor > 0 ? throttledFor : CHECK_PENDING_REQUESTS_INTERVAL_MS,
  );
}

/**
 * Replaces the request queue's scheduling in the kafkajs this process loads, once. Returns whether the
 * queue is now the fixed one: false when kafkajs's method is not the one this was written against (a
 * kafkajs that changed it is used as it is).
 */
export function stopIdleRequestQueueTimers(): boolean {
  const RequestQueue = createRequire(import.meta.url)("kafkajs/src/network/requestQueue/index.js") as {
    prototype: RequestQueue;
  };
  const proto = RequestQueue.prototype;
  if (proto.scheduleCheckPendingRequests === scheduleOnlyWhilePending) return true;
  if (!String(proto.scheduleCheckPendingRequests).includes(REPLACED)) return false;
  proto.scheduleCheckPendingRequests = scheduleOnlyWhilePending;
  return true;
}
