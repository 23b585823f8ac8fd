import { describe, expect, it } from "vitest";
import { Rejection } from "../../src/model/fate.js";
import { STREAM_RULES } from "../../src/pipeline/stream-rules.js";
import type { SourceRecord } from "../../src/ports.js";
import { HEADER, STREAMS } from "../../src/topics.js";
import { escalation, outcome, snapshot, tombstone } from "../support/builders.js";

const rules = { servedTenants: new Set(["default"]), maxListLength: 10, maxIdLength: 256, maxTextLength: 4096 };

const nullValued = (key: string | null, headers: Record<string, string> = {}): SourceRecord => ({
  topic: "t",
  partition: 0,
  offset: "0",
  timestamp: "1700000000000",
  key: key === null ? null : Buffer.from(key),
  value: null,
  headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Buffer.from(value)])),
});

describe("the stream table", () => {
  it("has one entry per stream, each naming the spec patterns its records go through", () => {
    expect(Object.keys(STREAM_RULES).sort()).toEqual([...STREAMS].sort());
    expect(STREAM_RULES["registry-mutation"].patterns).toEqual(["3.1", "3.2"]);
    expect(STREAM_RULES["outcome-created"].patterns).toEqual(["outcome", "3.3"]);
    expect(STREAM_RULES["escalation-edge"].patterns).toEqual(["escalated-to", "3.4"]);
  });

  it("reads a tombstone only on the registry stream", () => {
    const record = nullValued("default/a-agt-1", { [HEADER.registryVersion]: "7" });
    expect(STREAM_RULES["registry-mutation"].tombstone(record, rules)).toEqual({
      kind: "registry-tombstone",
      tenant_id: "default",
      agent_id: "a-agt-1",
      registry_version: 7,
      // Its Kafka timestamp: a tombstone has no occurred_at of its own (the registry's history needs one).
      occurred_at: 1700000000000,
    });
    for (const stream of ["outcome-created", "escalation-edge"] as const) {
      const refused = STREAM_RULES[stream].tombstone(record, rules);
      expect(refused).toBeInstanceOf(Rejection);
      expect((refused as Rejection).reason).toBe("not-avro");
    }
  });

  it("measures freshness from each event's own time; a tombstone's is its Kafka timestamp", () => {
    const record = nullValued(null);
    const registry = snapshot("a-agt-1");
    expect(STREAM_RULES["registry-mutation"].eventTime(registry, record)).toBe(registry.occurred_at);
    expect(STREAM_RULES["registry-mutation"].eventTime(tombstone("a-agt-1"), record)).toBe(1_700_000_000_000);
    const created = outcome("o-1", "a-agt-1");
    expect(STREAM_RULES["outcome-created"].eventTime(created, record)).toBe(created.created_at);
    const edge = escalation("o-1", "o-2");
    expect(STREAM_RULES["escalation-edge"].eventTime(edge, record)).toBe(edge.observed_at);
  });

  it("projects each stream's events into statements that apply the whole batch", () => {
    const plans = [
      STREAM_RULES["registry-mutation"].project([{ i: 0, event: snapshot("a-agt-1") }], false),
      STREAM_RULES["outcome-created"].project([{ i: 0, event: outcome("o-1", "a-agt-1") }], false),
      STREAM_RULES["escalation-edge"].project([{ i: 0, event: escalation("o-1", "o-2") }], false),
    ];
    for (const plan of plans) expect(plan.statements.length).toBeGreaterThan(0);
  });
});
