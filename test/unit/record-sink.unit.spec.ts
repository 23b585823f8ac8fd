import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import type { Producer } from "kafkajs";
import { describe, expect, it } from "vitest";
import { compressedSize, createRecordSink, DEFAULT_MAX_MESSAGE_BYTES } from "../../src/adapters/kafka/record-sink.js";
import { loadConfig } from "../../src/config.js";
import type { SinkItem } from "../../src/ports.js";
import { HEADER, topicNames } from "../../src/topics.js";

const names = topicNames(loadConfig({}).topics);
const stream = "outcome-created";

interface Sent {
  topic: string;
  messages: { key: Buffer | null; value: Buffer | null; headers: Record<string, unknown> }[];
}

function recordingProducer() {
  const sends: Sent[] = [];
  const producer = {
    async sendBatch({ topicMessages }: { topicMessages: Sent[] }) {
      sends.push(...topicMessages);
      return [];
    },
  } as unknown as Producer;
  return { producer, sends };
}

const retry = (value: Buffer, offset: number): SinkItem => ({
  kind: "retry",
  stream,
  attempt: 1,
  notBefore: 0,
  firstSeen: 0,
  reason: "agent-missing",
  record: {
    topic: names.source[stream],
    partition: 0,
    offset: String(offset),
    timestamp: "0",
    key: Buffer.from(`o-${offset}`),
    value,
    headers: { "x-trace": Buffer.from("t") },
  },
});

/** A large value that compresses well, as a producer's repeated text does. */
const compressible = (bytes: number): Buffer =>
  Buffer.from("outcome detail, line after line; ".repeat(bytes / 32 + 1)).subarray(0, bytes);

/** The bytes kafkajs puts on the wire for the message alone in a gzip-compressed record batch. */
async function kafkajsBatchBytes(message: Sent["messages"][number]): Promise<number> {
  const require = createRequire(import.meta.url);
  const { RecordBatch } = require("kafkajs/src/protocol/recordBatch/v0/index.js");
  const Record = require("kafkajs/src/protocol/recordBatch/record/v0/index.js");
  const { Types } = require("kafkajs/src/protocol/message/compression/index.js");
  const batch = await RecordBatch({
    compression: Types.GZIP,
    records: [Record({ key: message.key, value: message.value, headers: message.headers })],
  });
  return batch.buffer.length;
}

describe("record sink: a copy is judged by what the broker takes, compressed", () => {
  it("a 2 MB deferred outcome that gzips to a few KB goes to the retry topic whole", async () => {
    const { producer, sends } = recordingProducer();
    const dead: string[] = [];
    const sink = createRecordSink(producer, names, "test", {
      maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
      onDeadLetter: (topic) => dead.push(topic),
    });
    const value = compressible(2_000_064);
    const report = await sink.send([retry(value, 5)]);
    expect(report.tooLarge.size).toBe(0);
    expect(dead).toEqual([]);
    expect(sends.map((s) => s.topic)).toEqual([names.retry[stream]]);
    const [copy] = sends.flatMap((s) => s.messages);
    expect(copy?.value?.equals(value)).toBe(true);
    expect(copy?.headers[HEADER.deferReason]).toBe("agent-missing");
  });

  it("a copy too large even compressed is dead-lettered as record-too-large, without its value", async () => {
    const { producer, sends } = recordingProducer();
    const sink = createRecordSink(producer, names, "test", { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES });
    const report = await sink.send([retry(randomBytes(2_000_064), 5)]);
    expect([...report.tooLarge.values()]).toEqual([expect.stringMatching(/agent-missing.*larger than/)]);
    expect(sends.map((s) => s.topic)).toEqual([names.deadLetter[stream]]);
    const [letter] = sends.flatMap((s) => s.messages);
    expect(letter?.value).toBeNull();
    expect(letter?.headers).toMatchObject({
      [HEADER.errorClass]: "record-too-large",
      [HEADER.valueOmitted]: "2000064",
    });
  });

  it("compressedSize is never below what kafkajs puts on the wire, batch frame aside", async () => {
    const { producer, sends } = recordingProducer();
    const sink = createRecordSink(producer, names, "test", { maxMessageBytes: 10_000_000 });
    await sink.send([retry(compressible(2_000_064), 1), retry(randomBytes(300_000), 2), retry(Buffer.from("x"), 3)]);
    for (const message of sends.flatMap((s) => s.messages)) {
      const estimate = await compressedSize(message as Parameters<typeof compressedSize>[0]);
      const wire = await kafkajsBatchBytes(message);
      // The sink keeps BATCH_OVERHEAD_BYTES (128) of every limit for the frame.
      expect(estimate + 128).toBeGreaterThanOrEqual(wire);
      // And close: within the frame and per-field varints, not a multiple of it.
      expect(estimate).toBeLessThan(wire + 1_000);
    }
  });
});
