import { setTimeout as delay } from "node:timers/promises";
import { errorMessage } from "../../errors.js";
import {
  admitBefore,
  type EndSample,
  type HoldLimits,
  holdDecision,
  mightRelease,
  overdueLag,
  type UpstreamPartition,
} from "../../pipeline/catch-up.js";
import { type Clock, type Logger, systemClock } from "../../ports.js";
import type { Stream, TopicNames } from "../../topics.js";
import type { PartitionLag } from "./lag-monitor.js";

/** Re-check period while nothing is held, and while something is. */
export const IDLE_CHECK_MS = 1_000;
export const HOLDING_CHECK_MS = 250;
/**
 * How long each partition's end-offset looks are kept: beyond the hold's window, they say up to when
 * an upstream stream that is behind has been applied (catch-up.ts appliedThrough).
 */
const LOOKS_KEPT_MS = 300_000;

/** Waits `ms`; rejects when `signal` aborts (the hold stopped). */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

const realSleep: Sleep = (ms, signal) => delay(ms, undefined, { signal });

export interface CatchUpHold {
  isHeld(stream: Stream): boolean;
  /**
   * A held stream's records written before this time (ms) may be applied all the same: what they
   * wait on is applied. +Infinity for a stream not held; -Infinity when nothing is known.
   */
  admitsBefore(stream: Stream): number;
  /** A batch of this stream was committed: re-check at once if a stream waits on it. */
  committed(stream: Stream): void;
  /** Who to tell which streams a check has just released. */
  onLifted(listener: (streams: Stream[]) => void): void;
  /** Who to tell that a stream still held now admits its records written before a later time. */
  onAdvanced(listener: (stream: Stream, before: number) => void): void;
  /** This instance's own view of the upstream lags, a lower bound on the group's (see mightRelease). */
  useLocalLag(lowerBound: () => Readonly<Record<Stream, number>>): void;
  /** The first check, before the consumer starts, then the schedule. */
  start(): Promise<void>;
  stop(): void;
}

const unknownAdmits: Readonly<Record<Stream, number>> = {
  "registry-mutation": Number.NEGATIVE_INFINITY,
  "outcome-created": Number.NEGATIVE_INFINITY,
  "escalation-edge": Number.NEGATIVE_INFINITY,
};

/**
 * Dependency-aware catch-up (pipeline/catch-up.ts decides from the lag): outcomes wait behind a
 * registry backlog and escalations behind an outcome backlog, judged from the whole group's committed
 * offsets and the end offsets seen over the last `limits.seconds` (what tells a backlog from records
 * in flight). A held stream is not stopped outright: its records written before the time up to which
 * what they wait on has been applied go ahead (admitsBefore), and each check that moves that time on
 * says so (onAdvanced), so the held partitions waiting on it are fetched again. Checked every second,
 * every quarter second while something is held, and after each commit upstream of a held stream, so
 * that the next stage starts as soon as the group's lag allows it.
 * Overlapping requests for a check share one, followed by at most one more. While the instance's own
 * partitions still show enough backlog to keep everything held, those frequent checks are answered
 * without the broker (a check is a dozen admin requests); the broker is still asked every second.
 * `lag` asks the broker for the group's lag (the service's one LagMonitor, whose answers also feed
 * the lag gauges). The clock and the sleep between checks are injectable, for tests.
 */
export function createCatchUpHold(
  lag: () => Promise<readonly PartitionLag[]>,
  names: TopicNames,
  limits: HoldLimits,
  logger: Logger,
  timing: { readonly clock?: Clock; readonly sleep?: Sleep } = {},
): CatchUpHold {
  const clock = timing.clock ?? systemClock;
  const sleep = timing.sleep ?? realSleep;
  const stopping = new AbortController();
  let held = new Set<Stream>();
  let lifted: (streams: Stream[]) => void = () => {};
  let advanced: (stream: Stream, before: number) => void = () => {};
  let admits: Readonly<Record<Stream, number>> = unknownAdmits;
  let inFlight: Promise<void> | undefined;
  let again = false;
  let localLag: (() => Readonly<Record<Stream, number>>) | undefined;
  let askedAt = Number.NEGATIVE_INFINITY;
  const ends = new Map<string, EndSample[]>();
  // Whether everything waiting upstream at the last answer was behind: only then does this
  // instance's own lag stand for overdue records (see mightRelease).
  let allBehind = true;

  /** Remembers each partition's end offset now, forgets looks older than LOOKS_KEPT_MS (or the window). */
  function upstream(lags: readonly PartitionLag[], topic: string, now: number): UpstreamPartition[] {
    const since = now - Math.max(limits.seconds * 1000, LOOKS_KEPT_MS);
    return lags
      .filter((entry) => entry.topic === topic)
      .map((entry) => {
        const key = `${entry.topic}/${entry.partition}`;
        const looks = (ends.get(key) ?? []).filter((look) => look.at >= since);
        // Of looks at one end offset only the latest says more (appliedThrough takes the latest).
        if (looks.at(-1)?.end === entry.end) looks.pop();
        looks.push({ at: now, end: entry.end });
        ends.set(key, looks);
        return { lag: entry.lag, position: entry.end - entry.lag, ends: looks };
      });
  }

  async function heldNow(): Promise<Set<Stream>> {
    try {
      // Stamped before the broker is asked: a look never claims an end offset later than it was read.
      const now = clock.now();
      const lags = await lag();
      const registry = upstream(lags, names.source["registry-mutation"], now);
      const outcomes = upstream(lags, names.source["outcome-created"], now);
      allBehind = [registry, outcomes].every(
        (partitions) =>
          overdueLag(partitions, now, limits.seconds) === partitions.reduce((total, p) => total + p.lag, 0),
      );
      const looked = { "registry-mutation": registry, "outcome-created": outcomes };
      admits = admitBefore(looked, now);
      return holdDecision(looked, now, limits);
    } catch (error) {
      logger.debug({ error: errorMessage(error) }, "catch-up lag check failed; holding nothing");
      admits = unknownAdmits;
      return new Set();
    }
  }

  function check(): Promise<void> {
    if (inFlight) {
      again = true;
      return inFlight;
    }
    inFlight = (async () => {
      do {
        again = false;
        if (held.size > 0 && localLag && allBehind && clock.now() - askedAt < IDLE_CHECK_MS) {
          if (!mightRelease(held, localLag(), limits.records)) continue;
        }
        askedAt = clock.now();
        const admitted = admits;
        const next = await heldNow();
        const released = [...held].filter((stream) => !next.has(stream));
        if ([...next].join() !== [...held].join()) logger.info({ held: [...next] }, "catch-up hold changed");
        held = next;
        // A check that was in flight when the hold stopped must not resume a consumer that has left.
        if (released.length > 0 && !stopping.signal.aborted) lifted(released);
        for (const stream of next)
          if (admits[stream] > admitted[stream] && !stopping.signal.aborted) advanced(stream, admits[stream]);
      } while (again);
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  }

  /** Checks after each pause until stopped; stopping aborts the pause in progress. */
  async function schedule(): Promise<void> {
    while (!stopping.signal.aborted) {
      try {
        await sleep(held.size > 0 ? HOLDING_CHECK_MS : IDLE_CHECK_MS, stopping.signal);
      } catch {
        return;
      }
      if (stopping.signal.aborted) return;
      await check().catch((error) => logger.warn({ error: errorMessage(error) }, "catch-up check failed"));
    }
  }

  return {
    isHeld: (stream) => held.has(stream),
    admitsBefore: (stream) => (held.has(stream) ? admits[stream] : Number.POSITIVE_INFINITY),
    committed(stream) {
      const waitedOn =
        (stream === "registry-mutation" && held.size > 0) ||
        (stream === "outcome-created" && held.has("escalation-edge"));
      if (waitedOn) void check();
    },
    onLifted(listener) {
      lifted = listener;
    },
    onAdvanced(listener) {
      advanced = listener;
    },
    useLocalLag(lowerBound) {
      localLag = lowerBound;
    },
    async start() {
      if (limits.records <= 0 || limits.seconds <= 0) return;
      await check();
      void schedule();
    },
    stop() {
      stopping.abort();
    },
  };
}
