import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requiredAcls } from "../../src/acls.js";
import { ensureTopics, replicationFor, topicSpecs } from "../../src/adapters/kafka/admin.js";
import { migrate } from "../../src/adapters/neo4j/migrate.js";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { diffGraphs } from "../../src/model/graph.js";
import { type RunningService, startService } from "../../src/service.js";
import { type TopicNames, topicNames } from "../../src/topics.js";
import { stackSetScramPassword } from "../../stack/api.js";
import { loadConfig as loadStackConfig } from "../../stack/config.js";
import { secureProjectorEnv } from "../../stack/secure.js";
import { SECURE_REAUTH_MS } from "../../stack/servers/kafka.js";
import { generateEventLog, SMALL_WORKLOAD } from "../../workload/generate.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";

// The secured endpoints exist when the project's local stack runs in secured mode (STACK_SECURE=1, as
// CI runs it); against other servers there is nothing secured to test.
const localSecureStack =
  process.env.STACK_SECURE !== undefined &&
  ["1", "true"].includes(process.env.STACK_SECURE) &&
  !process.env.KAFKA_BROKERS &&
  process.env.STACK !== "testcontainers";

/**
 * The projector end to end over TLS everywhere: Kafka's SASL_SSL listener with SCRAM-SHA-512, Neo4j
 * Bolt with TLS, the registry over HTTPS, each trusting only the stack's own CA. Topics are created
 * and events published by the harness over the plain listener, as a producer on another network would.
 * A wrong password or a certificate from another CA stops the start-up with an error naming the cause.
 * Kafka enforces ACLs there: the projector's SCRAM user holds exactly what `requiredAcls` lists (the
 * table in docs/operations.md), granted by the harness as an operator would, and runs with migrations and topic
 * creation off, as a least-privilege deployment does.
 */
describe.skipIf(!localSecureStack)("the projector against the secured stack", () => {
  let harness: Harness;
  let secure: Record<string, string>;
  let otherCa: string;
  let dir: string;

  beforeAll(async () => {
    const stack = loadStackConfig(process.env);
    secure = { ...secureProjectorEnv(stack), MIGRATE_ON_START: "false", CREATE_TOPICS_ON_START: "false" };
    harness = await Harness.create("secured");
    await harness.clearGraph();
    // What the operator does once, as a principal with the rights to: constraints and ACLs.
    await migrate(harness.driver, [harness.config.neo4j.database]);
    await grant(harness, `User:${stack.kafkaScram.user}`);
    dir = mkdtempSync(join(tmpdir(), "agp-other-ca-"));
    otherCa = join(dir, "other-ca.crt");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=someone else's CA",
        "-keyout",
        join(dir, "other-ca.key"),
        "-out",
        otherCa,
      ],
      { stdio: "ignore" },
    );
  });
  afterAll(async () => {
    await harness?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a projector on the secured endpoints (with overrides) and returns its start-up error, if any. */
  const startupError = async (overrides: Record<string, string>): Promise<Error | undefined> => {
    const config = loadConfig({ ...harness.env, ...secure, ...overrides });
    const started = Date.now();
    try {
      const service = await startService(config, createLogger("silent"));
      await service.stop("test");
      return undefined;
    } catch (error) {
      // Bounded: a misconfiguration must not look like a slow server.
      expect(Date.now() - started).toBeLessThan(60_000);
      return error as Error;
    }
  };

  it("projects a workload over SASL_SSL, Bolt TLS and registry HTTPS into the graph the model expects", async () => {
    const service = await harness.startProjector(secure);
    const log = generateEventLog(21, SMALL_WORKLOAD);
    const events = [...log.registry, ...log.outcomes, ...log.escalations];
    await harness.publish(events);
    // Generous: TLS on every hop of a loaded two-core machine; the projector is not measured here.
    await harness.waitForCaughtUp(240_000);
    expect(diffGraphs(referenceGraph(events), await harness.dump())).toEqual([]);
    const ready = await fetch(`http://127.0.0.1:${service.metricsPort}/readyz`);
    expect(await ready.json()).toMatchObject({ status: "ok", neo4j: true, registry: true });
    await harness.stopProjectors();
  }, 300_000);

  /**
   * A SCRAM password rotated while the projector runs. The secured listener makes every client
   * re-authenticate within SECURE_REAUTH_MS, so all the projector's connections meet each change.
   * Changed on the broker and in the file together, it goes on: each re-authentication reads the file.
   * Changed on the broker a whole interval before the file (the race a real rotation has while the
   * kubelet refreshes the Secret), it stops naming the refusal, and a restart — the orchestrator's —
   * reads the file and goes on. Nothing is lost either way.
   */
  it("a SCRAM password rotated while the projector runs: it re-reads the file and goes on", async () => {
    const user = "agp-rotating";
    const own = await Harness.create("secured-rotation");
    try {
      await own.clearGraph();
      await stackSetScramPassword(user, "rotation-first-password");
      await grant(own, `User:${user}`);
      const passwordFile = join(dir, "kafka-password");
      writeFileSync(passwordFile, "rotation-first-password\n");
      const env = {
        ...secure,
        KAFKA_SASL_USERNAME: user,
        KAFKA_SASL_PASSWORD: "",
        KAFKA_SASL_PASSWORD_FILE: passwordFile,
      };
      const watch = (service: RunningService) => {
        const outcome: { error?: unknown } = {};
        service.done.catch((error: unknown) => {
          outcome.error = error;
        });
        return outcome;
      };
      const log = generateEventLog(22, SMALL_WORKLOAD);
      const third = Math.floor(log.outcomes.length / 3);
      const first = watch(await own.startProjector(env));
      await own.publish([...log.registry, ...log.outcomes.slice(0, third)]);
      await own.waitForCaughtUp(240_000);

      // Broker and file together: no restart.
      await stackSetScramPassword(user, "rotation-second-password");
      writeFileSync(passwordFile, "rotation-second-password\n");
      await new Promise((resolve) => setTimeout(resolve, SECURE_REAUTH_MS + 5_000));
      await own.publish(log.outcomes.slice(third, 2 * third));
      await own.waitForCaughtUp(240_000);
      expect(first.error).toBeUndefined();

      // The broker a whole re-authentication interval before the file: one line, then a restart.
      await stackSetScramPassword(user, "rotation-third-password");
      await new Promise((resolve) => setTimeout(resolve, SECURE_REAUTH_MS + 5_000));
      expect(String(first.error)).toMatch(/SASL SCRAM SHA512 authentication failed/);
      writeFileSync(passwordFile, "rotation-third-password\n");
      await own.stopProjectors();
      const second = watch(await own.startProjector(env));
      await own.publish([...log.outcomes.slice(2 * third), ...log.escalations]);
      await own.waitForCaughtUp(240_000);
      expect(second.error).toBeUndefined();
      const events = [...log.registry, ...log.outcomes, ...log.escalations];
      expect(diffGraphs(referenceGraph(events), await own.dump())).toEqual([]);
    } finally {
      await own.close();
    }
  }, 600_000);

  it("without the group's ACL the start-up fails at once, pointing at that ACL", async () => {
    const group = `${harness.config.kafka.group}-not-granted`;
    // Retry and dead-letter topics are named after the group (RETRY_DLQ_TOPIC_SCOPE=group): this group's
    // exist and are granted, as an operator would set them up, so that only the group's own ACL is missing.
    const names = topicNames({ ...harness.config.topics, scope: group });
    const layout = {
      partitions: harness.config.topics.partitions,
      ...(await replicationFor(harness.admin, harness.config.topics.replicationFactor)),
    };
    await ensureTopics(harness.admin, topicSpecs(names, layout));
    await grant(harness, `User:${loadStackConfig(process.env).kafkaScram.user}`, {
      names,
      group,
      only: "topic",
    });
    const error = await startupError({ CONSUMER_GROUP: group });
    expect(error?.message).toMatch(
      /Failed to find group coordinator for group .*-not-granted: the principal may lack the Read ACL on the group/,
    );
  }, 90_000);

  it("a wrong SCRAM password fails the start-up with Kafka's authentication error", async () => {
    const error = await startupError({ KAFKA_SASL_PASSWORD: "not-the-password" });
    expect(error?.message).toMatch(/SASL SCRAM SHA512 authentication failed/);
  }, 90_000);

  it("a broker certificate from an untrusted CA fails the start-up with a TLS error", async () => {
    const error = await startupError({ KAFKA_SSL_CA_FILE: otherCa });
    expect(error?.message).toMatch(/certificate/i);
  }, 90_000);

  it("a Neo4j certificate from an untrusted CA fails the start-up with a TLS error", async () => {
    const error = await startupError({ NEO4J_TRUSTED_CA_FILE: otherCa });
    expect(error?.message).toMatch(/certificate|trust/i);
  }, 90_000);

  it("a registry certificate from an untrusted CA fails the start-up with a TLS error", async () => {
    const error = await startupError({ SCHEMA_REGISTRY_CA_FILE: otherCa });
    expect(error?.message).toMatch(/certificate/i);
  }, 90_000);

  it("a wrong Neo4j password over TLS fails the start-up with Neo4j's authentication error", async () => {
    const error = await startupError({ NEO4J_PASSWORD: "not-the-password" });
    expect(error?.message).toMatch(/authentication|unauthorized/i);
  }, 90_000);
});

/**
 * Grants `principal` the ACLs `run` needs with migrations and topic creation off, and nothing else; for
 * another group's names (`target`), optionally only the topics' ACLs.
 */
async function grant(
  harness: Harness,
  principal: string,
  target: { names: TopicNames; group: string; only?: "topic" } = {
    names: harness.names,
    group: harness.config.kafka.group,
  },
): Promise<void> {
  const acls = requiredAcls(target.names, target.group, { createTopics: false, reconcile: false }).filter(
    (acl) => target.only === undefined || acl.resource === target.only,
  );
  await harness.admin.createAcls({
    acl: acls.flatMap((acl) =>
      acl.operations.map((operation) => ({
        resourceType: acl.resource === "topic" ? AclResourceTypes.TOPIC : AclResourceTypes.GROUP,
        resourceName: acl.name,
        resourcePatternType: acl.pattern === "literal" ? ResourcePatternTypes.LITERAL : ResourcePatternTypes.PREFIXED,
        principal,
        host: "*",
        operation: OPERATIONS[operation],
        permissionType: AclPermissionTypes.ALLOW,
      })),
    ),
  });
}

const OPERATIONS = {
  Read: AclOperationTypes.READ,
  Write: AclOperationTypes.WRITE,
  DescribeConfigs: AclOperationTypes.DESCRIBE_CONFIGS,
  AlterConfigs: AclOperationTypes.ALTER_CONFIGS,
  Create: AclOperationTypes.CREATE,
  Delete: AclOperationTypes.DELETE,
} as const;
