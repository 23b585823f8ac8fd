/**
 * A watch on Neo4j's running transactions for the whole benchmark: every transaction seen running
 * longer than a threshold is kept with the last snapshot taken of it (status, locks held, page hits,
 * CPU, wait and idle time), so that a run in which a write stalls says which statement stalled and whether it
 * was working (page hits rising), waiting on a lock ("Blocked by: …") or idle, its client between two
 * statements.
 *
 * Why in the bench: a §3.4 transaction has been seen holding its locks until the 30 s timeout, rarely
 * and not reproducibly (bench/README.md, "Left alone, with the next steps"); the watch found the
 * young-graph plan instead (bench/HISTORY.md, "Changes and what they gained", fourth round). Neo4j Community has no
 * query log, so `SHOW TRANSACTIONS` polled from outside is the one way to see a stall as it happens.
 */
import type { Driver } from "neo4j-driver";

export interface LongTransaction {
  readonly transactionId: string;
  readonly database: string;
  /** The running statement's first 160 characters, whitespace collapsed; empty between statements. */
  readonly statement: string;
  readonly clientAddress: string;
  readonly status: string;
  readonly elapsedMs: number;
  readonly cpuMs: number | null;
  readonly waitMs: number | null;
  /** Time the transaction spent with no statement running: its client between two statements. */
  readonly idleMs: number | null;
  readonly activeLockCount: number | null;
  readonly pageHits: number | null;
  readonly pageFaults: number | null;
  /** Neo4j's estimate of the heap the transaction holds. */
  readonly heapBytes: number | null;
  /** Wall-clock time of the snapshot (ISO). */
  readonly seenAt: string;
}

interface Row {
  readonly transactionId: string;
  readonly database: string;
  readonly currentQuery: string;
  readonly clientAddress: string;
  readonly status: string;
  readonly elapsedMs: unknown;
  readonly cpuMs: unknown;
  readonly waitMs: unknown;
  readonly idleMs: unknown;
  readonly activeLockCount: unknown;
  readonly pageHits: unknown;
  readonly pageFaults: unknown;
  readonly heapBytes: unknown;
}

const SHOW_LONG_TRANSACTIONS = `
SHOW TRANSACTIONS
YIELD transactionId, database, currentQuery, clientAddress, status, elapsedTime, cpuTime, waitTime, idleTime,
      activeLockCount, pageHits, pageFaults, estimatedUsedHeapMemory
WHERE elapsedTime.milliseconds >= $thresholdMs
RETURN transactionId, database, currentQuery, clientAddress, status,
       elapsedTime.milliseconds AS elapsedMs, cpuTime.milliseconds AS cpuMs, waitTime.milliseconds AS waitMs,
       idleTime.milliseconds AS idleMs,        activeLockCount, pageHits, pageFaults, estimatedUsedHeapMemory AS heapBytes`;

const asNumber = (value: unknown): number | null =>
  value === null || value === undefined ? null : typeof value === "number" ? value : Number(value);

/** One snapshot row as kept in the results; pure, for the unit test. */
export function toLongTransaction(row: Row, seenAt: Date): LongTransaction {
  return {
    transactionId: row.transactionId,
    database: row.database,
    statement: row.currentQuery.replace(/\s+/g, " ").trim().slice(0, 160),
    clientAddress: row.clientAddress,
    status: row.status,
    elapsedMs: asNumber(row.elapsedMs) ?? 0,
    cpuMs: asNumber(row.cpuMs),
    waitMs: asNumber(row.waitMs),
    idleMs: asNumber(row.idleMs),
    activeLockCount: asNumber(row.activeLockCount),
    pageHits: asNumber(row.pageHits),
    pageFaults: asNumber(row.pageFaults),
    heapBytes: asNumber(row.heapBytes),
    seenAt: seenAt.toISOString(),
  };
}

export interface LongTransactionWatch {
  /**
   * Stops polling; the transactions seen, longest first, and how many polls were answered and how many
   * failed, so that "none seen" is never read from a watch that could not look.
   */
  stop(): Promise<{ transactions: LongTransaction[]; polls: number; failedPolls: number }>;
}

/**
 * Polls every `intervalMs` and keeps, per transaction, the latest snapshot; `onFirstSeen` is told once
 * per transaction. A failed poll is skipped: the watch must never be why a benchmark fails.
 */
export function watchLongTransactions(
  driver: Driver,
  options: {
    readonly thresholdMs?: number;
    readonly intervalMs?: number;
    readonly onFirstSeen?: (tx: LongTransaction) => void;
    /** Told of the first failed poll only. */
    readonly onPollError?: (error: unknown) => void;
  } = {},
): LongTransactionWatch {
  const thresholdMs = options.thresholdMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 2_000;
  const seen = new Map<string, LongTransaction>();
  let stopped = false;
  let polls = 0;
  let failedPolls = 0;
  let polling: Promise<void> | undefined;
  const poll = async () => {
    try {
      const result = await driver.executeQuery(SHOW_LONG_TRANSACTIONS, { thresholdMs }, { database: "system" });
      polls++;
      const now = new Date();
      for (const record of result.records) {
        const tx = toLongTransaction(record.toObject() as Row, now);
        // The watch's own SHOW TRANSACTIONS never runs that long; skip it by its text anyway.
        if (tx.statement.startsWith("SHOW TRANSACTIONS")) continue;
        if (!seen.has(tx.transactionId)) options.onFirstSeen?.(tx);
        seen.set(tx.transactionId, tx);
      }
    } catch (error) {
      // Neo4j busy or restarting: the next poll tries again.
      if (failedPolls++ === 0) options.onPollError?.(error);
    }
  };
  // One poll at a time: a slow answer skips ticks rather than queueing them.
  const timer = setInterval(() => {
    if (stopped || polling) return;
    polling = poll().finally(() => {
      polling = undefined;
    });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await polling;
      return {
        transactions: [...seen.values()].sort((a, b) => b.elapsedMs - a.elapsedMs),
        polls,
        failedPolls,
      };
    },
  };
}
