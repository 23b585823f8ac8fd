import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import type { Producer } from "kafkajs";
import { describe, expect, it } from "vitest";
import { compressedSize, createRecordSink, DEFAULT_MAX_MESSAGE_BYTES } from "../../src/adapters/kafka/record-sink.js";
import { loadConfig } from "../../src/config.js";
import type { SinkItem } from "../../src/ports.js";
import { HEADER, topicNames } from "../../src/topics.js";
import { retryItem, sourceRecord } from "../support/sink-items.js";

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

const retry = (value: Buffer, offset: number): SinkItem =>
  retryItem(
    stream,
    sourceRecord(names.source[stream], offset, value, {
      key: `o-${offset}`,
      timestamp: "0",
      headers: { "x-trace": Buffer.from("t") },
    }),
  );

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

describe("record sink: a send that fails part-way", () => {
  const deadLetter = (offset: number): SinkItem => ({
    kind: "dead-letter",
    stream,
    fate: { kind: "dead-lettered", reason: "invalid-field", message: "bad" },
    record: { ...retry(Buffer.alloc(0), offset).record, value: randomBytes(10_000) },
  });
  const offsetsOf = (sends: readonly Sent[]) =>
    sends.flatMap((s) => s.messages.map((m) => String(m.headers[HEADER.sourceOffset])));

  /** Records every request; the `failing`th request (1-based) is refused once, as a broker flap leaves it. */
  function flakyProducer(failing: number) {
    const sends: Sent[] = [];
    let requests = 0;
    const producer = {
      async sendBatch({ topicMessages }: { topicMessages: Sent[] }) {
        requests++;
        if (requests === failing)
          throw Object.assign(new Error("not authorized"), {
            name: "KafkaJSProtocolError",
            type: "TOPIC_AUTHORIZATION_FAILED",
            retriable: false,
          });
        sends.push(...topicMessages);
        return [];
      },
    } as unknown as Producer;
    return { producer, sends };
  }

  it("sends again only the copies the broker did not acknowledge", async () => {
    const { producer, sends } = flakyProducer(2);
    const dead: string[] = [];
    const sink = createRecordSink(producer, names, "test", {
      maxMessageBytes: 50_000,
      onDeadLetter: (topic) => dead.push(topic),
    });
    const items = Array.from({ length: 20 }, (_, i) => deadLetter(i));
    await expect(sink.send(items)).rejects.toThrow("not authorized");
    const first = offsetsOf(sends);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(20);

    await sink.send(items);
    // Each copy once, in order: the chunks acknowledged before the failure are not sent again.
    expect(offsetsOf(sends)).toEqual(items.map((item) => item.record.offset));
    expect(dead).toHaveLength(20);

    // Once a send succeeded, the same items are new copies again (a later redelivery is sent).
    await sink.send(items.slice(0, 1));
    expect(offsetsOf(sends)).toHaveLength(21);
  });

  it("a deferred record dead-lettered for its size before the failure is reported so again", async () => {
    const { producer, sends } = flakyProducer(2);
    const limits = new Map([
      [names.retry[stream], 50_000],
      [names.deadLetter[stream], 500_000],
    ]);
    const sink = createRecordSink(producer, names, "test", { maxMessageBytes: limits });
    const big = retry(randomBytes(100_000), 1);
    const small = retry(Buffer.from("x"), 2);
    // The dead-letter topic's chunk goes first, then the retry topic's is refused.
    await expect(sink.send([big, small])).rejects.toThrow("not authorized");
    expect(sends.map((s) => s.topic)).toEqual([names.deadLetter[stream]]);
    const report = await sink.send([big, small]);
    expect(sends.map((s) => s.topic)).toEqual([names.deadLetter[stream], names.retry[stream]]);
    expect([...report.tooLarge.keys()]).toEqual([big.record]);
  });

  it("a record that took another way since is sent on its new way", async () => {
    const { producer, sends } = flakyProducer(2);
    const sink = createRecordSink(producer, names, "test", { maxMessageBytes: 50_000 });
    const deferred = retry(Buffer.from("x"), 1);
    await sink.send([deferred]);
    await expect(sink.send([retry(Buffer.from("y"), 2)])).rejects.toThrow("not authorized");
    const asDeadLetter: SinkItem = {
      kind: "dead-letter",
      stream,
      record: deferred.record,
      fate: { kind: "dead-lettered", reason: "precondition-timeout", message: "too old" },
    };
    await sink.send([asDeadLetter]);
    expect(sends.map((s) => s.topic)).toEqual([names.retry[stream], names.deadLetter[stream]]);
  });
});
