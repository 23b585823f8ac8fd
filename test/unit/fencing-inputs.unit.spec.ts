import type { Admin } from "kafkajs";
import { describe, expect, it } from "vitest";
import { historyGaps } from "../../src/adapters/kafka/history.js";
import { Rejection } from "../../src/model/fate.js";
import { parseRegistryKey, registryKey } from "../../src/model/registry-key.js";
import { validateRegistryTombstone } from "../../src/model/validate.js";

const rules = (tenants: string[]) => ({
  servedTenants: new Set(tenants),
  maxListLength: 10,
  maxIdLength: 256,
  maxTextLength: 4096,
});

describe("registry keys and tombstones", () => {
  it("keys name the tenant; a bare agent id is still read", () => {
    expect(registryKey("acme", "fin-agt-001")).toBe("acme/fin-agt-001");
    expect(parseRegistryKey("acme/fin-agt-001")).toEqual({ tenantId: "acme", agentId: "fin-agt-001" });
    expect(parseRegistryKey("fin-agt-001")).toEqual({ agentId: "fin-agt-001" });
  });

  it("a tombstone takes its tenant from its key, its header, or the one tenant served", () => {
    expect(validateRegistryTombstone("acme/fin-agt-001", undefined, "3", rules(["acme", "globex"]))).toEqual({
      kind: "registry-tombstone",
      tenant_id: "acme",
      agent_id: "fin-agt-001",
      registry_version: 3,
    });
    expect(validateRegistryTombstone("fin-agt-001", "globex", "3", rules(["acme", "globex"]))).toMatchObject({
      tenant_id: "globex",
    });
    expect(validateRegistryTombstone("fin-agt-001", undefined, "3", rules(["default"]))).toMatchObject({
      tenant_id: "default",
    });
  });

  it("rejects a tombstone without a version, naming no tenant among several, or whose key and header disagree", () => {
    const reasons = [
      validateRegistryTombstone("fin-agt-001", undefined, undefined, rules(["default"])),
      validateRegistryTombstone("fin-agt-001", undefined, "x", rules(["default"])),
      validateRegistryTombstone("fin-agt-001", undefined, "3", rules(["acme", "globex"])),
      validateRegistryTombstone("acme/fin-agt-001", "globex", "3", rules(["acme", "globex"])),
    ].map((result) => (result instanceof Rejection ? result.reason : "accepted"));
    expect(reasons).toEqual(["invalid-field", "invalid-field", "invalid-field", "invalid-field"]);
  });
});

describe("historyGaps", () => {
  const admin = (partitions: { low: string; high: string; atTime: string }[]) =>
    ({
      fetchTopicOffsets: async () =>
        partitions.map((p, partition) => ({ partition, low: p.low, high: p.high, offset: p.high })),
      fetchTopicOffsetsByTimestamp: async () => partitions.map((p, partition) => ({ partition, offset: p.atTime })),
    }) as unknown as Admin;

  it("from the earliest offset: any partition whose log starts above 0 has lost records", async () => {
    const gaps = await historyGaps(
      admin([
        { low: "0", high: "5", atTime: "0" },
        { low: "7", high: "9", atTime: "7" },
      ]),
      ["t"],
      { earliest: true },
    );
    expect(gaps).toEqual([{ topic: "t", partition: 1, earliest: "7", needed: "0" }]);
  });

  it("from a time: a gap where the broker answers with the log start, or has nothing left", async () => {
    const gaps = await historyGaps(
      admin([
        { low: "4", high: "9", atTime: "6" },
        { low: "4", high: "9", atTime: "4" },
        { low: "9", high: "9", atTime: "-1" },
      ]),
      ["t"],
      { timestamp: 0 },
    );
    expect(gaps.map((g) => g.partition)).toEqual([1, 2]);
  });
});
