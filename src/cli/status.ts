import { type Command, InvalidArgumentError, Option } from "commander";
import { type Admin, AssignerProtocol } from "kafkajs";
import { createKafka } from "../adapters/kafka/client.js";
import { findingOutboxes } from "../adapters/kafka/finding-publisher.js";
import { fetchPositions } from "../adapters/kafka/group-admin.js";
import { createTopicReader } from "../adapters/kafka/read-topic.js";
import { createDriver, createGraphWriter } from "../adapters/neo4j/graph-writer.js";
import type { Config } from "../config.js";
import { JUDGE_STATUS } from "../cypher/event-time-judge.js";
import { UNPUBLISHED_COUNTS } from "../cypher/findings.js";
import { errorMessage } from "../errors.js";
import { listDeadLetters } from "../operations/dlq.js";
import { noopMetrics } from "../ports.js";
import { consumedTopics, topicNames } from "../topics.js";
import { action, cliContext } from "./context.js";
import { printDocument, printRows } from "./output.js";
import { integerIn } from "./parse.js";
import {
  buildStatus,
  type GroupMember,
  type JudgementStatus,
  type MetricsSource,
  parseMetrics,
  type StatusReport,
} from "./status-report.js";

/**
 * `status`: read-only, beside running instances. The broker says who is in the group, what each owns
 * and the group's offsets; what only the instances know (paused partitions and why, when each
 * partition last committed, the oldest record waiting) comes from each member's own /metrics, the
 * series the dashboards and alerts read; the dead-letter topics give the dead letters by reason, and
 * the graph the findings not yet published.
 */
async function gatherStatus(
  config: Config,
  admin: Admin,
  options: { metricsUrls: readonly string[]; timeoutMs: number; readDeadLetters: ReturnType<typeof createTopicReader> },
): Promise<StatusReport> {
  const names = topicNames(config.topics);
  const group = config.kafka.group;
  const [description] = (await admin.describeGroups([group])).groups;
  const members: GroupMember[] = (description?.members ?? []).map((m) => ({
    memberId: m.memberId,
    clientId: m.clientId,
    host: m.clientHost.replace(/^\//, ""),
    assignment:
      m.memberAssignment.length === 0
        ? {}
        : (AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment ?? {}),
  }));
  const urls =
    options.metricsUrls.length > 0
      ? options.metricsUrls
      : config.metrics.port === 0
        ? []
        : [...new Set(members.map((m) => `http://${hostForUrl(m.host)}:${config.metrics.port}/metrics`))];
  const [positions, metrics, deadLetters, { unpublished, judgement }] = await Promise.all([
    fetchPositions(admin, group, consumedTopics(names)),
    Promise.all(urls.map((url) => scrape(url, options.timeoutMs))),
    listDeadLetters(options.readDeadLetters, names),
    findingsState(config),
  ]);
  return buildStatus({
    group,
    state: description?.state ?? "Unknown",
    members,
    positions,
    metrics,
    deadLetterReasons: deadLetters.map((row) => row.reason),
    unpublished,
    judgement,
    now: Date.now(),
  });
}

function hostForUrl(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

async function scrape(url: string, timeoutMs: number): Promise<MetricsSource> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) return { url, error: `HTTP ${response.status}` };
    return { url, samples: parseMetrics(await response.text()) };
  } catch (error) {
    return { url, error: errorMessage(error) };
  }
}

/**
 * The findings outbox as the publisher counts it (UNPUBLISHED_COUNTS), per tenant, and what waits for
 * the event-time judge (JUDGE_STATUS), per database.
 */
async function findingsState(
  config: Config,
): Promise<{ unpublished: { tenant: string; count: number }[]; judgement: JudgementStatus[] }> {
  if (!config.findingsEnabled) return { unpublished: [], judgement: [] };
  const driver = createDriver(config.neo4j);
  try {
    const graph = createGraphWriter(driver, noopMetrics, config.neo4j.txTimeoutMs);
    const counts = new Map<string, number>();
    const judgement: JudgementStatus[] = [];
    for (const { database } of findingOutboxes(config.tenants)) {
      for (const row of await graph.read(database, UNPUBLISHED_COUNTS, {}))
        counts.set(String(row.tenant_id), (counts.get(String(row.tenant_id)) ?? 0) + Number(row.unpublished));
      const [row] = await graph.read(database, JUDGE_STATUS, {});
      if (row) judgement.push(judgementOf(database, row));
    }
    const unpublished = config.tenants.map((route) => ({
      tenant: route.tenantId,
      count: counts.get(route.tenantId) ?? 0,
    }));
    return { unpublished, judgement };
  } finally {
    await driver.close();
  }
}

function judgementOf(database: string, row: Record<string, unknown>): JudgementStatus {
  const present = (value: unknown) => value !== null && value !== undefined;
  return {
    database,
    waiting: Number(row.observations ?? 0) + Number(row.changes ?? 0),
    oldestWaitSeconds: present(row.oldest) ? Math.max(0, (Number(row.now) - Number(row.oldest)) / 1000) : null,
    judgedThrough: present(row.judged_through) ? new Date(Number(row.judged_through)).toISOString() : null,
  };
}

export function printStatus(report: StatusReport): void {
  const age = report.oldestUnappliedSeconds === null ? "unknown" : `${report.oldestUnappliedSeconds.toFixed(1)} s`;
  process.stdout.write(
    `group ${report.group}: ${report.state}, ${report.members.length} member(s), lag ${report.totalLag}, oldest unapplied record ${age} (at ${report.at})\n`,
  );
  printRows(report.members, { title: "Members", empty: "none: no instance is consuming" });
  printRows(
    report.partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      member: p.member ?? "",
      committed: p.committed ?? "none",
      end: p.end,
      lag: p.lag,
      last_commit: p.lastCommit ?? "",
      paused: p.paused ?? "",
      unapplied_s: p.oldestUnappliedSeconds ?? "",
    })),
    { title: "Partitions (last commit, pauses and ages from the owners' metrics)" },
  );
  printRows(report.paused, { title: "Paused partitions", empty: "none" });
  printRows(report.deadLetters, { title: "Dead letters by reason", empty: "none" });
  printRows(report.unpublishedFindings, { title: "Unpublished findings", empty: "findings are off" });
  printRows(
    report.judgement.map((j) => ({
      database: j.database,
      waiting: j.waiting,
      oldest_wait_s: j.oldestWaitSeconds === null ? "" : j.oldestWaitSeconds.toFixed(1),
      judged_through: j.judgedThrough ?? "not yet",
    })),
    { title: "Findings waiting for the event-time judge", empty: "findings are off" },
  );
  for (const note of report.notes) process.stdout.write(`note: ${note}\n`);
}

export function registerStatus(program: Command): void {
  program
    .command("status")
    .description(
      "the consumer group as it runs, without joining it: members and their partitions; per partition the committed offset, lag, last commit, pause and its reason, oldest unapplied record; dead letters by reason; unpublished findings; what waits for the event-time judge",
    )
    .addOption(
      new Option(
        "--metrics-url <url>",
        "read pauses, commit times and ages from this /metrics (repeatable); default: each member's host at METRICS_PORT",
      ).argParser((value: string, previous: string[] = []) => [...previous, validUrl(value)]),
    )
    .addOption(
      new Option("--timeout <ms>", "how long each member's /metrics may take to answer")
        .argParser(integerIn(100, 60_000))
        .default(2_000),
    )
    .option("--json", "print JSON: one document")
    .action(
      action(async (options: { metricsUrl?: string[]; timeout: number; json?: boolean }) => {
        const { config, logger } = cliContext();
        const kafka = createKafka(config.kafka, logger);
        const admin = kafka.admin();
        await admin.connect();
        try {
          const report = await gatherStatus(config, admin, {
            metricsUrls: options.metricsUrl ?? [],
            timeoutMs: options.timeout,
            readDeadLetters: createTopicReader(kafka),
          });
          if (options.json) printDocument(report);
          else printStatus(report);
        } finally {
          await admin.disconnect();
        }
      }),
    );
}

function validUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === "http:" || url.protocol === "https:") return value;
  } catch {}
  throw new InvalidArgumentError(`"${value}" is not an http(s) URL`);
}
