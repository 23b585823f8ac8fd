import { pino } from "pino";
import { type Config, ConfigError, loadConfig } from "../config.js";
import { errorMessage } from "../errors.js";
import { type AppLogger, createLogger } from "../logger.js";
import { exitCode } from "./exit-codes.js";

export interface CliContext {
  readonly config: Config;
  readonly logger: AppLogger;
}

/**
 * Loads the configuration once; a bad key ends the command with a message naming it. The service logs
 * JSON to stdout; one-shot commands log to stderr, so their tables and `--json` output stay clean.
 */
export function cliContext(logsTo: "stdout" | "stderr" = "stderr"): CliContext {
  try {
    const config = loadConfig(process.env);
    return { config, logger: createLogger(config.logLevel, logsTo === "stderr" ? pino.destination(2) : undefined) };
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(exitCode("usage"));
    }
    throw error;
  }
}

/** The invocation is wrong in a way commander cannot see (flags that must come together): EXIT_CODES.usage. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Runs a command body, turning an error into a one-line message and its exit code (EXIT_CODES). */
export function action<A extends unknown[]>(body: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await body(...args);
    } catch (error) {
      process.stderr.write(`error: ${errorMessage(error)}\n`);
      process.exitCode = exitCode(error instanceof UsageError ? "usage" : "failed");
    }
  };
}
