import type { Command } from "commander";
import { createKafka, createProducer } from "../adapters/kafka/client.js";
import { createFindingPublisher, findingOutboxes } from "../adapters/kafka/finding-publisher.js";
import { createTopicReader } from "../adapters/kafka/read-topic.js";
import { createDriver, createGraphWriter } from "../adapters/neo4j/graph-writer.js";
import { findingSchemaId } from "../adapters/registry/findings-subject.js";
import { createAvroDecoder, createSchemaRegistry } from "../adapters/registry/schema-registry.js";
import { type Config, sharedDatabases } from "../config.js";
import { errorMessage } from "../errors.js";
import type { AppLogger } from "../logger.js";
import { validationRules } from "../model/validate.js";
import { createEventTimeJudge, judgedDatabases } from "../pipeline/event-time-judge.js";
import { type GraphWriter, noopMetrics } from "../ports.js";
import { reconcileRegistry } from "../reconcile/reconcile.js";
import { action, cliContext } from "./context.js";
import { exitCode } from "./exit-codes.js";
import { printDocument, printRows } from "./output.js";

export function registerReconcile(program: Command): void {
  program
    .command("reconcile")
    .description(
      "diff the compacted registry topic against the Agent/Workflow/Tool projection (§5); --repair re-applies §3.1/§3.2 for drifted agents",
    )
    .option(
      "--repair",
      "re-apply the registry projection for every drifted agent, then publish the findings that recorded",
    )
    .option("--json", "print JSON: one document { tenants: [{ tenant, agents, drift, ... }], publishedFindings }")
    .action(
      action(async (options: { repair?: boolean; json?: boolean }) => {
        const { config, logger } = cliContext();
        const driver = createDriver(config.neo4j);
        const graph = createGraphWriter(driver, noopMetrics, config.neo4j.txTimeoutMs);
        try {
          let total = 0;
          const tenants: Record<string, unknown>[] = [];
          // Every registry record on the topic before this moment is read, and a repair applies it.
          const readFrom = Date.now();
          for (const route of config.tenants) {
            const result = await reconcileRegistry({
              reader: createTopicReader(createKafka(config.kafka, logger)),
              topic: config.topics.registryMutation,
              decoder: createAvroDecoder(createSchemaRegistry(config.registry)),
              graph,
              database: route.database,
              tenantId: route.tenantId,
              rules: validationRules(config.tenants, config.limits),
              repair: options.repair === true,
              recordFindings: config.findingsEnabled,
              scoped: sharedDatabases(config.tenants).has(route.database),
            });
            total += result.drift.length;
            if (options.json) {
              tenants.push({ tenant: route.tenantId, ...result });
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
          if (total > 0 && !options.repair) process.exitCode = exitCode("drift");
          let published = 0;
          if (options.repair && config.findingsEnabled) {
            await judgeRepairs(config, logger, graph, readFrom);
            published = await publishFindings(config, logger, graph);
            if (published > 0 && !options.json) process.stdout.write(`published ${published} finding(s)\n`);
          }
          if (options.json) printDocument({ tenants, publishedFindings: published });
        } finally {
          await driver.close();
        }
      }),
    );
}

/**
 * What a repair changed is judged at once (pipeline/event-time-judge.ts), as the service's next round
 * would: the topic was read to its end, so the registry is complete up to when the reading began.
 */
async function judgeRepairs(config: Config, logger: AppLogger, graph: GraphWriter, readFrom: number): Promise<void> {
  await createEventTimeJudge({
    graph,
    databases: judgedDatabases(config.tenants),
    watermark: async () => readFrom - config.findingsJudge.allowedLatenessMs,
    judges: () => true,
    maxWaitMs: config.findingsJudge.maxWaitMs,
    terminals: new Set(config.terminalAgentIds),
    logger,
    recorded: () => {},
  }).round();
}

/**
 * A repair that declares an observed edge resolves its finding in the graph's outbox: publish it now,
 * as the service would after a batch, rather than at the service's next finding or start. One sweep;
 * a failure leaves the findings in the graph for the service and says so.
 */
async function publishFindings(config: Config, logger: AppLogger, graph: GraphWriter): Promise<number> {
  const producer = createProducer(createKafka(config.kafka, logger));
  try {
    await producer.connect();
    const publisher = createFindingPublisher({
      graph,
      outboxes: findingOutboxes(config.tenants),
      producer,
      registry: createSchemaRegistry(config.registry),
      schemaId: await findingSchemaId(config, config.topics.findings),
      topic: config.topics.findings,
      logger,
    });
    return await publisher.sweep();
  } catch (error) {
    throw new Error(
      `publishing the findings failed (they stay in the graph; the service publishes them with its next findings or at its next start): ${errorMessage(error)}`,
      { cause: error },
    );
  } finally {
    await producer.disconnect().catch(() => {});
  }
}
