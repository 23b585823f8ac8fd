import { randomBytes } from "node:crypto";
import type { Admin, Producer } from "kafkajs";
import { describe, expect, it } from "vitest";
import {
  HAND_OFF_HEADROOM_BYTES,
  handOffLimit,
  requireSourceTopics,
  retryRetentionMs,
  topicSpecs,
} from "../../src/adapters/kafka/admin.js";
import {
  chunksUnder,
  createRecordSink,
  MAX_ERROR_MESSAGE_BYTES,
  messageSize,
  truncateUtf8,
} from "../../src/adapters/kafka/record-sink.js";
import { loadConfig } from "../../src/config.js";
import type { SinkItem } from "../../src/ports.js";
import { HEADER, topicNames } from "../../src/topics.js";

const names = topicNames(loadConfig({}).topics);
/** Bytes gzip cannot shrink: the copies below are too large for their topic even compressed. */
const incompressible = (bytes: number): Buffer => randomBytes(bytes);
const setting = (spec: ReturnType<typeof topicSpecs>[number], name: string) =>
  spec.configEntries?.find((entry) => entry.name === name)?.value;

describe("topicSpecs", () => {
  it("TOPIC_REPLICATION_FACTOR is unset by default (the cluster decides) and validated when set", () => {
    expect(loadConfig({}).topics.replicationFactor).toBeUndefined();
    expect(loadConfig({ TOPIC_REPLICATION_FACTOR: "3" }).topics.replicationFactor).toBe(3);
    expect(() => loadConfig({ TOPIC_REPLICATION_FACTOR: "0" })).toThrow(/TOPIC_REPLICATION_FACTOR/);
  });

  it("retry and dead-letter topics take their source topic's replication, others the layout's", () => {
    const specs = topicSpecs(
      names,
      { partitions: 6, replicationFactor: 3, minInsyncReplicas: 2 },
      { "outcome-created": { replicationFactor: 5, minInsyncReplicas: 3 } },
    );
    const of = (topic: string) => specs.find((spec) => spec.topic === topic) as (typeof specs)[number];
    for (const topic of [names.retry["outcome-created"], names.deadLetter["outcome-created"]]) {
      expect(of(topic).replicationFactor).toBe(5);
      expect(setting(of(topic), "min.insync.replicas")).toBe("3");
    }
    for (const topic of [names.source["outcome-created"], names.retry["escalation-edge"]]) {
      expect(of(topic).replicationFactor).toBe(3);
      expect(setting(of(topic), "min.insync.replicas")).toBe("2");
    }
  });

  it("retry and dead-letter topics take the largest record their source takes, plus a copy's headers", () => {
    const specs = topicSpecs(
      names,
      { partitions: 1, replicationFactor: 1 },
      { "outcome-created": { replicationFactor: 1, minInsyncReplicas: 1, maxMessageBytes: 4_194_304 } },
    );
    const of = (topic: string) => specs.find((spec) => spec.topic === topic) as (typeof specs)[number];
    for (const topic of [names.retry["outcome-created"], names.deadLetter["outcome-created"]])
      expect(Number(setting(of(topic), "max.message.bytes"))).toBe(4_194_304 + HAND_OFF_HEADROOM_BYTES);
    // A source's limit is its owner's; a source not described leaves its own topics at the broker's default.
    expect(setting(of(names.source["outcome-created"]), "max.message.bytes")).toBeUndefined();
    expect(setting(of(names.retry["registry-mutation"]), "max.message.bytes")).toBeUndefined();
    expect(handOffLimit(1_048_588)).toBeGreaterThan(1_048_588 + MAX_ERROR_MESSAGE_BYTES + 1_000);
  });

  it("never asks for more in-sync replicas than copies", () => {
    for (const spec of topicSpecs(names, { partitions: 1, replicationFactor: 1, minInsyncReplicas: 2 }))
      expect(setting(spec, "min.insync.replicas")).toBe("1");
  });

  it("retry topics keep records for the whole deferral window plus a week", () => {
    for (const maxAge of [1000, 3_600_000, 30 * 86_400_000]) {
      const retry = topicSpecs(names, { partitions: 1, replicationFactor: 1, retryMaxAgeMs: maxAge }).filter((spec) =>
        Object.values(names.retry).includes(spec.topic),
      );
      expect(retry).toHaveLength(3);
      for (const spec of retry) expect(Number(setting(spec, "retention.ms"))).toBe(retryRetentionMs(maxAge));
      expect(retryRetentionMs(maxAge)).toBe(maxAge + 7 * 86_400_000);
    }
  });
});

describe("record sink limits", () => {
  it("truncateUtf8 cuts to whole characters within the byte limit", () => {
    expect(truncateUtf8("abc", 10)).toBe("abc");
    const text = "é".repeat(3000); // 6000 bytes
    const cut = truncateUtf8(text, 4001);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(4001);
    expect(cut).toBe("é".repeat(2000));
    expect(truncateUtf8("😀😀", 5)).toBe("😀");
  });

  it("chunksUnder keeps order and each chunk within the budget", () => {
    const items = [5, 5, 5, 12, 1, 1].map((size, i) => ({ size, i }));
    const chunks = chunksUnder(items, 10);
    expect(chunks.map((chunk) => chunk.map((item) => item.i))).toEqual([[0, 1], [2], [3], [4, 5]]);
  });

  const record = (value: Buffer, offset: number) => ({
    topic: names.source["outcome-created"],
    partition: 0,
    offset: String(offset),
    timestamp: "0",
    key: Buffer.from("k"),
    value,
    headers: {},
  });
  const deadLetter = (value: Buffer, offset: number, message = "bad"): SinkItem => ({
    kind: "dead-letter",
    record: record(value, offset),
    stream: "outcome-created",
    fate: { kind: "dead-lettered", reason: "invalid-field", message },
  });

  function recordingProducer() {
    const sends: { topic: string; messages: { key: Buffer | null; value: Buffer | null; headers: object }[] }[][] = [];
    const producer = {
      async sendBatch({ topicMessages }: { topicMessages: (typeof sends)[number] }) {
        sends.push(topicMessages);
        return [];
      },
    } as unknown as Producer;
    return { producer, sends };
  }

  it("splits a send into requests under the topics' max.message.bytes, in order", async () => {
    const { producer, sends } = recordingProducer();
    const sink = createRecordSink(producer, names, "test", { maxMessageBytes: 100_000 });
    await sink.send(Array.from({ length: 50 }, (_, i) => deadLetter(Buffer.alloc(10_000, 1), i)));
    expect(sends.length).toBeGreaterThan(5);
    const offsets: string[] = [];
    for (const request of sends) {
      const messages = request.flatMap((t) => t.messages);
      const size = messages.reduce((sum, m) => sum + messageSize(m as Parameters<typeof messageSize>[0]), 0);
      expect(size).toBeLessThanOrEqual(100_000);
      for (const m of messages) offsets.push(String((m.headers as Record<string, string>)[HEADER.sourceOffset] ?? ""));
    }
    expect(offsets).toEqual(Array.from({ length: 50 }, (_, i) => String(i)));
  });

  it("bounds the error text and omits a value that cannot fit, saying so", async () => {
    const { producer, sends } = recordingProducer();
    const sink = createRecordSink(producer, names, "test", { maxMessageBytes: 100_000 });
    await sink.send([deadLetter(incompressible(99_990), 7, "x".repeat(40_000))]);
    const [message] = sends.flatMap((request) => request.flatMap((t) => t.messages));
    const headers = message?.headers as Record<string, string>;
    expect(Buffer.byteLength(headers[HEADER.errorMessage] ?? "")).toBe(MAX_ERROR_MESSAGE_BYTES);
    expect(message?.value).toBeNull();
    expect(headers[HEADER.valueOmitted]).toBe("99990");
    expect(message?.key?.toString()).toBe("k");
  });
});

describe("record sink: a copy too large for its topic", () => {
  function recordingProducer() {
    const sends: { topic: string; messages: { value: Buffer | null; headers: Record<string, unknown> }[] }[] = [];
    const producer = {
      async sendBatch({ topicMessages }: { topicMessages: typeof sends }) {
        sends.push(...topicMessages);
        return [];
      },
    } as unknown as Producer;
    return { producer, sends };
  }
  const retry = (value: Buffer, offset: number): SinkItem => ({
    kind: "retry",
    stream: "outcome-created",
    attempt: 1,
    notBefore: 0,
    firstSeen: 0,
    reason: "agent-missing",
    record: {
      topic: names.source["outcome-created"],
      partition: 2,
      offset: String(offset),
      timestamp: "0",
      key: Buffer.from("k"),
      value,
      headers: { "x-trace": Buffer.from("t") },
    },
  });

  it("a deferred record that does not fit its retry topic is dead-lettered as record-too-large", async () => {
    const { producer, sends } = recordingProducer();
    const limits = new Map([
      [names.retry["outcome-created"], 50_000],
      [names.deadLetter["outcome-created"], 200_000],
    ]);
    const dead: string[] = [];
    const sink = createRecordSink(producer, names, "test", {
      maxMessageBytes: limits,
      onDeadLetter: (topic) => dead.push(topic),
    });
    await sink.send([retry(incompressible(100_000), 5), retry(Buffer.alloc(10, 1), 6)]);
    const to = (topic: string) => sends.filter((s) => s.topic === topic).flatMap((s) => s.messages);
    expect(to(names.retry["outcome-created"]).map((m) => String(m.headers[HEADER.sourceOffset]))).toEqual(["6"]);
    const [letter] = to(names.deadLetter["outcome-created"]);
    expect(letter?.value?.length).toBe(100_000);
    expect(letter?.headers).toMatchObject({
      [HEADER.errorClass]: "record-too-large",
      [HEADER.sourceTopic]: names.source["outcome-created"],
      [HEADER.sourcePartition]: "2",
      [HEADER.sourceOffset]: "5",
    });
    expect(String(letter?.headers[HEADER.errorMessage])).toMatch(/agent-missing.*larger than/);
    expect(dead).toEqual([names.deadLetter["outcome-created"]]);
  });

  it("goes without its value when the dead-letter topic cannot take it either", async () => {
    const { producer, sends } = recordingProducer();
    const sink = createRecordSink(producer, names, "test", { maxMessageBytes: 50_000 });
    await sink.send([retry(incompressible(100_000), 5)]);
    expect(sends.map((s) => s.topic)).toEqual([names.deadLetter["outcome-created"]]);
    const [letter] = sends.flatMap((s) => s.messages);
    expect(letter?.value).toBeNull();
    expect(letter?.headers).toMatchObject({ [HEADER.valueOmitted]: "100000", "x-trace": Buffer.from("t") });
  });

  it("a refusal that is not about size is thrown on", async () => {
    const producer = {
      async sendBatch() {
        throw Object.assign(new Error("not authorized"), {
          name: "KafkaJSProtocolError",
          type: "TOPIC_AUTHORIZATION_FAILED",
          retriable: false,
        });
      },
    } as unknown as Producer;
    const sink = createRecordSink(producer, names, "test");
    await expect(sink.send([retry(Buffer.alloc(10), 1)])).rejects.toThrow("not authorized");
  });
});

describe("requireSourceTopics", () => {
  const sources = Object.values(names.source);
  /** An admin whose successive listTopics answers are given; the last one repeats. */
  const answering = (...answers: string[][]) => {
    let calls = 0;
    const admin = {
      listTopics: async () => answers[Math.min(calls++, answers.length - 1)] ?? [],
    } as unknown as Admin;
    return { admin, calls: () => calls };
  };
  const noWait = async () => {};

  it("goes on when every source topic is listed", async () => {
    const { admin, calls } = answering(sources);
    await requireSourceTopics(admin, names, 5_000, noWait);
    expect(calls()).toBe(1);
  });

  it("asks again when a broker's metadata does not list a topic created a moment ago", async () => {
    const { admin, calls } = answering(sources.slice(1), sources.slice(1), sources);
    await requireSourceTopics(admin, names, 5_000, noWait);
    expect(calls()).toBe(3);
  });

  it("names the topics still missing after the confirmation window, as a fatal error", async () => {
    const { admin, calls } = answering([], sources.slice(0, 2));
    await expect(requireSourceTopics(admin, names, 2_000, noWait)).rejects.toMatchObject({
      name: "FatalError",
      message: `source topic(s) ${sources[2]} do not exist; create them with "agent-graph-projector topics"`,
    });
    expect(calls()).toBe(5);
  });
});
