import type { Config } from "../config.js";
import type { AppLogger } from "../logger.js";
import { type Clock, type Sleep, systemSleep } from "../ports.js";
import { untilDeadline } from "./deadline.js";

/**
 * What every start-up phase shares, handed to each phase explicitly: one deadline for the whole
 * start-up, one stop signal, and one list of what has been opened so far.
 */
export interface StartupContext {
  readonly config: Config;
  readonly logger: AppLogger;
  readonly clock: Clock;
  readonly deadlineAt: number;
  /** One start-up step, tried until the deadline (deadline.ts); a stop request ends it at once. */
  step<T>(what: string, attempt: () => Promise<T>): Promise<T>;
  /** How long to keep asking before a topic is called missing: 5 s, or half of what start-up has left. */
  confirmWithinMs(): number;
  /** Registers how to close something just opened, should a later phase fail. */
  opened(close: () => Promise<unknown>): void;
}

export interface StartupScope {
  readonly context: StartupContext;
  /** Closes what was opened, newest first, so that a failed start leaves nothing keeping the process alive. */
  closeOpened(): Promise<void>;
}

export function startupScope(
  config: Config,
  logger: AppLogger,
  clock: Clock,
  stop?: AbortSignal,
  sleep: Sleep = systemSleep,
): StartupScope {
  const deadlineAt = clock.now() + config.startupTimeoutMs;
  const closers: (() => Promise<unknown>)[] = [];
  return {
    context: {
      config,
      logger,
      clock,
      deadlineAt,
      step: (what, attempt) => untilDeadline(what, deadlineAt, attempt, clock, sleep, stop),
      confirmWithinMs: () => Math.min(5_000, (deadlineAt - clock.now()) / 2),
      opened: (close) => void closers.push(close),
    },
    async closeOpened() {
      for (const close of closers.reverse()) await close().catch(() => {});
    },
  };
}
