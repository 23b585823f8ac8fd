import { errorMessage } from "../../errors.js";
import { heldStreams, mightRelease } from "../../pipeline/catch-up.js";
import type { Logger, Stream } from "../../ports.js";
import type { TopicNames } from "../../topics.js";
import type { PartitionLag } from "./lag-monitor.js";

/** Re-check period while nothing is held, and while something is. */
const IDLE_CHECK_MS = 1_000;
const HOLDING_CHECK_MS = 250;

export interface CatchUpHold {
  isHeld(stream: Stream): boolean;
  /** A batch of this stream was committed: re-check at once if a stream waits on it. */
  committed(stream: Stream): void;
  /** Who to tell which streams a check has just released. */
  onLifted(listener: (streams: Stream[]) => void): void;
  /** This instance's own view of the upstream lags, a lower bound on the group's (see mightRelease). */
  useLocalLag(lowerBound: () => Readonly<Record<Stream, number>>): void;
  /** The first check, before the consumer starts, then the schedule. */
  start(): Promise<void>;
  stop(): void;
}

/**
 * Dependency-aware catch-up (pipeline/catch-up.ts decides from the lag): outcomes wait behind a
 * registry backlog and escalations behind an outcome backlog, judged from the whole group's committed
 * offsets. Checked every second, every quarter second while something is held, and after each commit
 * upstream of a held stream, so that the next stage starts as soon as the group's lag allows it.
 * Overlapping requests for a check share one, followed by at most one more. While the instance's own
 * partitions still show enough backlog to keep everything held, those frequent checks are answered
 * without the broker (a check is a dozen admin requests); the broker is still asked every second.
 * `lag` asks the broker for the group's lag (the service's one LagMonitor, whose answers also feed
 * the lag gauges).
 */
export function createCatchUpHold(
  lag: () => Promise<readonly PartitionLag[]>,
  names: TopicNames,
  threshold: number,
  logger: Logger,
): CatchUpHold {
  let held = new Set<Stream>();
  let lifted: (streams: Stream[]) => void = () => {};
  let inFlight: Promise<void> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let localLag: (() => Readonly<Record<Stream, number>>) | undefined;
  let askedAt = Number.NEGATIVE_INFINITY;

  async function heldNow(): Promise<Set<Stream>> {
    try {
      const lags = await lag();
      const sum = (topic: string) =>
        lags.filter((entry) => entry.topic === topic).reduce((total, entry) => total + entry.lag, 0);
      return heldStreams(
        {
          "registry-mutation": sum(names.source["registry-mutation"]),
          "outcome-created": sum(names.source["outcome-created"]),
          "escalation-edge": 0,
        },
        threshold,
      );
    } catch (error) {
      logger.debug({ error: errorMessage(error) }, "catch-up lag check failed; holding nothing");
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
        if (held.size > 0 && localLag && Date.now() - askedAt < IDLE_CHECK_MS) {
          if (!mightRelease(held, localLag(), threshold)) continue;
        }
        askedAt = Date.now();
        const next = await heldNow();
        const released = [...held].filter((stream) => !next.has(stream));
        if ([...next].join() !== [...held].join()) logger.info({ held: [...next] }, "catch-up hold changed");
        held = next;
        if (released.length > 0) lifted(released);
      } while (again);
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(
      () => {
        void check().finally(schedule);
      },
      held.size > 0 ? HOLDING_CHECK_MS : IDLE_CHECK_MS,
    );
  }

  return {
    isHeld: (stream) => held.has(stream),
    committed(stream) {
      const waitedOn =
        (stream === "registry-mutation" && held.size > 0) ||
        (stream === "outcome-created" && held.has("escalation-edge"));
      if (waitedOn) void check();
    },
    onLifted(listener) {
      lifted = listener;
    },
    useLocalLag(lowerBound) {
      localLag = lowerBound;
    },
    async start() {
      if (threshold <= 0) return;
      await check();
      schedule();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
