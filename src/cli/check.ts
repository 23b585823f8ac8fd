import { type Command, Option } from "commander";
import type { Admin } from "kafkajs";
import { createPrometheusMetrics } from "../adapters/metrics/prometheus.js";
import { registeredFindingSchemaId } from "../adapters/registry/findings-subject.js";
import type { Config } from "../config.js";
import type { AppLogger } from "../logger.js";
import { systemClock } from "../ports.js";
import { redactUserinfo } from "../redact.js";
import { connectKafka, connectRegistry } from "../startup/connect.js";
import { type StartupContext, startupScope } from "../startup/context.js";
import { openGraph, prepareGraph } from "../startup/graph.js";
import { prepareOwnTopics } from "../startup/topics.js";
import { ownTopicNames, type TopicNames, topicNames } from "../topics.js";
import { SERVICE_VERSION } from "../version.js";
import { type CheckRow, checkOutcome, failedRow } from "./check-result.js";
import { action, cliContext } from "./context.js";
import { EXIT_CODES } from "./exit-codes.js";
import { printDocument, printRows } from "./output.js";
import { integerIn } from "./parse.js";

/**
 * `check`: start-up's own phases (src/startup/), each with a deadline of its own, with everything that
 * would change something turned off: constraints verified, not created; schemas looked up, not
 * registered; topics required, not created; the consumer never built, the group never joined.
 */
export async function runChecks(config: Config, logger: AppLogger, timeoutMs: number): Promise<CheckRow[]> {
  const readOnly: Config = {
    ...config,
    startupTimeoutMs: timeoutMs,
    migrateOnStart: false,
    registerSchemas: false,
    createTopicsOnStart: false,
  };
  const names = topicNames(config.topics);
  const rows: CheckRow[] = [];
  /** One check in a start-up scope of its own, so that a server away does not eat the next check's time. */
  const scoped = async <T>(body: (ctx: StartupContext) => Promise<T>): Promise<T> => {
    const scope = startupScope(readOnly, logger, systemClock);
    try {
      return await body(scope.context);
    } finally {
      await scope.closeOpened();
    }
  };
  await scoped((ctx) => checkNeo4j(ctx, rows));
  await scoped((ctx) => checkRegistry(ctx, config, names, rows));
  await scoped((ctx) => checkKafka(ctx, config, names, rows));
  return rows;
}

async function checkNeo4j(ctx: StartupContext, rows: CheckRow[]): Promise<void> {
  const { config } = ctx;
  const databases = new Map(config.tenants.map((route) => [route.tenantId, route.database]));
  const { graph, schema } = openGraph(ctx, createPrometheusMetrics({ version: SERVICE_VERSION }), databases);
  const neo4j = `Neo4j at ${config.neo4j.uri}`;
  try {
    await ctx.step(neo4j, () => graph.ping());
    rows.push({ check: "neo4j", status: "ok", detail: `${neo4j} answers; credentials accepted` });
  } catch (error) {
    rows.push(failedRow("neo4j", error, "neo4j", "neo4jUnreachable"));
    rows.push({ check: "constraints", status: "skipped", detail: "Neo4j did not answer" });
    return;
  }
  try {
    await prepareGraph(ctx, schema, databases, false);
    rows.push({
      check: "constraints",
      status: "ok",
      detail: `§6 constraints in place on ${[...new Set(databases.values())].join(", ")}`,
    });
  } catch (error) {
    rows.push(failedRow("constraints", error, "neo4j", "constraintsMissing"));
  }
}

async function checkRegistry(ctx: StartupContext, config: Config, names: TopicNames, rows: CheckRow[]): Promise<void> {
  try {
    await connectRegistry(ctx, names);
    rows.push({
      check: "registry",
      status: "ok",
      detail: `schema registry at ${redactUserinfo(config.registry.url)} answers`,
    });
  } catch (error) {
    rows.push(failedRow("registry", error, "registry", "registryUnreachable"));
    rows.push({ check: "findings subject", status: "skipped", detail: "the registry did not answer" });
    return;
  }
  if (!config.findingsEnabled) {
    rows.push({ check: "findings subject", status: "ok", detail: "findings are off (FINDINGS_ENABLED=false)" });
    return;
  }
  try {
    const id = await ctx.step(`schema registry at ${redactUserinfo(config.registry.url)}`, () =>
      registeredFindingSchemaId(config.registry, names.findings),
    );
    rows.push(
      id === undefined
        ? // The subject is ours: `run` registers it when it is missing (findings-subject.ts).
          {
            check: "findings subject",
            status: "ok",
            detail: `${names.findings}-value not registered yet; run registers it`,
          }
        : { check: "findings subject", status: "ok", detail: `${names.findings}-value has our schema (id ${id})` },
    );
  } catch (error) {
    rows.push(failedRow("findings subject", error, "registry", "subjectMissing"));
  }
}

async function checkKafka(ctx: StartupContext, config: Config, names: TopicNames, rows: CheckRow[]): Promise<void> {
  let admin: Admin;
  let brokers: string;
  try {
    ({ admin, brokers } = await connectKafka(ctx, names));
    rows.push({ check: "kafka", status: "ok", detail: `${brokers} answers; source topics exist` });
  } catch (error) {
    rows.push(failedRow("kafka", error, "kafka", "topicsMissing"));
    rows.push({ check: "own topics", status: "skipped", detail: "Kafka did not answer, or a source topic is missing" });
    return;
  }
  try {
    await prepareOwnTopics(ctx, admin, names, brokers);
    rows.push({ check: "own topics", status: "ok", detail: `${ownTopicNames(names).join(", ")} exist` });
  } catch (error) {
    const row = failedRow("own topics", error, "kafka", "topicsMissing");
    rows.push(
      row.failure === "topicsMissing" && config.createTopicsOnStart
        ? { check: row.check, status: "ok", detail: "some are missing; run creates them (CREATE_TOPICS_ON_START)" }
        : row,
    );
  }
}

export function registerCheck(program: Command): void {
  program
    .command("check")
    .description(
      `run every start-up check (Neo4j and its constraints, the registry and the findings subject, Kafka and the topics, credentials) without creating, registering or joining anything; exits ${EXIT_CODES.ok.code} when all pass, else with the failure's class (see the exit codes)`,
    )
    .addOption(
      new Option(
        "--timeout <ms>",
        "how long each check may keep trying (in place of STARTUP_TIMEOUT_MS, which failures name)",
      )
        .argParser(integerIn(500, 3_600_000))
        .default(10_000),
    )
    .option("--json", "print JSON: one document { ok, exitCode, failure, checks }")
    .action(
      action(async (options: { timeout: number; json?: boolean }) => {
        const { config, logger } = cliContext();
        const checks = await runChecks(config, logger, options.timeout);
        const outcome = checkOutcome(checks);
        if (options.json) printDocument({ ...outcome, checks });
        else {
          printRows(
            checks.map(({ check, status, detail, failure }) => ({
              check,
              status: failure ? `failed (exit ${EXIT_CODES[failure].code})` : status,
              detail,
            })),
            { title: "start-up checks" },
          );
          process.stdout.write(outcome.ok ? "all checks passed\n" : `failed: ${outcome.failure}\n`);
        }
        process.exitCode = outcome.exitCode;
      }),
    );
}
