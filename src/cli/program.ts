import { Command } from "commander";
import { SERVICE_VERSION } from "../version.js";
import { registerCheck } from "./check.js";
import { registerDlq } from "./dlq.js";
import { exitCode, exitCodesText } from "./exit-codes.js";
import { registerFindings } from "./findings.js";
import { registerProduce } from "./produce.js";
import { registerReconcile } from "./reconcile.js";
import { registerReplay } from "./replay.js";
import { registerReport } from "./report.js";
import { registerRun } from "./run.js";
import { registerSetup } from "./setup.js";
import { registerStatus } from "./status.js";

/**
 * The whole command line, built without running anything: bin/ parses argv with it, and the reference
 * in docs/cli.md is generated from its help.
 */
export const program = new Command()
  .name("agent-graph-projector")
  .description(
    "Projects the agent registry and outcome log from Kafka into a Neo4j governance graph.\nConfiguration comes from the environment; see docs/configuration.md.",
  )
  .version(SERVICE_VERSION)
  // Inherited by every command registered below: commander's usage errors (unknown flag, a value its
  // parser or choices refuse, conflicting flags) exit with EXIT_CODES.usage; help and version with 0.
  .exitOverride((error) => process.exit(error.exitCode === 0 ? exitCode("ok") : exitCode("usage")))
  .addHelpText("after", `\n${exitCodesText()}`);

registerRun(program);
registerSetup(program);
registerCheck(program);
registerStatus(program);
registerReport(program);
registerFindings(program);
registerReplay(program);
registerReconcile(program);
registerDlq(program);
registerProduce(program);
