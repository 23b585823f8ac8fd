import type { Command } from "commander";
import { createKafka } from "../adapters/kafka/client.js";
import { createTopicReader } from "../adapters/kafka/read-topic.js";
import { createDriver, createGraphWriter } from "../adapters/neo4j/graph-writer.js";
import { createAvroDecoder, createSchemaRegistry } from "../adapters/registry/schema-registry.js";
import { sharedDatabases } from "../config.js";
import { validationRules } from "../model/validate.js";
import { noopMetrics } from "../ports.js";
import { reconcileRegistry } from "../reconcile/reconcile.js";
import { action, cliContext } from "./context.js";
import { printRows } from "./output.js";

export function registerReconcile(program: Command): void {
  program
    .command("reconcile")
    .description(
      "diff the compacted registry topic against the Agent/Workflow/Tool projection (§5); --repair re-applies §3.1/§3.2 for drifted agents",
    )
    .option("--repair", "re-apply the registry projection for every drifted agent")
    .option("--json", "print JSON")
    .action(
      action(async (options: { repair?: boolean; json?: boolean }) => {
        const { config, logger } = cliContext();
        const driver = createDriver(config.neo4j);
        try {
          let total = 0;
          for (const route of config.tenants) {
            const result = await reconcileRegistry({
              reader: createTopicReader(createKafka(config.kafka, logger)),
              topic: config.topics.registryMutation,
              decoder: createAvroDecoder(createSchemaRegistry(config.registry)),
              graph: createGraphWriter(driver, noopMetrics, config.neo4j.txTimeoutMs),
              database: route.database,
              tenantId: route.tenantId,
              rules: validationRules(config.tenants, config.limits),
              repair: options.repair === true,
              scoped: sharedDatabases(config.tenants).has(route.database),
            });
            total += result.drift.length;
            if (options.json) {
              process.stdout.write(`${JSON.stringify({ tenant: route.tenantId, ...result }, null, 2)}\n`);
              continue;
            }
            printRows(
              result.drift.map((d) => ({ ...d })),
              {
                title: `tenant ${route.tenantId}: ${result.agents} registered agent(s), ${result.drift.length} difference(s)${result.unreadable ? `, ${result.unreadable} unreadable record(s) skipped` : ""}`,
                empty: "the graph matches the registry",
              },
            );
            if (result.repaired > 0) process.stdout.write(`repaired ${result.repaired} agent(s)\n`);
          }
          if (total > 0 && !options.repair) process.exitCode = 3;
        } finally {
          await driver.close();
        }
      }),
    );
}
