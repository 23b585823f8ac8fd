import type { Command } from "commander";
import { startService } from "../service.js";
import { action, cliContext } from "./context.js";

/**
 * `run`: the service. SIGTERM or SIGINT stops fetching, lets the batch in flight commit, leaves the
 * group and closes the driver; if that takes longer than SHUTDOWN_TIMEOUT_MS the process exits 1.
 */
export function registerRun(program: Command): void {
  program
    .command("run")
    .description("run the projector: consume the three topics and project them into Neo4j")
    .action(
      action(async () => {
        const { config, logger } = cliContext("stdout");
        const service = await startService(config, logger);
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
