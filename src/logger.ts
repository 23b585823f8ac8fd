import { pino } from "pino";
import type { Config } from "./config.js";
import { redactUserinfo } from "./redact.js";

/**
 * JSON logs on stdout. Secrets never reach them: nothing logs the configuration's credentials, and
 * these paths are redacted as a second line of defence should an error object carry them, and so
 * is the userinfo of a URL in a field's text (redact.ts), wherever a library's message quoted it.
 */
export function createLogger(level: Config["logLevel"], destination?: pino.DestinationStream) {
  return pino(
    {
      level,
      base: { service: "agent-graph-projector" },
      redact: {
        paths: [
          "password",
          "*.password",
          "*.*.password",
          "sasl",
          "*.sasl",
          "auth",
          "*.auth",
          "authorization",
          "*.authorization",
        ],
        censor: "[redacted]",
      },
      formatters: { log: withoutUserinfo },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

/** The log line's text fields, one level deep, with the userinfo of any URL in them redacted. */
function withoutUserinfo(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(object)) {
    if (typeof value !== "string" || !value.includes("@")) continue;
    const redacted = redactUserinfo(value);
    if (redacted === value) continue;
    copy ??= { ...object };
    copy[key] = redacted;
  }
  return copy ?? object;
}

export type AppLogger = ReturnType<typeof createLogger>;
