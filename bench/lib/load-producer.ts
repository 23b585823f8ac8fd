import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import avro from "avsc";
import type { Producer } from "kafkajs";
import { sendBatchAtLeastOnce } from "../../src/adapters/kafka/client.js";
import type { EscalationEdge, OutcomeCreated } from "../../src/model/events.js";
import { readerSchema } from "../../src/model/schemas.js";
import type { Stream } from "../../src/topics.js";
import { tracked } from "./child.js";

const SOURCE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../producer/LoadProducer.java");

/**
 * One record of a steady load, its value encoded ahead of the load with `EVENT_TIME_PLACEHOLDER` as its
 * event time; `send` stamps the real one.
 */
export interface LoadRecord {
  readonly topic: string;
  readonly key: string;
  /** Confluent-framed Avro whose last field is the event time (created_at, observed_at). */
  readonly value: Buffer;
  /** How long before its send the record's event happened: 0, or a redelivered copy's age (ms). */
  readonly eventAgeMs: number;
}

/** Where a send's records went: per partition, the first offset they were given. */
export interface LoadPlacement {
  readonly topic: string;
  readonly partition: number;
  readonly firstOffset: number;
}

/** A send encoded ahead of the load, to be stamped and published by `LoadProducer.send`, in the order prepared. */
export interface PreparedSend {
  readonly records: number;
}

/** How a steady load publishes: one send at a time, answered once every record is acknowledged. */
export interface LoadProducer {
  readonly kind: "java" | "kafkajs";
  /** The producer's own process, when it is not the bench's: its CPU is counted beside the bench's. */
  readonly pid?: number;
  /** Frames records for one send, before the load: the CPU it takes is not the load's. */
  prepare(records: readonly LoadRecord[]): PreparedSend;
  /**
   * Publishes a prepared send, its records stamped `timestamp` (their Kafka timestamp, and their event
   * time less their age): only what a send must do is left for the load's time.
   */
  send(prepared: PreparedSend, timestamp: number): Promise<LoadPlacement[]>;
  close(): Promise<void>;
}

/**
 * The event time a load's values are encoded with before they are stamped. Avro writes a long as a
 * zig-zag varint, and every millisecond time from 2004 to 2039 (2^40 to 2^41 ms) takes six bytes:
 * the placeholder's bytes, at the end of the value, are overwritten in place by `stampEventTime`.
 */
export const EVENT_TIME_PLACEHOLDER = 2 ** 40;

/** A load event's own time: when the outcome was created or the escalation observed. */
export const eventTimeOf = (event: OutcomeCreated | EscalationEdge): number =>
  event.kind === "outcome-created" ? event.created_at : event.observed_at;

/** The same event at another time. */
export const withEventTime = <E extends OutcomeCreated | EscalationEdge>(event: E, at: number): E =>
  event.kind === "outcome-created" ? { ...event, created_at: at } : { ...event, observed_at: at };

/** Writes `ms` as the six-byte Avro long that ends at `end` of `buffer` (the value's last field). */
export function stampEventTime(buffer: Buffer, end: number, ms: number): void {
  if (!(ms >= 2 ** 40 && ms < 2 ** 41) || !Number.isInteger(ms))
    throw new Error(`event time ${ms} is not a millisecond time between 2004 and 2039`);
  let zigzag = ms * 2;
  for (let at = end - 6; at < end - 1; at++) {
    buffer[at] = (zigzag % 128) | 0x80;
    zigzag = Math.floor(zigzag / 128);
  }
  buffer[end - 1] = zigzag;
}

/** With kafkajs, as the projector's own producer: the fallback where the Java client is not at hand. */
export function kafkajsLoadProducer(producer: Producer): LoadProducer {
  interface Prepared extends PreparedSend {
    readonly byTopic: Map<string, { key: string; value: Buffer; eventAgeMs: number }[]>;
  }
  return {
    kind: "kafkajs",
    prepare(records): Prepared {
      const byTopic = new Map<string, { key: string; value: Buffer; eventAgeMs: number }[]>();
      for (const { topic, key, value, eventAgeMs } of records) {
        const messages = byTopic.get(topic) ?? [];
        messages.push({ key, value, eventAgeMs });
        byTopic.set(topic, messages);
      }
      return { records: records.length, byTopic };
    },
    async send(prepared, timestamp) {
      const topicMessages = [...(prepared as Prepared).byTopic].map(([topic, messages]) => ({
        topic,
        messages: messages.map(({ key, value, eventAgeMs }) => {
          stampEventTime(value, value.length, timestamp - eventAgeMs);
          return { key, value, timestamp: String(timestamp) };
        }),
      }));
      const metadata = await sendBatchAtLeastOnce(producer, { topicMessages });
      return metadata.map((m) => ({ topic: m.topicName, partition: m.partition, firstOffset: Number(m.baseOffset) }));
    },
    close: async () => {},
  };
}

/**
 * With Kafka's Java client (bench/producer/LoadProducer.java, run in source-file mode with the local
 * stack's broker jars): a steady load's producer then takes a fraction of the CPU kafkajs would, on the
 * two cores the projector and Neo4j share. Plaintext brokers only, as the local stack's are.
 */
export function javaLoadProducer(java: string, classpath: string, bootstrap: string): LoadProducer {
  const child: ChildProcess = tracked(
    spawn(java, ["-Xmx256m", "-XX:+UseSerialGC", "-cp", classpath, SOURCE, bootstrap], {
      stdio: ["pipe", "pipe", "pipe"],
    }),
  );
  const stderr: string[] = [];
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (line) => {
    if (stderr.length < 20 && !/^SLF4J|WARN|INFO/.test(line)) stderr.push(line);
  });
  const waiting: { resolve(line: string): void; reject(error: Error): void }[] = [];
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code) => {
      const error = new Error(`the Java load producer exited (${code}): ${stderr.join(" | ") || "nothing on stderr"}`);
      for (const w of waiting.splice(0)) w.reject(error);
      resolve();
    }),
  );
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    if (line.startsWith("{")) waiting.shift()?.resolve(line);
  });
  const topics = new Map<string, number>();
  const names: string[] = [];
  const stdin = child.stdin as NodeJS.WritableStream;

  interface Prepared extends PreparedSend {
    readonly frames: Buffer;
    /** Per record: where its Kafka timestamp starts, where its value ends, and its event's age. */
    readonly timestampAt: Int32Array;
    readonly valueEnd: Int32Array;
    readonly eventAgeMs: Float64Array;
  }

  return {
    kind: "java",
    pid: child.pid as number,
    prepare(records): Prepared {
      const frames: Buffer[] = [];
      for (const { topic } of records) {
        if (topics.has(topic)) continue;
        const name = Buffer.from(topic, "utf8");
        const frame = Buffer.allocUnsafe(3 + name.length);
        frame.write("T", 0, "latin1");
        frame.writeUInt16BE(name.length, 1);
        name.copy(frame, 3);
        frames.push(frame);
        topics.set(topic, names.length);
        names.push(topic);
      }
      // Positions are kept in the frames as sent: the topic frames go before the body.
      const headerLength = frames.reduce((n, frame) => n + frame.length, 0);
      let size = 1;
      for (const r of records) size += 1 + 2 + 4 + Buffer.byteLength(r.key) + 4 + r.value.length + 8;
      const body = Buffer.allocUnsafe(size);
      const timestampAt = new Int32Array(records.length);
      const valueEnd = new Int32Array(records.length);
      const eventAgeMs = new Float64Array(records.length);
      let at = 0;
      records.forEach((r, i) => {
        at = body.writeUInt8(0x52, at); // 'R'
        at = body.writeUInt16BE(topics.get(r.topic) as number, at);
        const keyLength = body.write(r.key, at + 4, "utf8");
        body.writeInt32BE(keyLength, at);
        at += 4 + keyLength;
        at = body.writeInt32BE(r.value.length, at);
        at += r.value.copy(body, at);
        valueEnd[i] = headerLength + at;
        eventAgeMs[i] = r.eventAgeMs;
        timestampAt[i] = headerLength + at;
        at += 8;
      });
      body.writeUInt8(0x46, at); // 'F'
      frames.push(body);
      return { records: records.length, frames: Buffer.concat(frames), timestampAt, valueEnd, eventAgeMs };
    },
    async send(prepared, timestamp) {
      const { frames, timestampAt, valueEnd, eventAgeMs } = prepared as Prepared;
      const high = Math.floor(timestamp / 2 ** 32);
      const low = timestamp % 2 ** 32;
      for (let i = 0; i < prepared.records; i++) {
        frames.writeUInt32BE(high, timestampAt[i] as number);
        frames.writeUInt32BE(low, (timestampAt[i] as number) + 4);
        stampEventTime(frames, valueEnd[i] as number, timestamp - (eventAgeMs[i] as number));
      }
      const answer = new Promise<string>((resolve, reject) => waiting.push({ resolve, reject }));
      stdin.write(frames);
      const parsed = JSON.parse(await answer) as { firsts?: [number, number, number][]; error?: string };
      if (parsed.error !== undefined) throw new Error(`the Java load producer failed: ${parsed.error}`);
      return (parsed.firsts ?? []).map(([topic, partition, firstOffset]) => ({
        topic: names[topic] as string,
        partition,
        firstOffset,
      }));
    },
    async close() {
      stdin.end();
      await exited;
    },
  };
}

/**
 * Outcomes and escalations as Confluent-framed Avro (magic byte, schema id, body) with the schemas
 * registered for the load: the bytes the registry client's encode gives, without a promise per record.
 */
export function framedEncoder(
  ids: Readonly<Record<Stream, number>>,
): (event: OutcomeCreated | EscalationEdge) => Buffer {
  const framed = (stream: Stream) => {
    const type = avro.Type.forSchema(readerSchema(stream) as avro.Schema);
    const header = Buffer.alloc(5);
    header.writeInt32BE(ids[stream], 1);
    return (value: object) => Buffer.concat([header, type.toBuffer(value)]);
  };
  const outcome = framed("outcome-created");
  const escalation = framed("escalation-edge");
  return ({ kind, ...value }) => (kind === "outcome-created" ? outcome(value) : escalation(value));
}
