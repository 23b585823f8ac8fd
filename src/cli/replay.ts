import type { Command } from "commander";
import { createKafka, createProducer } from "../adapters/kafka/client.js";
import { createGroupAdmin } from "../adapters/kafka/group-admin.js";
import { createTopicReader } from "../adapters/kafka/read-topic.js";
import { createRecordSink } from "../adapters/kafka/record-sink.js";
import { createDriver, createGraphWriter } from "../adapters/neo4j/graph-writer.js";
import { createAvroDecoder, createSchemaRegistry } from "../adapters/registry/schema-registry.js";
import { sharedDatabases } from "../config.js";
import { validationRules } from "../model/validate.js";
import { RebuildFailedError, type RebuildReport, rebuildRegistry } from "../operations/rebuild.js";
import { replayTopics } from "../operations/replay.js";
import { noopMetrics, type ReadFrom } from "../ports.js";
import { STREAMS, type Stream, topicNames } from "../topics.js";
import { SERVICE_VERSION } from "../version.js";
import { action, type CliContext, cliContext } from "./context.js";
import { printRows } from "./output.js";

const STREAM_ALIASES: Record<string, Stream> = {
  registry: "registry-mutation",
  "registry-mutation": "registry-mutation",
  outcome: "outcome-created",
  outcomes: "outcome-created",
  "outcome-created": "outcome-created",
  escalation: "escalation-edge",
  escalations: "escalation-edge",
  "escalation-edge": "escalation-edge",
};

function parseStreams(list: string | undefined): Stream[] {
  if (!list) return [...STREAMS];
  return list.split(",").map((name) => {
    const stream = STREAM_ALIASES[name.trim()];
    if (!stream) throw new Error(`unknown topic "${name}": use registry, outcome, escalation (or their topic names)`);
    return stream;
  });
}

async function reset(context: CliContext, streams: readonly Stream[], to: ReadFrom, json: boolean, allowGaps: boolean) {
  const { config, logger } = context;
  const names = topicNames(config.topics);
  const admin = createKafka(config.kafka, logger).admin();
  await admin.connect();
  try {
    const topics = streams.map((s) => names.source[s]);
    const done = await replayTopics(createGroupAdmin(admin), config.kafka.group, topics, to, allowGaps);
    printRows(done, { json, title: `offsets of group "${config.kafka.group}" reset` });
  } finally {
    await admin.disconnect();
  }
}

export function registerReplay(program: Command): void {
  program
    .command("replay")
    .description("reset the consumer group's offsets so the projector re-reads (refuses while instances run)")
    .option("--to-earliest", "rewind to the start of each topic (the default)")
    .option("--to-timestamp <iso-or-ms>", "rewind to the first record at or after this time")
    .option("--topics <list>", "comma list of registry, outcome, escalation (default: all three)")
    .option("--allow-gaps", "replay even where retention has deleted records the replay would need")
    .option("--json", "print JSON")
    .action(
      action(async (options: { toTimestamp?: string; topics?: string; allowGaps?: boolean; json?: boolean }) => {
        let to: ReadFrom = { earliest: true };
        if (options.toTimestamp) {
          const timestamp = /^\d+$/.test(options.toTimestamp)
            ? Number(options.toTimestamp)
            : Date.parse(options.toTimestamp);
          if (Number.isNaN(timestamp))
            throw new Error(`--to-timestamp "${options.toTimestamp}" is neither an ISO date nor epoch milliseconds`);
          to = { timestamp };
        }
        await reset(cliContext(), parseStreams(options.topics), to, options.json === true, options.allowGaps === true);
      }),
    );

  program
    .command("rebuild")
    .description(
      "wipe what the registry owns (grants, owned workflows, declared escalations, agents' registry properties) and rebuild it from the compacted registry topic, one transaction per tenant (all or nothing); outcomes, PRODUCED and observed escalations stay",
    )
    .option("--yes", "confirm the wipe")
    .option("--json", "print JSON")
    .action(
      action(async (options: { yes?: boolean; json?: boolean }) => {
        if (!options.yes)
          throw new Error(
            "rebuild wipes the registry projection; pass --yes to confirm (stop every projector instance first)",
          );
        const { config, logger } = cliContext();
        const kafka = createKafka(config.kafka, logger);
        const admin = kafka.admin();
        const producer = createProducer(kafka);
        const driver = createDriver(config.neo4j);
        const names = topicNames(config.topics);
        await admin.connect();
        try {
          await producer.connect();
          const report = await rebuildRegistry({
            graph: createGraphWriter(driver, noopMetrics, config.neo4j.rebuildTxTimeoutMs),
            admin: createGroupAdmin(admin),
            reader: createTopicReader(kafka),
            sink: createRecordSink(producer, names, SERVICE_VERSION),
            groupId: config.kafka.group,
            topic: names.source["registry-mutation"],
            decoder: createAvroDecoder(createSchemaRegistry(config.registry)),
            tenants: config.tenants,
            shared: sharedDatabases(config.tenants),
            rules: validationRules(config.tenants, config.limits),
            progress: ({ step, ...detail }) => logger.info(detail, `rebuild: ${step}`),
          }).catch((error: unknown) => {
            if (error instanceof RebuildFailedError) printRebuild(error.report, options.json === true);
            throw error;
          });
          printRebuild(report, options.json === true);
        } finally {
          await producer.disconnect();
          await admin.disconnect();
          await driver.close();
        }
      }),
    );
}

/**
 * Per tenant whether it was rebuilt (anything else: its graph is as it was), then the records left
 * out and dead-lettered. With --json, one document: `{ tenants, deadLettered }`.
 */
function printRebuild(report: RebuildReport, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  printRows(report.tenants, { title: "registry projection rebuild (a tenant not rebuilt keeps its graph as it was)" });
  printRows(report.deadLettered, {
    title: "registry records left out and dead-lettered",
    empty: "none: every record was read and applied",
  });
}
