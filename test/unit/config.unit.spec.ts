import { describe, expect, it } from "vitest";
import { CONFIG_KEYS, ConfigError, loadConfig } from "../../src/config.js";

describe("loadConfig", () => {
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
    expect(config.terminalAgentIds).toEqual(["os-agt-001", "os-agt-004"]);
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
  });

  it("maps tenants to databases", () => {
    const config = loadConfig({ TENANTS: "acme=acmedb, globex", NEO4J_DATABASE: "graph" });
    expect(config.tenants).toEqual([
      { tenantId: "acme", database: "acmedb" },
      { tenantId: "globex", database: "graph" },
    ]);
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
