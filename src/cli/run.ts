import type { Command } from "commander";
import { errorMessage } from "../errors.js";
import { type RunningService, startService } from "../service.js";
import { action, cliContext } from "./context.js";

/**
 * `run`: the service. SIGTERM or SIGINT stops fetching, lets the batch in flight commit, leaves the
 * group and closes the driver; if that takes longer than SHUTDOWN_TIMEOUT_MS the process exits 1. A
 * start-up that fails or outlasts STARTUP_TIMEOUT_MS exits 1 with one line on stderr naming the cause.
 */
/**
 * One line naming the cause, then exit 1 at once: whatever a failed start left open (a socket a client
 * still retries on) must not keep the process alive.
 */
function exitWith(line: string): never {
  process.stderr.write(`error: ${line}\n`);
  process.exit(1);
}

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
        // Start-up is bounded step by step (startup.ts); this is the last resort that no step can outlast.
        const watchdog = setTimeout(() => {
          exitWith(`start-up did not finish within ${Math.round(config.startupTimeoutMs / 1000) + 30} s`);
        }, config.startupTimeoutMs + 30_000);
        let service: RunningService;
        try {
          service = await startService(config, logger);
        } catch (error) {
          exitWith(`start-up failed: ${errorMessage(error)}`);
        } finally {
          clearTimeout(watchdog);
        }
        const onSignal = (signal: NodeJS.Signals) => {
          const timer = setTimeout(() => {
            logger.error({ signal, timeoutMs: config.shutdownTimeoutMs }, "shutdown took too long; exiting");
            process.exit(1);
          }, config.shutdownTimeoutMs);
          timer.unref();
          void service.stop(signal);
        };
        process.once("SIGTERM", onSignal);
        process.once("SIGINT", onSignal);
        try {
          await service.done;
        } catch (error) {
          logger.fatal(
            { error: error instanceof Error ? error.message : String(error) },
            "projector stopped on a fatal error",
          );
          process.exitCode = 1;
        }
      }),
    );
}
