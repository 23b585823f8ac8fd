import { type Command, Option } from "commander";
import { requiredAcls } from "../acls.js";
import {
  ensureTopics,
  findingsTopicSpec,
  replicationFor,
  sourceReplication,
  topicSpecs,
} from "../adapters/kafka/admin.js";
import { createKafka } from "../adapters/kafka/client.js";
import { raiseHandOffLimits } from "../adapters/kafka/topic-limits.js";
import { createDriver } from "../adapters/neo4j/graph-writer.js";
import { migrate } from "../adapters/neo4j/migrate.js";
import { registerFindingSchema } from "../adapters/registry/findings-subject.js";
import {
  COMPATIBILITY_LEVELS,
  type CompatibilityLevel,
  registerSchemas,
} from "../adapters/registry/schema-registry.js";
import { sharedDatabases } from "../config.js";
import { roleOfTopic, STREAMS, topicNames, unscopedRetryNames } from "../topics.js";
import { action, cliContext } from "./context.js";
import { printDocument, printRows } from "./output.js";
import { integerIn } from "./parse.js";

export function registerSetup(program: Command): void {
  program
    .command("migrate")
    .description("create the §6 uniqueness constraints (idempotent; run also does this at start-up)")
    .option("--json", "print JSON: one document { databases }")
    .action(
      action(async (options: { json?: boolean }) => {
        const { config } = cliContext();
        const driver = createDriver(config.neo4j);
        try {
          await migrate(
            driver,
            config.tenants.map((t) => t.database),
            sharedDatabases(config.tenants),
          );
          const databases = [...new Set(config.tenants.map((t) => t.database))];
          if (options.json) printDocument({ databases });
          else process.stdout.write(`constraints in place on ${databases.join(", ")}\n`);
        } finally {
          await driver.close();
        }
      }),
    );

  program
    .command("topics")
    .description("create the source, retry, dead-letter and findings topics with their configs (idempotent)")
    .addOption(
      new Option("--partitions <n>", "partitions per topic (default TOPIC_PARTITIONS)").argParser(
        integerIn(1, 100_000),
      ),
    )
    .addOption(
      new Option(
        "--replication-factor <n>",
        "replication factor (default TOPIC_REPLICATION_FACTOR, else the cluster's default.replication.factor and min.insync.replicas)",
      ).argParser(integerIn(1, 32_767)),
    )
    .option("--json", "print JSON")
    .action(
      action(async (options: { partitions?: number; replicationFactor?: number; json?: boolean }) => {
        const { config, logger } = cliContext();
        const admin = createKafka(config.kafka, logger).admin();
        await admin.connect();
        try {
          const names = topicNames(config.topics);
          const requested = options.replicationFactor ?? config.topics.replicationFactor;
          const layout = {
            partitions: options.partitions ?? config.topics.partitions,
            ...(await replicationFor(admin, requested)),
            retryMaxAgeMs: config.retry.maxAgeMs,
          };
          const isSource = (topic: string) => roleOfTopic(names, topic)?.role === "source";
          // Sources first: their retry and dead-letter topics follow the replication and record size
          // limit each source has, whether it existed already or was just created.
          const created = new Set(
            await ensureTopics(
              admin,
              topicSpecs(names, layout).filter((s) => isSource(s.topic)),
            ),
          );
          const sources = await sourceReplication(admin, names, STREAMS);
          const specs = [
            ...topicSpecs(names, layout, sources),
            ...(config.findingsEnabled ? [findingsTopicSpec(names, layout)] : []),
          ];
          for (const topic of await ensureTopics(
            admin,
            specs.filter((spec) => !isSource(spec.topic)),
          ))
            created.add(topic);
          await raiseHandOffLimits(admin, names, sources, logger);
          const setting = (spec: (typeof specs)[number], name: string) =>
            spec.configEntries?.find((e) => e.name === name)?.value;
          printRows(
            specs.map((spec) => ({
              topic: spec.topic,
              partitions: spec.numPartitions,
              replication: spec.replicationFactor,
              min_insync: Number(setting(spec, "min.insync.replicas")),
              cleanup: setting(spec, "cleanup.policy"),
              status: created.has(spec.topic) ? "created" : "exists",
            })),
            { json: options.json === true },
          );
        } finally {
          await admin.disconnect();
        }
      }),
    );

  program
    .command("acls")
    .description(
      "list the Kafka ACLs that `run` needs with this configuration (least privilege); --principal prints kafka-acls commands",
    )
    .option(
      "--principal <principal>",
      'print kafka-acls.sh commands granting them to this principal, e.g. "User:projector"',
    )
    .addOption(new Option("--json", "print JSON").conflicts("principal"))
    .action(
      action(async (options: { principal?: string; json?: boolean }) => {
        const { config } = cliContext();
        const acls = requiredAcls(topicNames(config.topics), config.kafka.group, {
          createTopics: config.createTopicsOnStart,
          reconcile: config.reconcileIntervalMs > 0,
          findings: config.findingsEnabled,
          oldRetry: unscopedRetryNames(config.topics),
        });
        if (options.principal) {
          const principal = options.principal;
          for (const acl of acls)
            for (const operation of acl.operations)
              process.stdout.write(
                `kafka-acls.sh --bootstrap-server ${config.kafka.brokers[0]} --add --allow-principal '${principal}' --operation ${operation} --${acl.resource} '${acl.name}' --resource-pattern-type ${acl.pattern}\n`,
              );
          return;
        }
        printRows(
          acls.map((acl) => ({ ...acl, operations: acl.operations.join(", ") })),
          { json: options.json === true },
        );
      }),
    );

  program
    .command("schemas")
    .description(
      "register the Avro reader schemas and the findings schema under <topic>-value; subjects keep their compatibility level unless --compatibility is given",
    )
    .addOption(
      new Option("--compatibility <level>", "set each subject to this level first").choices(COMPATIBILITY_LEVELS),
    )
    .option("--json", "print JSON")
    .action(
      action(async (options: { compatibility?: CompatibilityLevel; json?: boolean }) => {
        const { config } = cliContext();
        const names = topicNames(config.topics);
        const ids = await registerSchemas(
          config.registry,
          names.source,
          options.compatibility ? { compatibility: options.compatibility } : {},
        );
        // Ours: `run` with REGISTER_SCHEMAS=false only looks it up.
        const findings = config.findingsEnabled ? await registerFindingSchema(config.registry, names.findings) : null;
        printRows(
          [
            ...Object.entries(ids).map(([stream, id]) => ({ stream, schema_id: id })),
            ...(findings === null ? [] : [{ stream: "governance-finding", schema_id: findings }]),
          ],
          { json: options.json === true },
        );
      }),
    );
}
