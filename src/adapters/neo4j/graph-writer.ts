import neo4j, { type Driver, type Session } from "neo4j-driver";
import pLimit from "p-limit";
import { rowsAsColumns } from "../../cypher/columns.js";
import type { Statement, StatementResult } from "../../cypher/statement.js";
import { classify, retryReason, TransientError } from "../../errors.js";
import { backoffMs } from "../../pipeline/retry.js";
import {
  type Clock,
  type FollowUp,
  type GraphWriter,
  type Metrics,
  type Sleep,
  systemClock,
  systemSleep,
} from "../../ports.js";
import { duringRotation } from "./driver.js";
import { plainRecord, plainRows, serverMs } from "./values.js";

// The driver and its rotating credentials live in driver.ts; callers keep importing them from here.
export { createDriver, credentialsAccepted } from "./driver.js";

/** The graph writer's time: injected so its retries can be driven by a test without waiting. */
export interface GraphWriterTiming {
  readonly clock?: Clock;
  readonly sleep?: Sleep;
  /** Jitter source in [0, 1). */
  readonly random?: () => number;
}

/** How long one batch may keep retrying transient failures before the caller's pause takes over. */
export const RETRY_BUDGET_MS = 15_000;
/**
 * How much longer than NEO4J_TX_TIMEOUT_MS an attempt may go without an answer before the client gives
 * up on its connection. Neo4j ends a transaction past that timeout itself (its monitor looks every 2 s)
 * and says so; silence beyond this is a connection that no longer carries anything.
 */
export const SILENCE_GRACE_MS = 5_000;
const MIN_RETRY_DELAY_MS = 25;
const MAX_RETRY_DELAY_MS = 2_000;

/**
 * The only place statements meet Neo4j. A batch's statements run in order in one explicit write
 * transaction, retried on transient errors (deadlocks, leader switches, lost connections): safe
 * because every statement is an idempotent MERGE. Which failures are transient is decided by errors.ts
 * `classify`, as everywhere else in the service. Each extra attempt is counted. What still fails
 * after the retry budget reaches the caller, which pauses the partition.
 *
 * The driver's managed transactions wait a fixed second before their first retry. Our transient
 * failures are mostly deadlocks between partitions writing onto the same Agent nodes; the other
 * transaction needs about as long as ours had run to finish, so the wait starts from the failed
 * attempt's duration (see retryDelayMs): short for short batches, and never so short that the retry
 * walks straight back into the transaction it collided with.
 */
export function createGraphWriter(
  driver: Driver,
  metrics: Metrics,
  txTimeoutMs: number,
  maxConcurrentWrites = Number.POSITIVE_INFINITY,
  timing: GraphWriterTiming = {},
): GraphWriter {
  const { clock = systemClock, sleep = systemSleep, random = Math.random } = timing;
  // A bound on write transactions in flight, separate from how many partitions are consumed at once:
  // partitions waiting for a slot decode and project their next batch meanwhile, and a partition that
  // runs dry hands its slot to another at once instead of leaving Neo4j idle.
  const writeSlot = pLimit(maxConcurrentWrites);
  const silenceBoundMs = txTimeoutMs + SILENCE_GRACE_MS;

  /**
   * Runs one attempt's work on `session`, bounded on the client. A connection whose network path drops
   * packets without a reset (a dead node, a firewall forgetting its state) answers nothing and reports
   * no error: the driver has no read timeout of its own (only the server's optional
   * `connection.recv_timeout_seconds` hint), and NEO4J_TX_TIMEOUT_MS is enforced by the server, whose
   * answer never arrives. Past the bound the attempt fails as transient and its connection is dropped,
   * so the retry (or the partition's pause) runs on a new one; the session is closed in the background,
   * since closing waits for answers that will not come.
   */
  async function bounded<T>(session: Session, work: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let silent = false;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        silent = true;
        const error = new TransientError(
          `Neo4j sent no answer within ${silenceBoundMs} ms (NEO4J_TX_TIMEOUT_MS + ${SILENCE_GRACE_MS} ms); connection dropped`,
        );
        dropConnections(session, error);
        reject(error);
      }, silenceBoundMs);
    });
    try {
      return await Promise.race([
        work().catch((error: unknown) => {
          throw duringRotation(driver, error);
        }),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
      if (silent) void session.close().catch(() => {});
      else await closeWithin(session, SILENCE_GRACE_MS);
    }
  }

  async function applyOnce(
    database: string,
    statements: readonly Statement[],
    commit = true,
    followUp?: FollowUp,
  ): Promise<StatementResult[]> {
    // Every statement's answer pulled whole (the driver's default pulls 1,000 records, then more on
    // demand): a statement sent behind another must find it run to the end, not paused at its
    // 1,000th row, or it would not see all of the writes before it.
    const session = driver.session({ database, defaultAccessMode: neo4j.session.WRITE, fetchSize: PULL_ALL });
    return bounded(session, async () => {
      const tx = await session.beginTransaction({ timeout: txTimeoutMs });
      try {
        const results: StatementResult[] = [];
        const send = (statement: Statement) => {
          const sent = rowsAsColumns(statement.cypher, statement.params);
          return { statement, sent, result: withoutStackCapture(() => tx.run(sent.cypher, sent.params)) };
        };
        const collect = async ({ statement, sent, result: pending }: ReturnType<typeof send>) => {
          const result = await pending;
          const counters = result.summary.counters.updates();
          const done: StatementResult = {
            name: statement.name,
            records: sent.resultKeys ? plainRows(result.records, sent.resultKeys) : result.records.map(plainRecord),
            counters: {
              nodesCreated: counters.nodesCreated,
              nodesDeleted: counters.nodesDeleted,
              relationshipsCreated: counters.relationshipsCreated,
              relationshipsDeleted: counters.relationshipsDeleted,
              propertiesSet: counters.propertiesSet,
            },
            serverMs: serverMs(result.summary),
          };
          results.push(done);
          if (statement.followedBy) await runAll(statement.followedBy(done));
        };
        // Statements go out back to back, up to one whose followers depend on its result: Neo4j runs
        // them in order either way, and the next one is already there when one ends (a transaction
        // alone on Neo4j, such as the registry's, would otherwise leave it idle between statements
        // while the answer is read and the next statement packed and sent).
        const runAll = async (list: readonly Statement[]): Promise<void> => {
          for (let i = 0; i < list.length; ) {
            const inFlight: ReturnType<typeof send>[] = [];
            let last: Statement;
            do {
              last = list[i++] as Statement;
              inFlight.push(send(last));
            } while (!last.followedBy && i < list.length);
            for (let k = 0; k < inFlight.length; k++) {
              try {
                await collect(inFlight[k] as ReturnType<typeof send>);
              } catch (error) {
                // The transaction is lost; the statements behind the failed one fail with it, unread.
                for (const behind of inFlight.slice(k + 1)) Promise.resolve(behind.result).catch(() => {});
                throw error;
              }
            }
          }
        };
        await runAll(statements);
        // Derived from this attempt's own results: a retried attempt derives it again.
        if (followUp) await runAll(followUp([...results]));
        if (commit) await tx.commit();
        else await tx.rollback();
        return results;
      } catch (error) {
        if (tx.isOpen()) await tx.rollback().catch(() => {});
        throw error;
      }
    });
  }

  /**
   * Runs `once` until it succeeds, a failure is not transient (errors.ts), or the next wait would
   * pass the retry budget; `onRetry` is told of each extra attempt and the error that caused it.
   * `once` wraps in `timed` the part of an attempt that talks to Neo4j, whose duration the backoff
   * starts from.
   */
  async function retrying<T>(
    once: (timed: (run: () => Promise<T>) => Promise<T>) => Promise<T>,
    onRetry: (error: unknown) => void,
  ): Promise<T> {
    const started = clock.now();
    for (let attempt = 1; ; attempt++) {
      let attemptMs = 0;
      const timed = async (run: () => Promise<T>) => {
        const attemptStarted = clock.now();
        try {
          return await run();
        } finally {
          attemptMs = clock.now() - attemptStarted;
        }
      };
      try {
        return await once(timed);
      } catch (error) {
        const delay = retryDelayMs(attempt, attemptMs, random);
        if (classify(error) !== "transient" || clock.now() - started + delay > RETRY_BUDGET_MS) throw error;
        onRetry(error);
        await sleep(delay);
      }
    }
  }

  /** Counts a write transaction's retry under its first statement (the kind of write) and its error. */
  const countRetry = (statements: readonly Statement[]) => (error: unknown) =>
    metrics.recordTransactionRetry(statements[0]?.name ?? "", retryReason(error));

  async function readOnce(database: string, cypher: string, params: Record<string, unknown>) {
    const session = driver.session({ database, defaultAccessMode: neo4j.session.READ });
    return bounded(session, async () => {
      const tx = await session.beginTransaction({ timeout: txTimeoutMs });
      try {
        const result = await tx.run(cypher, params);
        await tx.commit();
        return result.records.map(plainRecord);
      } catch (error) {
        if (tx.isOpen()) await tx.rollback().catch(() => {});
        throw error;
      }
    });
  }

  return {
    apply: (database: string, statements: readonly Statement[], followUp?: FollowUp) =>
      retrying(
        // Each attempt takes a write slot of its own (one waiting out its backoff holds none); the
        // wait for a slot is not part of the attempt's duration.
        (timed) => writeSlot(() => timed(() => applyOnce(database, statements, true, followUp))),
        countRetry(statements),
      ),

    read: (database: string, cypher: string, params: Record<string, unknown> = {}) =>
      retrying(
        (timed) => timed(() => readOnce(database, cypher, params)),
        () => {},
      ),

    async trial(database: string, statements: readonly Statement[]) {
      await retrying(
        (timed) => writeSlot(() => timed(() => applyOnce(database, statements, false))),
        countRetry(statements),
      );
    },

    async ping() {
      await driver.executeQuery("RETURN 1", {}, { routing: neo4j.routing.READ });
    },

    close: () => driver.close(),
  };
}

/** neo4j-driver's fetch size for "every record at once" (its internal FETCH_ALL, not exported). */
const PULL_ALL = -1;

/** The parts of a neo4j-driver 6 session that reach its connection's socket (not public API). */
interface SessionInternals {
  readonly _writeConnectionHolder?: { readonly _connectionPromise?: Promise<unknown> };
  readonly _readConnectionHolder?: { readonly _connectionPromise?: Promise<unknown> };
}
interface ConnectionInternals {
  readonly _delegate?: ConnectionInternals;
  readonly _ch?: { readonly _conn?: { destroy(error?: Error): void } };
}

/**
 * Closes a session whose work is done, waiting at most `ms`: a close sends RESET and waits for its
 * answer, which a Neo4j too loaded (or a path gone silent just then) may never give; the attempt's
 * outcome is already decided, so past the bound the connection is dropped instead of holding the
 * write slot, and the batch, for ever.
 */
async function closeWithin(session: Session, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), ms);
  });
  const closing = session.close();
  try {
    if ((await Promise.race([closing, late])) === "late") {
      closing.catch(() => {});
      dropConnections(session, new TransientError(`closing a Neo4j session took over ${ms} ms; connection dropped`));
    }
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Destroys the sockets under a session's connections. The driver then fails whatever waits on them
 * and discards them instead of returning them to its pool; no public call does that (closing sends
 * GOODBYE and waits). Reaches into the driver's internals: if a release moves them, nothing is
 * destroyed, the attempt still fails on time, and the socket lingers until the OS gives up on it.
 */
function dropConnections(session: Session, error: Error): void {
  const internals = session as unknown as SessionInternals;
  for (const holder of [internals._writeConnectionHolder, internals._readConnectionHolder]) {
    void holder?._connectionPromise
      ?.then((connection) => {
        const channel = connection as ConnectionInternals | null;
        (channel?._delegate ?? channel)?._ch?._conn?.destroy(error);
      })
      .catch(() => {});
  }
}

/**
 * neo4j-driver builds an Error and formats its stack trace for every statement it runs, to graft onto
 * the statement's error should one come: 2% of the projector's CPU at steady load, for a trace the
 * service never shows (its errors are reported by message, errors.ts). Captured with a limit of 0,
 * the trace is empty and costs next to nothing; `run` is synchronous up to the capture.
 */
function withoutStackCapture<T>(run: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return run();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * The wait before retry number `attempt`: the failed attempt's duration (at least 25 ms), doubled per
 * attempt, capped at 2 s, with ±50% jitter so that two deadlocked writers part.
 */
export function retryDelayMs(attempt: number, attemptMs: number, random: () => number = Math.random): number {
  const base = backoffMs(attempt, Math.max(attemptMs, MIN_RETRY_DELAY_MS), MAX_RETRY_DELAY_MS);
  return Math.round(base * (0.5 + random()));
}
