import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_KEYS, ConfigError, loadConfig, sharedDatabases } from "../../src/config.js";

describe("loadConfig", () => {
  it("a consumer group that cannot be part of a topic name is fine once the topics are named after the source", () => {
    expect(loadConfig({ CONSUMER_GROUP: "team/projector", RETRY_DLQ_TOPIC_SCOPE: "source" }).kafka.group).toBe(
      "team/projector",
    );
  });

  it("has a default for everything a local run needs, and freezes the result", () => {
    const config = loadConfig({});
    expect(config.kafka.brokers).toEqual(["127.0.0.1:9092"]);
    expect(config.neo4j).toMatchObject({ uri: "bolt://127.0.0.1:7687", user: "neo4j", database: "neo4j" });
    expect(config.kafka.group).toBe("agent-graph-projector");
    expect(config.topics).toMatchObject({
      registryMutation: "registry-mutation",
      outcomeCreated: "outcome-created",
      escalationEdge: "escalation-edge",
    });
    expect(config.metrics.port).toBe(9464);
    expect(config.metrics.host).toBe("127.0.0.1");
    expect(config.tenants).toEqual([{ tenantId: "default", database: "neo4j" }]);
    // No demo data: a deployment names its own control terminals, or has none.
    expect(config.terminalAgentIds).toEqual([]);
    expect(loadConfig({ TERMINAL_AGENT_IDS: "a-agt-1, b-agt-2" }).terminalAgentIds).toEqual(["a-agt-1", "b-agt-2"]);
    expect(config.topics.scope).toBe("agent-graph-projector");
    expect(loadConfig({ CONSUMER_GROUP: "blue" }).topics.scope).toBe("blue");
    expect(loadConfig({ RETRY_DLQ_TOPIC_SCOPE: "source" }).topics.scope).toBeUndefined();
    expect(config.findingsEnabled).toBe(true);
    expect(loadConfig({ FINDINGS_ENABLED: "false" }).findingsEnabled).toBe(false);
    expect(config.findingsSweepIntervalMs).toBe(30_000);
    expect(Object.isFrozen(config.kafka)).toBe(true);
  });

  it.each([
    ["METRICS_PORT", "ninety"],
    ["METRICS_PORT", "70000"],
    ["NEO4J_URI", "http://localhost:7474"],
    ["SCHEMA_REGISTRY_URL", "not a url"],
    ["KAFKA_SASL_MECHANISM", "kerberos"],
    ["LOG_LEVEL", "loud"],
    ["BATCH_MAX_RECORDS", "0"],
    ["KAFKA_SSL", "maybe"],
    ["FINDINGS_ENABLED", "sometimes"],
    ["RETRY_DLQ_TOPIC_SCOPE", "tenant"],
    ["CONSUMER_GROUP", "team/projector"],
    ["FINDINGS_SWEEP_INTERVAL_MS", "0"],
  ])("names the bad key: %s=%s", (key, value) => {
    expect(() => loadConfig({ [key]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [key]: value })).toThrow(new RegExp(`^${key}: `));
  });

  it("applies cross-field rules with the key to fix", () => {
    expect(() => loadConfig({ KAFKA_SASL_MECHANISM: "plain" })).toThrow(/^KAFKA_SASL_USERNAME: /);
    expect(() => loadConfig({ TENANTS: "a,a" })).toThrow(/^TENANTS: tenant "a" is listed twice/);
    expect(() => loadConfig({ TENANTS: "bad tenant" })).toThrow(/^TENANTS: /);
    expect(() => loadConfig({ RETRY_BACKOFF_MS: "5000", RETRY_BACKOFF_MAX_MS: "100" })).toThrow(
      /^RETRY_BACKOFF_MAX_MS: /,
    );
    expect(() => loadConfig({ BATCH_MAX_RECORDS: "3000", BACKLOG_BATCH_MAX_RECORDS: "2500" })).toThrow(
      /^BACKLOG_BATCH_MAX_RECORDS: must be at least BATCH_MAX_RECORDS/,
    );
  });

  it("sizes transactions 2,000 records caught up and 5,000 behind; BATCH_MAX_RECORDS alone bounds both", () => {
    expect(loadConfig({}).batch).toEqual({ maxRecords: 2000, backlogMaxRecords: 5000 });
    expect(loadConfig({ BATCH_MAX_RECORDS: "50" }).batch).toEqual({ maxRecords: 50, backlogMaxRecords: 50 });
    expect(loadConfig({ BACKLOG_BATCH_MAX_RECORDS: "8000" }).batch).toEqual({
      maxRecords: 2000,
      backlogMaxRecords: 8000,
    });
    expect(loadConfig({ BATCH_MAX_RECORDS: "500", BACKLOG_BATCH_MAX_RECORDS: "1500" }).batch).toEqual({
      maxRecords: 500,
      backlogMaxRecords: 1500,
    });
  });

  it("reads secrets from <KEY>_FILE, refusing both forms at once", () => {
    const dir = mkdtempSync(join(tmpdir(), "agp-config-"));
    const file = join(dir, "password");
    writeFileSync(file, "s3cret-from-file\n");
    expect(loadConfig({ NEO4J_PASSWORD_FILE: file }).neo4j.password).toBe("s3cret-from-file");
    const sasl = loadConfig({
      KAFKA_SASL_MECHANISM: "scram-sha-512",
      KAFKA_SASL_USERNAME: "projector",
      KAFKA_SASL_PASSWORD_FILE: file,
    }).kafka.sasl;
    // The value read at start, and the file, which is read again at each authentication.
    expect(sasl).toEqual({
      mechanism: "scram-sha-512",
      username: "projector",
      password: "s3cret-from-file",
      passwordFile: file,
    });
    expect(
      loadConfig({ SCHEMA_REGISTRY_USERNAME: "u", SCHEMA_REGISTRY_PASSWORD_FILE: file }).registry.auth?.password,
    ).toBe("s3cret-from-file");
    expect(() => loadConfig({ NEO4J_PASSWORD: "x", NEO4J_PASSWORD_FILE: file })).toThrow(/^NEO4J_PASSWORD_FILE: /);
    expect(() => loadConfig({ NEO4J_PASSWORD_FILE: join(dir, "missing") })).toThrow(
      /^NEO4J_PASSWORD_FILE: cannot read/,
    );
  });

  it("takes TLS files for real clusters, and refuses what would send credentials in clear", () => {
    const dir = mkdtempSync(join(tmpdir(), "agp-config-"));
    const pem = join(dir, "ca.pem");
    writeFileSync(pem, "-----BEGIN CERTIFICATE-----\n");
    const kafka = loadConfig({ KAFKA_SSL_CA_FILE: pem, KAFKA_SSL_CERT_FILE: pem, KAFKA_SSL_KEY_FILE: pem }).kafka;
    expect(kafka.ssl).toBe(true);
    expect(kafka.tls).toEqual({ caFile: pem, certFile: pem, keyFile: pem });
    expect(() => loadConfig({ KAFKA_SSL_CA_FILE: join(dir, "nope.pem") })).toThrow(/^KAFKA_SSL_CA_FILE: file /);
    expect(() => loadConfig({ KAFKA_SSL_CERT_FILE: pem })).toThrow(/^KAFKA_SSL_KEY_FILE: .* go together/);
    const plain = { KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_USERNAME: "u", KAFKA_SASL_PASSWORD: "p" };
    expect(() => loadConfig(plain)).toThrow(/^KAFKA_SASL_MECHANISM: SASL PLAIN without TLS/);
    expect(loadConfig({ ...plain, KAFKA_SSL: "true" }).kafka.sasl?.mechanism).toBe("plain");
    expect(loadConfig({ ...plain, KAFKA_ALLOW_PLAINTEXT_SASL_PLAIN: "true" }).kafka.ssl).toBe(false);
    expect(loadConfig({ NEO4J_TRUSTED_CA_FILE: pem }).neo4j.tls.caFile).toBe(pem);
    expect(() => loadConfig({ NEO4J_TRUSTED_CA_FILE: pem, NEO4J_URI: "neo4j+s://db:7687" })).toThrow(/^NEO4J_URI: /);
    expect(() => loadConfig({ SCHEMA_REGISTRY_CA_FILE: pem })).toThrow(/^SCHEMA_REGISTRY_URL: /);
    expect(
      loadConfig({ SCHEMA_REGISTRY_CA_FILE: pem, SCHEMA_REGISTRY_URL: "https://registry:8443" }).registry.tls.caFile,
    ).toBe(pem);
  });

  it("maps tenants to databases", () => {
    const config = loadConfig({ TENANTS: "acme=acmedb, globex", NEO4J_DATABASE: "graph" });
    expect(config.tenants).toEqual([
      { tenantId: "acme", database: "acmedb" },
      { tenantId: "globex", database: "graph" },
    ]);
  });

  it("compares database names as Neo4j does, case-insensitively: tenants on NEO4J and neo4j share one", () => {
    const config = loadConfig({ TENANTS: "a=neo4j,b=NEO4J", NEO4J_DATABASE: "Neo4j" });
    expect(config.tenants.map((t) => t.database)).toEqual(["neo4j", "neo4j"]);
    expect(config.neo4j.database).toBe("neo4j");
    expect([...sharedDatabases(config.tenants)]).toEqual(["neo4j"]);
    expect([...sharedDatabases(loadConfig({ TENANTS: "a,b=Neo4J", NEO4J_DATABASE: "NEO4J" }).tenants)]).toEqual([
      "neo4j",
    ]);
    expect(
      sharedDatabases([
        { tenantId: "a", database: "Graph" },
        { tenantId: "b", database: "graph" },
      ]).size,
    ).toBe(1);
  });

  it("lists every key it reads", () => {
    expect(CONFIG_KEYS).toEqual(
      expect.arrayContaining([
        "KAFKA_BROKERS",
        "SCHEMA_REGISTRY_URL",
        "NEO4J_URI",
        "NEO4J_PASSWORD",
        "TENANTS",
        "METRICS_PORT",
      ]),
    );
  });
});
