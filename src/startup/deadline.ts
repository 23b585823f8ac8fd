import { classify, errorMessage } from "../errors.js";
import { type Clock, type Sleep, systemSleep, withTimeout } from "../ports.js";

/** Start-up could not finish; its message is the one line the process exits with. */
export class StartupError extends Error {
  override readonly name = "StartupError";
}

/** Start-up was asked to stop (SIGTERM, SIGINT) before it finished: not a failure. */
export class StartupStopped extends Error {
  override readonly name = "StartupStopped";
  constructor() {
    super("stopped before start-up finished");
  }
}

/**
 * Tries one start-up step until it succeeds or the start-up deadline passes. A failure that waiting
 * cannot cure (bad credentials, a database that does not exist, a refused registration) ends it at
 * once; an unreachable server is tried again every second or two until the deadline. Each attempt is
 * itself cut off at the deadline, so a client that retries internally for longer cannot stretch it;
 * the line it ends with then names the last failure an attempt did report, not the cut-off.
 * `stop` aborting ends the wait at once, attempt and pause alike, with StartupStopped.
 */
export async function untilDeadline<T>(
  what: string,
  deadlineAt: number,
  attempt: () => Promise<T>,
  clock: Clock,
  sleep: Sleep = systemSleep,
  stop?: AbortSignal,
): Promise<T> {
  const started = clock.now();
  let lastFailure: unknown;
  for (;;) {
    if (stop?.aborted) throw new StartupStopped();
    const remaining = deadlineAt - clock.now();
    try {
      return await withTimeout(
        untilAborted(attempt(), stop),
        Math.max(remaining, 0),
        () => new CutOff("no answer before the start-up deadline"),
      );
    } catch (error) {
      if (error instanceof StartupStopped) throw error;
      const retryClass = classify(error);
      if (retryClass === "fatal" || retryClass === "rejected") {
        throw new StartupError(`${what}: ${errorMessage(error)}`, { cause: error });
      }
      if (!(error instanceof CutOff)) lastFailure = error;
      const now = clock.now();
      if (now >= deadlineAt) {
        const reason = lastFailure ?? error;
        throw new StartupError(
          `${what}: not reachable within ${Math.round((now - started) / 1000)} s (STARTUP_TIMEOUT_MS): ${errorMessage(reason)}`,
          { cause: reason },
        );
      }
      await untilAborted(sleep(Math.min(2_000, deadlineAt - now)), stop);
    }
  }
}

/** `work`, or StartupStopped as soon as `stop` aborts; the abandoned work's failure is not reported. */
function untilAborted<T>(work: Promise<T>, stop: AbortSignal | undefined): Promise<T> {
  if (!stop) return work;
  work.catch(() => {});
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new StartupStopped());
    if (stop.aborted) return onAbort();
    stop.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => stop.removeEventListener("abort", onAbort));
  });
}

class CutOff extends Error {
  override readonly name = "CutOff";
}
