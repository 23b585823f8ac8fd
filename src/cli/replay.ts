import { type Command, InvalidArgumentError, Option } from "commander";
import type { Admin } from "kafkajs";
import { createKafka, createProducer } from "../adapters/kafka/client.js";
import { createGroupAdmin, fetchPositions, GroupActiveError, targetOffsets } from "../adapters/kafka/group-admin.js";
import { HistoryGoneError } from "../adapters/kafka/history.js";
import { createTopicReader } from "../adapters/kafka/read-topic.js";
import { createRecordSink } from "../adapters/kafka/record-sink.js";
import { createDriver, createGraphWriter } from "../adapters/neo4j/graph-writer.js";
import { createAvroDecoder, createSchemaRegistry } from "../adapters/registry/schema-registry.js";
import { sharedDatabases } from "../config.js";
import { validationRules } from "../model/validate.js";
import {
  planRebuild,
  RebuildFailedError,
  type RebuildPlan,
  type RebuildReport,
  rebuildRegistry,
} from "../operations/rebuild.js";
import { replayTopics } from "../operations/replay.js";
import { noopMetrics, type ReadFrom } from "../ports.js";
import { STREAMS, type Stream, topicNames } from "../topics.js";
import { SERVICE_VERSION } from "../version.js";
import { action, type CliContext, cliContext, UsageError } from "./context.js";
import { exitCode } from "./exit-codes.js";
import { printDocument, printRows } from "./output.js";
import { instant } from "./parse.js";

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

/** `--topics`: a comma list of streams, by alias or topic name; anything else is a usage error. */
export function parseStreams(list: string): Stream[] {
  const streams = list.split(",").map((name) => {
    const stream = STREAM_ALIASES[name.trim()];
    if (!stream)
      throw new InvalidArgumentError(
        `unknown topic "${name}": use registry, outcome, escalation (or their topic names)`,
      );
    return stream;
  });
  return [...new Set(streams)];
}

async function reset(
  context: CliContext,
  streams: readonly Stream[],
  to: ReadFrom,
  options: { json: boolean; allowGaps: boolean; dryRun: boolean },
) {
  const { config, logger } = context;
  const names = topicNames(config.topics);
  const admin = createKafka(config.kafka, logger).admin();
  await admin.connect();
  try {
    const topics = streams.map((s) => names.source[s]);
    if (options.dryRun) {
      const plan = await planReplay(admin, config.kafka.group, topics, to, options.allowGaps);
      printReplayPlan(plan, options.json);
      exitAsTheRunWould(plan.refusals);
      return;
    }
    const done = await replayTopics(createGroupAdmin(admin), config.kafka.group, topics, to, options.allowGaps);
    printRows(done, { json: options.json, title: `offsets of group "${config.kafka.group}" reset` });
  } finally {
    await admin.disconnect();
  }
}

/** What `replay` would do: each partition's committed offset and where it would go; nothing is set. */
export interface ReplayPlan {
  readonly dryRun: true;
  readonly group: string;
  /** Why the replay itself would refuse now (instances running, history gone), if it would. */
  readonly refusals: readonly string[];
  readonly offsets: readonly { topic: string; partition: number; committed: string; offset: string }[];
}

async function planReplay(
  admin: Admin,
  group: string,
  topics: readonly string[],
  to: ReadFrom,
  allowGaps: boolean,
): Promise<ReplayPlan> {
  const groupAdmin = createGroupAdmin(admin);
  const refusals: string[] = [];
  // The same checks the replay makes, reported instead of thrown: a dry run says what would stop it.
  await groupAdmin.assertNoActiveMembers(group).catch((error: unknown) => {
    if (!(error instanceof GroupActiveError)) throw error;
    refusals.push(error.message);
  });
  const gaps = allowGaps ? [] : await groupAdmin.historyGaps(topics, to);
  if (gaps.length > 0)
    refusals.push(new HistoryGoneError(gaps, "replay (pass --allow-gaps to read what is left)").message);
  const committed = new Map(
    (await fetchPositions(admin, group, topics)).map((p) => [`${p.topic}:${p.partition}`, p.committed]),
  );
  const offsets: ReplayPlan["offsets"][number][] = [];
  for (const topic of topics)
    for (const { partition, offset } of await targetOffsets(admin, topic, to))
      offsets.push({ topic, partition, committed: committed.get(`${topic}:${partition}`) ?? "-1", offset });
  return { dryRun: true, group, refusals, offsets };
}

function printReplayPlan(plan: ReplayPlan, json: boolean): void {
  if (json) {
    printDocument(plan);
    return;
  }
  printRows(plan.offsets, {
    title: `dry run: offsets of group "${plan.group}" a replay would set (committed -1: nothing committed yet); nothing was changed`,
  });
  for (const refusal of plan.refusals) process.stdout.write(`the replay would refuse now: ${refusal}\n`);
}

/** A dry run exits as the real run would: refused (EXIT_CODES.failed) when it would refuse now. */
function exitAsTheRunWould(refusals: readonly string[]): void {
  if (refusals.length > 0) process.exitCode = exitCode("failed");
}

export function registerReplay(program: Command): void {
  program
    .command("replay")
    .description("reset the consumer group's offsets so the projector re-reads (refuses while instances run)")
    .addOption(new Option("--to-earliest", "rewind to the start of each topic (the default)").conflicts("toTimestamp"))
    .addOption(
      new Option("--to-timestamp <iso-or-ms>", "rewind to the first record at or after this time").argParser(instant),
    )
    .addOption(
      new Option("--topics <list>", "comma list of registry, outcome, escalation (default: all three)").argParser(
        parseStreams,
      ),
    )
    .option("--allow-gaps", "replay even where retention has deleted records the replay would need")
    .option(
      "--dry-run",
      "show each partition's committed offset and where the replay would set it, change nothing; exits 1 if the replay would refuse now",
    )
    .option("--json", "print JSON")
    .action(
      action(
        async (options: {
          toTimestamp?: number;
          topics?: Stream[];
          allowGaps?: boolean;
          dryRun?: boolean;
          json?: boolean;
        }) => {
          const to: ReadFrom =
            options.toTimestamp === undefined ? { earliest: true } : { timestamp: options.toTimestamp };
          await reset(cliContext(), options.topics ?? [...STREAMS], to, {
            json: options.json === true,
            allowGaps: options.allowGaps === true,
            dryRun: options.dryRun === true,
          });
        },
      ),
    );

  program
    .command("rebuild")
    .description(
      "wipe what the registry owns (grants, owned workflows, declared escalations, agents' registry properties) and rebuild it from the compacted registry topic, one transaction per tenant (all or nothing); outcomes, PRODUCED and observed escalations stay",
    )
    .addOption(new Option("--yes", "confirm the wipe").conflicts("dryRun"))
    .option(
      "--dry-run",
      "read and validate the registry topic and say per tenant what would be rebuilt and which records dead-lettered, change nothing; exits 1 if the rebuild would refuse now",
    )
    .option("--json", "print JSON")
    .action(
      action(async (options: { yes?: boolean; dryRun?: boolean; json?: boolean }) => {
        if (!options.yes && !options.dryRun)
          throw new UsageError(
            "rebuild wipes the registry projection; pass --yes to confirm (stop every projector instance first), or --dry-run to see what it would do",
          );
        const { config, logger } = cliContext();
        const kafka = createKafka(config.kafka, logger);
        const admin = kafka.admin();
        const names = topicNames(config.topics);
        if (options.dryRun) {
          await admin.connect();
          try {
            const plan = await planRebuild({
              admin: createGroupAdmin(admin),
              reader: createTopicReader(kafka),
              groupId: config.kafka.group,
              topic: names.source["registry-mutation"],
              decoder: createAvroDecoder(createSchemaRegistry(config.registry)),
              tenants: config.tenants,
              rules: validationRules(config.tenants, config.limits),
            });
            printRebuild(plan, options.json === true);
            for (const refusal of options.json ? [] : plan.refusals)
              process.stdout.write(`the rebuild would refuse now: ${refusal}\n`);
            exitAsTheRunWould(plan.refusals);
          } finally {
            await admin.disconnect();
          }
          return;
        }
        const producer = createProducer(kafka);
        const driver = createDriver(config.neo4j);
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
function printRebuild(report: RebuildReport | RebuildPlan, json: boolean): void {
  if (json) {
    printDocument(report);
    return;
  }
  const dry = "dryRun" in report;
  printRows(report.tenants, {
    title: dry
      ? "dry run: registry projection rebuild as it would run (records Neo4j refuses show only when written); nothing was changed"
      : "registry projection rebuild (a tenant not rebuilt keeps its graph as it was)",
  });
  printRows(report.deadLettered, {
    title: dry
      ? "registry records that would be left out and dead-lettered"
      : "registry records left out and dead-lettered",
    empty: dry ? "none: every record reads and validates" : "none: every record was read and applied",
  });
}
