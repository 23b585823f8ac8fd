import type { Command } from "commander";
import { errorMessage } from "../errors.js";
import { systemClock } from "../ports.js";
import { redactUserinfo } from "../redact.js";
import { type RunningService, startService } from "../service.js";
import { StartupStopped } from "../startup/deadline.js";
import { action, cliContext } from "./context.js";
import { exitCode } from "./exit-codes.js";

/**
 * One line naming the cause, then exit 1 at once: whatever a failed start left open (a socket a client
 * still retries on) must not keep the process alive.
 */
function exitWith(line: string): never {
  process.stderr.write(`error: ${redactUserinfo(line)}\n`);
  process.exit(exitCode("failed"));
}

/**
 * `run`: the service. SIGTERM or SIGINT stops fetching, lets the batch in flight commit, leaves the
 * group and closes the driver, then exits 0; during start-up it undoes what start-up opened and exits
 * 0. A stop that takes longer than SHUTDOWN_TIMEOUT_MS exits 1. A start-up that fails or outlasts
 * STARTUP_TIMEOUT_MS exits 1 with one line on stderr naming the cause.
 */
export function registerRun(program: Command): void {
  program
    .command("run")
    .description("run the projector: consume the three topics and project them into Neo4j")
    .action(
      action(async () => {
        const { config, logger } = cliContext("stdout");
        // Node's own warnings (newer Nodes warn about timers that libraries set) go into the JSON log
        // like everything else, so stderr carries nothing but a start-up failure's one line.
        process.removeAllListeners("warning");
        process.on("warning", (warning) =>
          logger.warn({ name: warning.name, warning: warning.message }, "node warning"),
        );
        // Signals are ours from the first moment: SIGTERM during start-up stops it and exits 0, like a
        // stop of the running service; Node's default would end the process by the signal.
        const stopStartup = new AbortController();
        let service: RunningService | undefined;
        const onSignal = (signal: NodeJS.Signals) => {
          const timer = setTimeout(() => {
            logger.error({ signal, timeoutMs: config.shutdownTimeoutMs }, "shutdown took too long; exiting");
            process.exit(exitCode("failed"));
          }, config.shutdownTimeoutMs);
          timer.unref();
          if (service) void service.stop(signal);
          else stopStartup.abort(signal);
        };
        process.once("SIGTERM", onSignal);
        process.once("SIGINT", onSignal);
        // Start-up is bounded step by step (startup/deadline.ts); this is the last resort that no step can outlast.
        const watchdog = setTimeout(() => {
          exitWith(`start-up did not finish within ${Math.round(config.startupTimeoutMs / 1000) + 30} s`);
        }, config.startupTimeoutMs + 30_000);
        try {
          service = await startService(config, logger, systemClock, stopStartup.signal);
        } catch (error) {
          if (!(error instanceof StartupStopped)) exitWith(`start-up failed: ${errorMessage(error)}`);
          logger.info({ signal: stopStartup.signal.reason }, "stopped during start-up");
          process.exit(exitCode("ok"));
        } finally {
          clearTimeout(watchdog);
        }
        // A signal in the moment between the last start-up step and here.
        if (stopStartup.signal.aborted) void service.stop(String(stopStartup.signal.reason));
        try {
          await service.done;
        } catch (error) {
          logger.fatal({ error: errorMessage(error) }, "projector stopped on a fatal error");
          process.exit(exitCode("failed"));
        }
        // Everything the service opened is closed; a library timer left behind must not hold the exit
        // until the shutdown timer calls it a failure. pino writes synchronously, so nothing is lost.
        process.exit(exitCode("ok"));
      }),
    );
}
