import { type Command, Option } from "commander";
import { createDriver, createGraphWriter } from "../adapters/neo4j/graph-writer.js";
import { sharedDatabases } from "../config.js";
import { noopMetrics } from "../ports.js";
import { type GovernanceReport, governanceReport } from "../report.js";
import { action, cliContext } from "./context.js";
import { printRows } from "./output.js";
import { integerIn } from "./parse.js";

/** What the report says instead of a reachability verdict when there are no terminals to reach. */
export const NO_TERMINALS = "no control terminals configured (TERMINAL_AGENT_IDS)";

export function printReport(report: GovernanceReport, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  if (report.produced) {
    printRows(report.produced.rows, {
      title: `What ${report.produced.agentId} produced (newest first)`,
      empty: "no outcomes",
    });
  }
  printRows(report.undeclaredEscalations, {
    title: "Undeclared escalations — observed, never authorised by the registry",
    empty: "none",
  });
  printRows(report.declaredNeverExercised, { title: "Declared escalation paths never exercised", empty: "none" });
  if (report.agentsWithoutReachableTerminal === null) {
    process.stdout.write(`\nAgents without a declared path to a control terminal\n  ${NO_TERMINALS}\n`);
    return;
  }
  printRows(report.agentsWithoutReachableTerminal, {
    title: `Agents without a declared path to a control terminal (${report.terminalIds.join(", ")})`,
    empty: "none: every agent can reach a control terminal",
  });
}

export function registerReport(program: Command): void {
  program
    .command("report")
    .description("run the spec's §4 governance queries against the graph")
    .option("--agent <agent_id>", "also list what this agent produced")
    .addOption(new Option("--limit <n>", "outcomes to list for --agent").argParser(integerIn(1, 100_000)).default(50))
    .option(
      "--tenant <tenant>",
      "tenant to report on: its database, and only its agents where tenants share one (default: the first in TENANTS)",
    )
    .option("--json", "print JSON instead of tables")
    .action(
      action(async (options: { agent?: string; limit: number; tenant?: string; json?: boolean }) => {
        const { config } = cliContext();
        const route = options.tenant ? config.tenants.find((t) => t.tenantId === options.tenant) : config.tenants[0];
        if (!route) throw new Error(`tenant "${options.tenant}" is not in TENANTS`);
        const driver = createDriver(config.neo4j);
        try {
          const graph = createGraphWriter(driver, noopMetrics, config.neo4j.txTimeoutMs);
          const report = await governanceReport(
            graph,
            route.database,
            config.terminalAgentIds,
            options.agent ? { id: options.agent, limit: options.limit } : undefined,
            { id: route.tenantId, scoped: sharedDatabases(config.tenants).has(route.database) },
          );
          printReport(report, options.json === true);
        } finally {
          await driver.close();
        }
      }),
    );
}
