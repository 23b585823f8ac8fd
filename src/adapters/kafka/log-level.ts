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
