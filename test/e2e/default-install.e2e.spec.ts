import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findingsSubject } from "../../src/adapters/registry/findings-subject.js";
import { Harness, testEnv } from "../support/harness.js";
import { until } from "../support/until.js";

/** The keys a default install sets: where the servers are and how to log in to them. */
const ENDPOINTS_AND_CREDENTIALS = ["KAFKA_BROKERS", "SCHEMA_REGISTRY_URL", "NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD"];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * `run` as a new user starts it: endpoints and credentials, nothing else of ours — no findings subject
 * registered beforehand (REGISTER_SCHEMAS stays false), no retry, dead-letter or findings topic, no
 * constraints, no terminals. Only the source topics exist, which the producers own. Names are this
 * spec's own (the defaults, on a shared stack, would find what other specs left).
 */
describe("a default install comes up", () => {
  let harness: Harness;
  let child: ChildProcess | undefined;
  let stdout = "";
  let env: Record<string, string> = {};

  beforeAll(async () => {
    const fresh = testEnv("default-install");
    harness = new Harness(fresh);
    await harness.admin.connect();
    await harness.admin.createTopics({
      topics: Object.values(harness.names.source).map((topic) => ({ topic, numPartitions: 1 })),
    });
    env = {
      ...Object.fromEntries(ENDPOINTS_AND_CREDENTIALS.map((key) => [key, fresh[key] as string])),
      TOPIC_REGISTRY_MUTATION: fresh.TOPIC_REGISTRY_MUTATION as string,
      TOPIC_OUTCOME_CREATED: fresh.TOPIC_OUTCOME_CREATED as string,
      TOPIC_ESCALATION_EDGE: fresh.TOPIC_ESCALATION_EDGE as string,
      TOPIC_GOVERNANCE_FINDINGS: fresh.TOPIC_GOVERNANCE_FINDINGS as string,
      CONSUMER_GROUP: fresh.CONSUMER_GROUP as string,
      METRICS_PORT: String(await freePort()),
    };
  });
  afterAll(async () => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
    await harness?.close();
  });

  const subjectStatus = async (subject: string) =>
    (await fetch(`${harness.config.registry.url}/subjects/${encodeURIComponent(subject)}/versions`)).status;

  it("run reaches ready, registers the findings subject it owns and says it has no terminals", async () => {
    expect(await subjectStatus(findingsSubject(harness.names.findings))).toBe(404);
    child = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stdout?.on("data", (chunk) => (stdout += chunk));
    child.stderr?.on("data", (chunk) => (stderr += chunk));

    await until(
      "/readyz answering 200",
      async () => {
        if (child?.exitCode !== null) throw new Error(`run exited ${child?.exitCode}: ${stderr}`);
        return (await fetch(`http://127.0.0.1:${env.METRICS_PORT}/readyz`)).status === 200;
      },
      { timeoutMs: 150_000, everyMs: 500 },
    );

    // Ours: registered at start-up. The producers': untouched.
    expect(await subjectStatus(findingsSubject(harness.names.findings))).toBe(200);
    for (const topic of Object.values(harness.names.source)) expect(await subjectStatus(`${topic}-value`)).toBe(404);
    // Its own topics, named after its group.
    const topics = new Set(await harness.admin.listTopics());
    for (const topic of [...Object.values(harness.names.retry), ...Object.values(harness.names.deadLetter)])
      expect(topics.has(topic), topic).toBe(true);
    expect(harness.names.retry["outcome-created"]).toBe(`${env.TOPIC_OUTCOME_CREATED}.${env.CONSUMER_GROUP}.retry`);
    expect(stdout).toContain("no control terminals configured (TERMINAL_AGENT_IDS)");

    const exited = new Promise<number | null>((resolve) => child?.on("close", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});
