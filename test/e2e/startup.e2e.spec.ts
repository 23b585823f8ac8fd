import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TENANT_CONSTRAINT_NAMES } from "../../src/cypher/s6-constraints.js";
import { Harness, testEnv } from "../support/harness.js";

/** Short enough that the suite stays quick, long enough for a real server to answer. */
const STARTUP_TIMEOUT_MS = 4_000;
/** What a failed start may take at most: the deadline, the client's cut-off and the process exit. */
const EXIT_WITHIN_MS = STARTUP_TIMEOUT_MS + 20_000;

/**
 * `run` as an operator starts it, with one thing wrong at a time: the process must end with status 1
 * and exactly one line on stderr naming the cause, within a bounded time, never hang.
 */
describe("a start-up failure ends the process with one line naming the cause", () => {
  let harness: Harness;
  let taken: Server;
  let takenPort = 0;
  let refusedTopic = "";
  let bareSources: Record<string, string> = {};

  const run = (env: Record<string, string>) =>
    new Promise<{ code: number | null; stderr: string; ms: number }>((resolve) => {
      const started = Date.now();
      const child = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
        env: { ...process.env, ...harness.env, STARTUP_TIMEOUT_MS: String(STARTUP_TIMEOUT_MS), ...env },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (chunk) => (stderr += chunk));
      const killer = setTimeout(() => child.kill("SIGKILL"), EXIT_WITHIN_MS + 30_000);
      child.on("close", (code) => {
        clearTimeout(killer);
        resolve({ code, stderr, ms: Date.now() - started });
      });
    });

  beforeAll(async () => {
    harness = await Harness.create("startup", { TOPIC_PARTITIONS: "1" });
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", () => resolve()));
    takenPort = (taken.address() as { port: number }).port;

    // A subject whose producer registered a schema ours cannot evolve from under BACKWARD.
    refusedTopic = `${harness.names.source["outcome-created"]}-refused`;
    await harness.admin.createTopics({ topics: [{ topic: refusedTopic, numPartitions: 1 }] });
    const subject = encodeURIComponent(`${refusedTopic}-value`);
    const post = (path: string, method: string, body: unknown) =>
      fetch(`${harness.config.registry.url}${path}`, {
        method,
        headers: { "content-type": "application/vnd.schemaregistry.v1+json" },
        body: JSON.stringify(body),
      }).then((response) => expect(response.ok).toBe(true));
    await post(`/subjects/${subject}/versions`, "POST", {
      schema: JSON.stringify({ type: "record", name: "Other", fields: [{ name: "x", type: "int" }] }),
    });
    await post(`/config/${subject}`, "PUT", { compatibility: "BACKWARD" });
    // The findings subject is ours and `run` registers it when missing; one that holds a schema ours
    // cannot evolve from (somebody else's) is refused, and `run` must say how to set it up.
    const findingsSubject = encodeURIComponent(`${harness.names.findings}-refused-value`);
    await post(`/subjects/${findingsSubject}/versions`, "POST", {
      schema: JSON.stringify({ type: "record", name: "Other", fields: [{ name: "x", type: "int" }] }),
    });
    await post(`/config/${findingsSubject}`, "PUT", { compatibility: "BACKWARD" });

    // Source topics without their retry and dead-letter topics, for a service that may not create them.
    const bare = testEnv("bare");
    bareSources = {
      TOPIC_REGISTRY_MUTATION: bare.TOPIC_REGISTRY_MUTATION as string,
      TOPIC_OUTCOME_CREATED: bare.TOPIC_OUTCOME_CREATED as string,
      TOPIC_ESCALATION_EDGE: bare.TOPIC_ESCALATION_EDGE as string,
    };
    await harness.admin.createTopics({
      topics: Object.values(bareSources).map((topic) => ({ topic, numPartitions: 1 })),
    });
    // A database several tenants share needs the composite constraints, which `migrate` creates:
    // without them, a service that may not migrate must refuse to start.
    for (const name of TENANT_CONSTRAINT_NAMES)
      await harness.driver.executeQuery(
        `DROP CONSTRAINT ${name} IF EXISTS`,
        {},
        { database: harness.config.neo4j.database },
      );
  });
  afterAll(async () => {
    taken?.close();
    await harness?.close();
  });

  const cases: { cause: string; env: () => Record<string, string>; line: RegExp }[] = [
    {
      cause: "wrong Neo4j password",
      env: () => ({ NEO4J_PASSWORD: "not-the-password" }),
      line: /Neo4j at bolt:\/\/.*(unauthori[sz]ed|authentication)/i,
    },
    {
      cause: "Neo4j unreachable",
      env: () => ({ NEO4J_URI: "bolt://127.0.0.1:1" }),
      line: /Neo4j at bolt:\/\/127\.0\.0\.1:1: not reachable within \d+ s \(STARTUP_TIMEOUT_MS\)/,
    },
    {
      cause: "a database that does not exist",
      env: () => ({ NEO4J_DATABASE: "nosuchdatabase" }),
      line: /Neo4j at .*nosuchdatabase/i,
    },
    {
      cause: "schema registry unreachable",
      env: () => ({ SCHEMA_REGISTRY_URL: "http://127.0.0.1:1/apis/ccompat/v7" }),
      line: /schema registry at http:\/\/127\.0\.0\.1:1\/apis\/ccompat\/v7: not reachable within \d+ s/,
    },
    {
      cause: "broker unreachable",
      env: () => ({ KAFKA_BROKERS: "127.0.0.1:1" }),
      line: /Kafka at 127\.0\.0\.1:1: not reachable within \d+ s/,
    },
    {
      cause: "missing source topics",
      env: () => ({
        TOPIC_REGISTRY_MUTATION: testEnv("missing").TOPIC_REGISTRY_MUTATION as string,
      }),
      line: /source topic\(s\) .*registry-mutation do not exist; create them with "agent-graph-projector topics"/,
    },
    {
      cause: "a refused schema registration",
      env: () => ({ REGISTER_SCHEMAS: "true", TOPIC_OUTCOME_CREATED: refusedTopic }),
      line: /registering the reader schemas \(REGISTER_SCHEMAS\): registering our outcome-created schema under subject .* \(compatibility BACKWARD\) was refused: HTTP 409/,
    },
    {
      cause: "the findings subject holding a schema ours cannot evolve from",
      env: () => ({ TOPIC_GOVERNANCE_FINDINGS: `${harness.names.findings}-refused` }),
      line: /the governance-finding schema is not registered under subject .*-refused-value and registering it failed \(.*409.*\): register it with `agent-graph-projector schemas`/,
    },
    {
      cause: "migrations off, constraints missing",
      env: () => ({ MIGRATE_ON_START: "false", TENANTS: "a=neo4j,b=neo4j" }),
      line: /Neo4j at .*: database "neo4j" lacks the §6 constraint\(s\) agent_tenant_agent_id, .* \(MIGRATE_ON_START=false\); run "agent-graph-projector migrate"/,
    },
    {
      cause: "topic creation off, retry and dead-letter topics missing",
      env: () => ({ CREATE_TOPICS_ON_START: "false", ...bareSources }),
      // Named after the consumer group (RETRY_DLQ_TOPIC_SCOPE=group, the default): <source>.<group>.retry.
      line: /retry and dead-letter topic\(s\) .*registry-mutation\.[\w.-]+\.retry.* do not exist \(CREATE_TOPICS_ON_START=false\); create them with "agent-graph-projector topics"/,
    },
    {
      cause: "the metrics port already taken",
      env: () => ({ METRICS_PORT: String(takenPort) }),
      line: /metrics port 127\.0\.0\.1:\d+ is already in use \(METRICS_PORT\)/,
    },
  ];

  it.each(cases)("$cause", async ({ env, line }) => {
    const { code, stderr, ms } = await run(env());
    expect(code).toBe(1);
    const lines = stderr.trim().split("\n");
    expect(lines, stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^error: start-up failed: /);
    expect(lines[0]).toMatch(line);
    expect(ms).toBeLessThan(EXIT_WITHIN_MS);
  });
});
