/**
 * `npm run demo`: the projector end to end. Brings up the local stack unless KAFKA_BROKERS,
 * NEO4J_URI and SCHEMA_REGISTRY_URL point at servers of your own; creates the topics; registers the
 * schemas; publishes a realistic registry and runtime log; runs the projector until it has caught up;
 * prints the §4 governance report and the governance findings the data produced (once published);
 * then keeps running as the service until Ctrl-C (`-- --exit-after-report` stops after the report;
 * `-- --json` prints the report, with the findings under `findings`, as JSON).
 */
import { parseArgs } from "node:util";
import { pino } from "pino";
import { ensureTopics, replicationFor, topicSpecs } from "../src/adapters/kafka/admin.js";
import { createKafka, createProducer } from "../src/adapters/kafka/client.js";
import { publishEvents } from "../src/adapters/kafka/event-publisher.js";
import { fetchLag } from "../src/adapters/kafka/group-admin.js";
import { createDriver, createGraphWriter } from "../src/adapters/neo4j/graph-writer.js";
import { registerFindingSchema } from "../src/adapters/registry/findings-subject.js";
import { createSchemaRegistry, registerSchemas } from "../src/adapters/registry/schema-registry.js";
import { listFindings } from "../src/cli/findings.js";
import { printRows } from "../src/cli/output.js";
import { printReport } from "../src/cli/report.js";
import { type Config, loadConfig } from "../src/config.js";
import { OLDEST_MARK } from "../src/cypher/event-time-judge.js";
import { createLogger } from "../src/logger.js";
import { type GraphWriter, noopMetrics } from "../src/ports.js";
import { governanceReport } from "../src/report.js";
import { startService } from "../src/service.js";
import { consumedTopics, topicNames } from "../src/topics.js";
import { demoEventLog } from "../workload/demo-log.js";
import { CONTROL_TERMINALS } from "../workload/generate.js";

const { values: flags } = parseArgs({
  options: { "exit-after-report": { type: "boolean", default: false }, json: { type: "boolean", default: false } },
});
const say = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const { useLocalStackUnlessConfigured } = await import("../stack/api.js");
  const onLocalStack = await useLocalStackUnlessConfigured(process.env, say);
  // The demo's data has control terminals; the service has none unless told (TERMINAL_AGENT_IDS).
  const config = loadConfig({ TERMINAL_AGENT_IDS: CONTROL_TERMINALS.join(","), ...process.env });
  // Progress and logs go to stderr: stdout carries only the report.
  const logger = createLogger(process.env.LOG_LEVEL ? config.logLevel : "warn", pino.destination(2));
  const names = topicNames(config.topics);
  const kafka = createKafka(config.kafka, logger);
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(
    admin,
    topicSpecs(names, {
      partitions: config.topics.partitions,
      ...(await replicationFor(admin, config.topics.replicationFactor)),
      retryMaxAgeMs: config.retry.maxAgeMs,
    }),
  );
  const registry = createSchemaRegistry(config.registry);
  const schemaIds = await registerSchemas(config.registry, names.source);
  await registerFindingSchema(config.registry, names.findings);
  say(
    `topics ready (${Object.values(names.source).join(", ")}), schemas registered (ids ${Object.values(schemaIds).join(", ")})`,
  );

  const { log, revocation, events } = demoEventLog();
  const producer = createProducer(kafka);
  await producer.connect();
  say(
    `publishing ${log.registry.length} registry snapshots, ${log.outcomes.length} outcomes, ${log.escalations.length} escalations (with redelivered duplicates), then a revoking edit of ${revocation.agent_id}`,
  );
  await publishEvents(
    producer,
    registry,
    schemaIds,
    names,
    events,
    (n) => say(`  published ${n}/${events.length}`),
    1000,
  );
  await producer.disconnect();

  const service = await startService(config, logger);
  const started = Date.now();
  for (;;) {
    const lags = await fetchLag(admin, config.kafka.group, consumedTopics(names));
    const behind = lags.reduce((sum, entry) => sum + entry.lag, 0);
    say(`  projecting… ${behind} record(s) to go (${((Date.now() - started) / 1000).toFixed(1)}s)`);
    if (behind === 0 && service.consumer.isJoined()) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  say(`caught up in ${((Date.now() - started) / 1000).toFixed(1)}s`);

  const driver = createDriver(config.neo4j);
  const graph = createGraphWriter(driver, noopMetrics, config.neo4j.txTimeoutMs);
  const report = await governanceReport(
    graph,
    config.tenants[0]?.database ?? config.neo4j.database,
    config.terminalAgentIds,
    { id: revocation.agent_id, limit: 10 },
  );
  say("judging findings at event time…");
  const findings = await judgedFindings(graph, config);
  await driver.close();
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ ...report, findings }, null, 2)}\n`);
  } else {
    printReport(report, false);
    printRows(findings, {
      title: `Governance findings — announced on ${names.findings} (agent-graph-projector findings)`,
      empty: "none",
    });
  }
  if (!flags.json) {
    process.stdout.write(`
Where to look next
  metrics        http://127.0.0.1:${service.metricsPort}/metrics   (health: /healthz, /readyz)
  Neo4j          ${config.neo4j.uri} as ${config.neo4j.user}${onLocalStack ? ` (local stack password: ${config.neo4j.password})` : ""}
  try in Cypher  MATCH (a:Agent {agent_id: '${revocation.agent_id}'})-[r]->(x) RETURN type(r), x, r
                 MATCH p = (a:Agent)-[:CAN_ESCALATE_TO*1.. {declared: true}]->(t:Agent {agent_id: 'os-agt-001'}) RETURN p LIMIT 5
  publish more   npx agent-graph-projector produce events.ndjson   (one JSON event a line, "type" names the topic)
  the report     npx agent-graph-projector report --agent ${revocation.agent_id}
  the findings   npx agent-graph-projector findings --open
`);
  }
  await admin.disconnect();
  if (flags["exit-after-report"]) {
    await service.stop("demo finished");
    return;
  }
  say("the projector keeps running as the service; Ctrl-C stops it cleanly");
  const stop = () => void service.stop("Ctrl-C");
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  await service.done;
}

/**
 * The findings in the graph once the event-time judge has judged every escalation and registry change
 * (a round after the registry is applied past them, FINDINGS_ALLOWED_LATENESS_MS later) and the service
 * has published what it found; after a bound, as they are, so that the demo never waits on a broken topic.
 */
async function judgedFindings(graph: GraphWriter, config: Config): Promise<Record<string, unknown>[]> {
  const until = Date.now() + config.findingsJudge.allowedLatenessMs + 30_000;
  const databases = [...new Set(config.tenants.map((tenant) => tenant.database))];
  for (;;) {
    const marks = await Promise.all(databases.map((database) => graph.read(database, OLDEST_MARK, {})));
    const judged = marks.every(([row]) => row?.oldest === null || row?.oldest === undefined);
    const findings = await listFindings(graph, config.tenants, false);
    if ((judged && findings.every((f) => f.published === true)) || Date.now() > until) return findings;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    say(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
