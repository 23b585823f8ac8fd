import type { UpstreamMark } from "../ports.js";
import { HEADER, headerNumber, headerString, type Stream } from "../topics.js";

/**
 * Every retry the projector makes, in one place: the backoff they all wait by (deferred records,
 * batches failing with an unrecognised error, paused partitions, Neo4j write transactions), the
 * attempt and not-before rules of records in a retry topic, and the window after which a deferred
 * record is dead-lettered.
 */

export interface RetryPolicy {
  /** 0: no cap; the window alone decides. */
  readonly maxAttempts: number;
  readonly maxAgeMs: number;
  readonly backoffMs: number;
  readonly backoffMaxMs: number;
}

/** Which streams' records a deferred record of each stream may be waiting for. */
export const UPSTREAM_OF: Readonly<Record<Stream, readonly Stream[]>> = {
  "registry-mutation": [],
  "outcome-created": ["registry-mutation"],
  "escalation-edge": ["registry-mutation", "outcome-created"],
};

/**
 * The wait before retry number `attempt` (1-based): `firstMs`, doubled per attempt, capped at `maxMs`.
 * The only backoff formula in the service.
 */
export function backoffMs(attempt: number, firstMs: number, maxMs: number = Number.POSITIVE_INFINITY): number {
  return Math.min(firstMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 40), maxMs);
}

/** The wait before deferral number `attempt` (1-based): exponential from backoffMs, capped at backoffMaxMs. */
export function deferralDelayMs(attempt: number, policy: RetryPolicy): number {
  return backoffMs(attempt, policy.backoffMs, policy.backoffMaxMs);
}

type Headers = Readonly<Record<string, Buffer | undefined>>;

/**
 * What a record's headers say about its way through the retry topics, decoded once (retryEnvelope)
 * and read by every decision about it: whether it is due, its next deferral, its window's verdict.
 */
export interface RetryEnvelope {
  /** How often it was deferred before: 0 for a record from its source topic. */
  readonly attempts: number;
  /** When it falls due; undefined: at once. */
  readonly notBefore: number | undefined;
  /** When it was first deferred; undefined: never. */
  readonly firstSeen: number | undefined;
  /** The upstream mark taken when its window ran out (decideDeferral); an unreadable one counts as none. */
  readonly mark: UpstreamMark | undefined;
  /** It names a source record: a late copy, come through a retry or dead-letter topic. */
  readonly late: boolean;
}

export function retryEnvelope(headers: Headers): RetryEnvelope {
  return {
    attempts: headerNumber(headers, HEADER.attempt) ?? 0,
    notBefore: headerNumber(headers, HEADER.notBefore),
    firstSeen: headerNumber(headers, HEADER.firstSeen),
    mark: decodeMark(headerString(headers, HEADER.upstreamMark)),
    late: headers[HEADER.sourceOffset] !== undefined,
  };
}

/** Whether a record read from a retry topic is due; one without a not-before time is due at once. */
export function isDue(envelope: RetryEnvelope, now: number): boolean {
  return (envelope.notBefore ?? 0) <= now;
}

/** When a record was first deferred; one never deferred counts as first seen `now`. */
export function firstSeenOf(envelope: RetryEnvelope, now: number): number {
  return envelope.firstSeen ?? now;
}

/**
 * A record deferred (again) at `now`: its attempt number (1 for a record from its source topic), when
 * it was first deferred, and when it falls due.
 */
export function nextDeferral(
  envelope: RetryEnvelope,
  now: number,
  policy: RetryPolicy,
): { attempt: number; firstSeen: number; notBefore: number } {
  const attempt = envelope.attempts + 1;
  return { attempt, firstSeen: firstSeenOf(envelope, now), notBefore: now + deferralDelayMs(attempt, policy) };
}

export type DeferralDecision =
  | { readonly kind: "retry"; readonly mark?: UpstreamMark }
  | { readonly kind: "final-check" }
  | { readonly kind: "dead-letter" };

/**
 * What becomes of a record that was deferred again. Within its window (RETRY_MAX_AGE_MS from the first
 * deferral, and RETRY_MAX_ATTEMPTS when set) it is retried. Past it, it is not dead-lettered while the
 * record it waits for may still be on its way: a backlog, a replay or an outage can hold the upstream
 * topic back for longer than any window. So the first time the window is found past, the upstream
 * topics' end offsets are marked ("final-check": the caller reads them and retries with the mark);
 * the record is dead-lettered only by an attempt that started once the group had applied the upstream
 * topics up to that mark, i.e. after everything published before the window ran out was applied.
 * The mark stays fixed, so steady upstream traffic cannot postpone the verdict for ever.
 *
 * The upstream may itself be deferred: an escalation waits on an outcome that waits on its agent.
 * Applying the upstream up to the mark then includes deferring that outcome again, to a retry offset
 * past the mark, where it can still apply. So a mark reached while the upstream's retry topics have
 * grown since it was taken (`retryEndsAtStart` past the mark) is not a verdict: the record takes a new
 * mark ("final-check") and waits for what was deferred meanwhile — until a second window has passed,
 * by when everything deferred upstream before its first mark is past its own window and waits only
 * for the registry, which is never deferred. Unrelated upstream deferrals therefore postpone the
 * verdict by one window at most.
 *
 * `committedAtStart` is the group's upstream position and `retryEndsAtStart` the end offsets of the
 * upstream's retry topics, both read before the attempt's transaction ran.
 */
export function decideDeferral(input: {
  readonly attempt: number;
  readonly firstSeen: number;
  readonly now: number;
  readonly mark: UpstreamMark | undefined;
  readonly committedAtStart: UpstreamMark | undefined;
  readonly retryEndsAtStart?: UpstreamMark | undefined;
  readonly policy: RetryPolicy;
}): DeferralDecision {
  const { attempt, firstSeen, now, mark, committedAtStart, retryEndsAtStart, policy } = input;
  const pastWindows = (windows: number) =>
    now - firstSeen >= windows * policy.maxAgeMs || (policy.maxAttempts > 0 && attempt >= windows * policy.maxAttempts);
  if (mark !== undefined) {
    if (committedAtStart === undefined || !upstreamReached(committedAtStart, mark)) return { kind: "retry", mark };
    return retryEndsAtStart !== undefined && deferredSince(mark, retryEndsAtStart) && !pastWindows(2)
      ? { kind: "final-check" }
      : { kind: "dead-letter" };
  }
  return pastWindows(1) ? { kind: "final-check" } : { kind: "retry" };
}

/** Whether any of the upstream's retry partitions has records past the mark: something was deferred since. */
export function deferredSince(mark: UpstreamMark, retryEnds: UpstreamMark): boolean {
  return Object.entries(retryEnds).some(([partition, end]) => end > (mark[partition] ?? 0));
}

/** Whether the group's positions have reached every offset of the mark. */
export function upstreamReached(committed: UpstreamMark, mark: UpstreamMark): boolean {
  return Object.entries(mark).every(([partition, offset]) => (committed[partition] ?? 0) >= offset);
}

export function encodeMark(mark: UpstreamMark): string {
  return JSON.stringify(mark);
}

/** A mark from a header; anything unreadable counts as no mark (the window is checked afresh). */
export function decodeMark(text: string | undefined): UpstreamMark | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
    const entries = Object.entries(parsed as Record<string, unknown>);
    if (!entries.every(([, offset]) => typeof offset === "number" && Number.isFinite(offset))) return undefined;
    return Object.fromEntries(entries) as UpstreamMark;
  } catch {
    return undefined;
  }
}
