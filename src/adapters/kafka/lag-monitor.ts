import type { Admin } from "kafkajs";
import { errorMessage } from "../../errors.js";
import { type Clock, type Logger, systemClock } from "../../ports.js";
import { fetchLag } from "./group-admin.js";

/** One partition's consumer lag (admin.ts partitionLag). */
export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  readonly lag: number;
  /** The partition's end offset (last stable offset) the lag was measured from. */
  readonly end: number;
}

/**
 * The one poller of the group's lag: the lag gauges and the catch-up hold both hear every answer.
 * `poll()` asks the broker now (the hold does, when it must decide); the schedule polls every
 * `intervalMs` unless somebody polled within the last half of it, so the gauges stay fresh without a
 * second poller while the hold already asks every second.
 */
export interface LagMonitor {
  /** The group's lag on every partition of the watched topics, from the broker now; listeners hear it. */
  poll(): Promise<readonly PartitionLag[]>;
  onLag(listener: (lags: readonly PartitionLag[]) => void): void;
  start(intervalMs: number): void;
  /**
   * Ends the schedule, refuses new polls and waits (briefly) for the ones in flight, so that the admin
   * client is never disconnected under a request (kafkajs then logs "write after end" as an error).
   */
  stop(): Promise<void>;
}

/** How long stop() waits for a poll in flight; a broker that does not answer must not hold a stop. */
const STOP_WAIT_MS = 5_000;

export function createLagMonitor(
  admin: Admin,
  group: string,
  topics: readonly string[],
  logger: Logger,
  clock: Clock = systemClock,
): LagMonitor {
  const listeners: ((lags: readonly PartitionLag[]) => void)[] = [];
  let polledAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const inFlight = new Set<Promise<unknown>>();

  function poll(): Promise<readonly PartitionLag[]> {
    if (stopped) return Promise.reject(new Error("the lag monitor is stopped"));
    const polling = pollNow();
    const settled = polling.catch(() => {});
    inFlight.add(settled);
    void settled.then(() => inFlight.delete(settled));
    return polling;
  }

  async function pollNow(): Promise<readonly PartitionLag[]> {
    polledAt = clock.now();
    let lags: PartitionLag[];
    try {
      lags = await fetchLag(admin, group, topics);
    } catch (error) {
      // Usually a leadership change the admin client's metadata has not caught up with yet.
      await admin.fetchTopicMetadata({ topics: [...topics] }).catch(() => {});
      throw error;
    }
    for (const listener of listeners) listener(lags);
    return lags;
  }

  return {
    poll,
    onLag(listener) {
      listeners.push(listener);
    },
    start(intervalMs) {
      timer = setInterval(() => {
        // Half the period: a poll of the schedule's own, one period ago, must not count as recent.
        if (clock.now() - polledAt < intervalMs / 2) return;
        poll().catch((error) =>
          logger.debug({ error: errorMessage(error) }, "lag refresh failed; refreshing metadata"),
        );
      }, intervalMs);
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(inFlight),
        new Promise((resolve) => {
          timeout = setTimeout(resolve, STOP_WAIT_MS);
        }),
      ]);
      clearTimeout(timeout);
    },
  };
}
