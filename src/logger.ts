import { pino } from "pino";
import type { Config } from "./config.js";

/**
 * JSON logs on stdout. Secrets never reach them: nothing logs the configuration's credentials, and
 * these paths are redacted as a second line of defence should an error object carry them.
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
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

export type AppLogger = ReturnType<typeof createLogger>;
