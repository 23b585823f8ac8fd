import type { Stream, UpstreamMark } from "../ports.js";

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

/** The wait before retry number `attempt` (1-based): exponential from backoffMs, capped at backoffMaxMs. */
export function deferralDelayMs(attempt: number, policy: RetryPolicy): number {
  return Math.min(policy.backoffMs * 2 ** Math.min(attempt - 1, 40), policy.backoffMaxMs);
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
 * `committedAtStart` is the group's upstream position read before the attempt's transaction ran.
 */
export function decideDeferral(input: {
  readonly attempt: number;
  readonly firstSeen: number;
  readonly now: number;
  readonly mark: UpstreamMark | undefined;
  readonly committedAtStart: UpstreamMark | undefined;
  readonly policy: RetryPolicy;
}): DeferralDecision {
  const { attempt, firstSeen, now, mark, committedAtStart, policy } = input;
  const expired = now - firstSeen >= policy.maxAgeMs || (policy.maxAttempts > 0 && attempt >= policy.maxAttempts);
  if (mark !== undefined) {
    return committedAtStart !== undefined && upstreamReached(committedAtStart, mark)
      ? { kind: "dead-letter" }
      : { kind: "retry", mark };
  }
  return expired ? { kind: "final-check" } : { kind: "retry" };
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
