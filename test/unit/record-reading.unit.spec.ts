import type { Admin, KafkaMessage } from "kafkajs";
import { describe, expect, it } from "vitest";
import { assertNoActiveMembers, GroupActiveError } from "../../src/adapters/kafka/group-admin.js";
import { normaliseHeaders, toSourceRecord } from "../../src/adapters/kafka/source-record.js";
import { Rejection } from "../../src/model/fate.js";
import {
  describeDeadLetter,
  isSelected,
  redriveDeadLetters,
  redriveHeaders,
  redriveStream,
} from "../../src/operations/dlq.js";
import { rebuildRegistry } from "../../src/operations/rebuild.js";
import { replayTopics } from "../../src/operations/replay.js";
import { toEvent } from "../../src/pipeline/stream-rules.js";
import type { Decoder, GroupAdmin, SourceRecord, TopicReader } from "../../src/ports.js";
import { readRegistryTopic } from "../../src/reconcile/reconcile.js";
import { HEADER } from "../../src/topics.js";
import { shortTopicNames, snapshot } from "../support/builders.js";

const rules = { servedTenants: new Set(["default"]), maxListLength: 10, maxIdLength: 256, maxTextLength: 4096 };

/** Reads values as JSON, as if the registry had decoded them. */
const jsonDecoder: Decoder = {
  async decode(_stream, value) {
    try {
      return JSON.parse(value.toString()) as Record<string, unknown>;
    } catch {
      return new Rejection("undecodable", "not JSON");
    }
  },
};

const record = (fields: Partial<SourceRecord> & { text?: Record<string, string> }): SourceRecord => ({
  topic: "t",
  partition: 0,
  offset: "0",
  timestamp: "1",
  key: null,
  value: null,
  headers: Object.fromEntries(Object.entries(fields.text ?? {}).map(([k, v]) => [k, Buffer.from(v)])),
  ...fields,
});

const readerOf = (records: readonly SourceRecord[]): TopicReader => ({
  async readToEnd(topics, onRecord) {
    for (const r of records) if (topics.includes(r.topic)) onRecord(r);
  },
});

describe("Kafka records as the core sees them", () => {
  it("normalises headers: the first of repeated values, strings as bytes, absent kept absent", () => {
    const headers = normaliseHeaders({
      a: Buffer.from("x"),
      b: "text",
      c: [Buffer.from("1"), Buffer.from("2")],
      d: undefined,
    });
    expect(Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v?.toString()]))).toEqual({
      a: "x",
      b: "text",
      c: "1",
      d: undefined,
    });
    expect(normaliseHeaders(undefined)).toEqual({});
  });

  it("builds one SourceRecord from a kafkajs message, null key and value included", () => {
    const message = {
      offset: "7",
      timestamp: "99",
      key: null,
      value: null,
      headers: { h: "v" },
    } as unknown as KafkaMessage;
    expect(toSourceRecord("topic", 2, message)).toEqual({
      topic: "topic",
      partition: 2,
      offset: "7",
      timestamp: "99",
      key: null,
      value: null,
      headers: { h: Buffer.from("v") },
    });
  });
});

describe("toEvent: tombstone, decode, validate", () => {
  const deps = { decoder: jsonDecoder, rules };

  it("reads a tombstone from its key and headers", async () => {
    const tombstone = record({ key: Buffer.from("default/fin-agt-001"), text: { [HEADER.registryVersion]: "4" } });
    expect(await toEvent("registry-mutation", tombstone, deps)).toEqual({
      kind: "registry-tombstone",
      tenant_id: "default",
      agent_id: "fin-agt-001",
      registry_version: 4,
      occurred_at: 1,
    });
  });

  it("rejects a null value outside the registry topic, an undecodable value and an invalid event", async () => {
    const reasons = await Promise.all([
      toEvent("outcome-created", record({}), deps),
      toEvent("registry-mutation", record({ value: Buffer.from("{") }), deps),
      toEvent("registry-mutation", record({ value: Buffer.from(JSON.stringify(snapshot("not an agent id"))) }), deps),
    ]);
    expect(reasons.map((r) => (r instanceof Rejection ? r.reason : r.kind))).toEqual([
      "not-avro",
      "undecodable",
      "malformed-id",
    ]);
  });

  it("reconciliation reads the registry topic through it, counting what does not validate", async () => {
    const { kind: _kind, ...value } = snapshot("fin-agt-001", { registry_version: 3 });
    const topic = "registry";
    const read = await readRegistryTopic(
      readerOf([
        record({
          topic,
          offset: "0",
          key: Buffer.from("default/fin-agt-001"),
          value: Buffer.from(JSON.stringify(value)),
        }),
        record({ topic, offset: "1", key: Buffer.from("default/fin-agt-001") }),
        record({
          topic,
          offset: "2",
          key: Buffer.from("default/fin-agt-001"),
          text: { [HEADER.registryVersion]: "4" },
        }),
      ]),
      topic,
      jsonDecoder,
      rules,
    );
    expect(read.events.map((e) => [e.kind, e.registry_version])).toEqual([
      ["registry-snapshot", 3],
      ["registry-tombstone", 4],
    ]);
    expect(read.unreadable).toBe(1);
  });
});

describe("the group's active members are checked in one place", () => {
  const admin = (members: number) =>
    ({
      describeGroups: async () => ({
        groups: [{ groupId: "g", state: members > 0 ? "Stable" : "Empty", members: Array(members).fill({}) }],
      }),
    }) as unknown as Admin;

  it("refuses while the group has members, naming the group and the count", async () => {
    await expect(assertNoActiveMembers(admin(2), "g")).rejects.toThrow(
      new GroupActiveError(
        'consumer group "g" has 2 active member(s) (state Stable); stop every projector instance first',
      ),
    );
    await expect(assertNoActiveMembers(admin(0), "g")).resolves.toBeUndefined();
  });

  it("rebuild and replay refuse through it before reading or resetting anything", async () => {
    const calls: string[] = [];
    const busy: GroupAdmin = {
      async assertNoActiveMembers() {
        calls.push("check");
        throw new GroupActiveError("busy");
      },
      historyGaps: async () => [],
      async resetOffsets() {
        calls.push("reset");
        throw new GroupActiveError("busy");
      },
    };
    const reader: TopicReader = {
      async readToEnd() {
        calls.push("read");
      },
    };
    await expect(
      rebuildRegistry({
        graph: {} as never,
        admin: busy,
        reader,
        sink: {} as never,
        groupId: "g",
        topic: "registry",
        decoder: jsonDecoder,
        tenants: [{ tenantId: "default", database: "neo4j" }],
        shared: new Set(),
        rules,
      }),
    ).rejects.toBeInstanceOf(GroupActiveError);
    await expect(replayTopics(busy, "g", ["t"], { earliest: true }, false)).rejects.toBeInstanceOf(GroupActiveError);
    expect(calls).toEqual(["check", "reset"]);
  });

  it("replay refuses when history is gone, unless told to read what is left", async () => {
    const resets: string[][] = [];
    const admin: GroupAdmin = {
      assertNoActiveMembers: async () => {},
      historyGaps: async (topics) => topics.map((topic) => ({ topic, partition: 0, earliest: "5", needed: "0" })),
      async resetOffsets(_group, topics) {
        resets.push([...topics]);
        return [];
      },
    };
    await expect(replayTopics(admin, "g", ["t"], { earliest: true }, false)).rejects.toThrow(
      /t partition 0 starts at offset 5/,
    );
    await replayTopics(admin, "g", ["t"], { earliest: true }, true);
    expect(resets).toEqual([["t"]]);
  });
});

describe("dlq: list and re-drive over the record reader", () => {
  const names = shortTopicNames();
  const dead = (offset: string, source: string, reason: string) =>
    record({
      topic: names.deadLetter["outcome-created"],
      offset,
      key: Buffer.from(`o-${offset}`),
      value: Buffer.from("v"),
      text: {
        custom: "kept",
        [HEADER.sourceTopic]: source,
        [HEADER.sourcePartition]: "1",
        [HEADER.sourceOffset]: "42",
        [HEADER.errorClass]: reason,
        [HEADER.errorMessage]: "why",
        [HEADER.attempt]: "3",
      },
    });

  it("describes a dead-lettered record and selects it by id, reason or all", () => {
    const row = describeDeadLetter(dead("5", "out", "invalid-field"));
    expect(row).toEqual({
      dlq: "out.dlq:0:5",
      source: "out:1:42",
      key: "o-5",
      reason: "invalid-field",
      message: "why",
    });
    expect(isSelected(row, { ids: new Set(["out.dlq:0:5"]) })).toBe(true);
    expect(isSelected(row, { reason: "invalid-field" })).toBe(true);
    expect(isSelected(row, { reason: "not-avro" })).toBe(false);
    expect(isSelected(row, { all: true })).toBe(true);
    expect(isSelected(row, {})).toBe(false);
  });

  it("re-drives to the stream's retry topic with the source headers and without the verdict", async () => {
    const sent: { topic: string; key: string | null; headers: Record<string, string | undefined> }[] = [];
    const { redriven, notRedriven } = await redriveDeadLetters(
      readerOf([dead("5", "out", "invalid-field"), dead("6", "out.retry", "not-avro")]),
      {
        async publish(topic, r) {
          sent.push({
            topic,
            key: r.key?.toString() ?? null,
            headers: Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, v?.toString()])),
          });
        },
      },
      names,
      { reason: "not-avro" },
    );
    expect([redriven, notRedriven]).toEqual([1, []]);
    expect(sent).toEqual([
      {
        topic: "out.retry",
        key: "o-6",
        headers: {
          custom: "kept",
          [HEADER.sourceTopic]: "out.retry",
          [HEADER.sourcePartition]: "1",
          [HEADER.sourceOffset]: "42",
        },
      },
    ]);
    expect(Object.keys(redriveHeaders(dead("7", "out", "x")))).not.toContain(HEADER.errorClass);
    expect(() => redriveStream(dead("8", "elsewhere", "x"), names)).toThrow(
      /names no known source topic \(elsewhere\)/,
    );
  });

  it("leaves a record kept without its value where it is, and says why: published again it would read as a tombstone", async () => {
    const omitted = dead("9", "reg", "record-too-large");
    const headers = {
      ...omitted.headers,
      [HEADER.valueOmitted]: Buffer.from("1048600"),
      registry_version: Buffer.from("3"),
    };
    const sent: string[] = [];
    const result = await redriveDeadLetters(
      readerOf([{ ...omitted, value: null, headers }, dead("10", "out", "record-too-large")]),
      { publish: async (_topic, r) => void sent.push(r.key?.toString() ?? "") },
      names,
      { all: true },
    );
    expect(sent).toEqual(["o-10"]);
    expect(result.redriven).toBe(1);
    expect(result.notRedriven).toEqual([
      expect.objectContaining({
        dlq: "out.dlq:0:9",
        why: "its value (1048600 bytes) was too large to keep on the dead-letter topic; publish it again from its source reg:1:42",
      }),
    ]);
  });
});
