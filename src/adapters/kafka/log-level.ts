import { createRequire } from "node:module";
import { logLevel } from "kafkajs";

/** One entry of kafkajs's protocol error table (kafkajs/src/protocol/error.js). */
interface ProtocolError {
  readonly type: string;
  readonly message: string;
  readonly retriable: boolean;
}

// kafkajs's own table says which broker errors it retries; its log lines carry only the message text.
const { errorCodes } = createRequire(import.meta.url)("kafkajs/src/protocol/error.js") as {
  errorCodes: readonly ProtocolError[];
};
const byMessage = new Map(errorCodes.map((entry) => [entry.message, entry]));
/** Not marked retriable, yet the consumer answers them by re-joining the group (kafkajs consumer/runner.js). */
const REJOINED = new Set(["REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"]);

export type LogLevelName = "error" | "warn" | "info" | "debug";

/**
 * The level a kafkajs log line gets in our log. ERROR is kept for what someone must act on: a broker
 * error that kafkajs retries or answers by re-joining (a coordinator not yet elected, a leader election,
 * a rebalance) is routine, info; a consumer crash on such an error, and any other line kafkajs follows
 * with a retry (`retryTime`: a reconnect, a consumer restart), is a warning; if the retries run out,
 * the caller's own error says so.
 */
export function kafkaLogLevel(
  level: logLevel,
  message: string,
  fields: Readonly<Record<string, unknown>>,
): LogLevelName {
  if (level === logLevel.ERROR) {
    const crash = /^Crash: \w+: /.exec(message);
    const cause = typeof fields.error === "string" ? fields.error : message.slice(crash?.[0].length ?? 0);
    const known = byMessage.get(cause);
    // A crash on a retried error: kafkajs restarts the consumer, which is worth a warning, not a page.
    if (known && (known.retriable || REJOINED.has(known.type))) return crash ? "warn" : "info";
    if (typeof fields.retryTime === "number") return "warn";
    return "error";
  }
  return level === logLevel.WARN ? "warn" : "debug";
}

/** kafkajs's lines for a connection it could not make: one per attempt and broker, many a second in an outage. */
const CONNECTION_LINE = /^(Connection error|Connection timeout|Failed to connect to seed broker)/;
/** How often a repeated connection line is logged at most, with the count of those not logged. */
export const REPEAT_WINDOW_MS = 5_000;
/** Distinct lines tracked at most (one per broker address and cause in practice). */
const MAX_TRACKED = 100;

export interface RepeatThrottle {
  /**
   * Whether to log a kafkajs line now: undefined to drop it, else how many of the same text were
   * dropped since it was last logged (0 the first time). Only connection lines are ever dropped.
   */
  admit(message: string, now: number): number | undefined;
}

/**
 * Summarises the connection errors of an outage: the first line of each text is logged at once, the
 * same text at most once per `windowMs` after it, carrying how many were dropped in between. A broker
 * away for minutes logs a line every few seconds instead of about 14 a second per instance.
 */
export function createRepeatThrottle(windowMs = REPEAT_WINDOW_MS): RepeatThrottle {
  const seen = new Map<string, { loggedAt: number; dropped: number }>();
  return {
    admit(message, now) {
      if (!CONNECTION_LINE.test(message)) return 0;
      const last = seen.get(message);
      if (last && now - last.loggedAt < windowMs) {
        last.dropped++;
        return undefined;
      }
      seen.delete(message);
      seen.set(message, { loggedAt: now, dropped: 0 });
      for (const oldest of seen.keys()) {
        if (seen.size <= MAX_TRACKED) break;
        seen.delete(oldest);
      }
      return last?.dropped ?? 0;
    },
  };
}
