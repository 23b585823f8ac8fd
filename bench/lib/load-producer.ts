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

/** One record of a steady load, its value already encoded. */
export interface LoadRecord {
  readonly topic: string;
  readonly key: string;
  readonly value: Buffer;
  readonly timestamp: number;
}

/** Where a send's records went: per partition, the first offset they were given. */
export interface LoadPlacement {
  readonly topic: string;
  readonly partition: number;
  readonly firstOffset: number;
}

/** How a steady load publishes: one send at a time, answered once every record is acknowledged. */
export interface LoadProducer {
  readonly kind: "java" | "kafkajs";
  /** The producer's own process, when it is not the bench's: its CPU is counted beside the bench's. */
  readonly pid?: number;
  send(records: readonly LoadRecord[]): Promise<LoadPlacement[]>;
  close(): Promise<void>;
}

/** With kafkajs, as the projector's own producer: the fallback where the Java client is not at hand. */
export function kafkajsLoadProducer(producer: Producer): LoadProducer {
  return {
    kind: "kafkajs",
    async send(records) {
      const byTopic = new Map<string, { key: string; value: Buffer; timestamp: string }[]>();
      for (const { topic, key, value, timestamp } of records) {
        const messages = byTopic.get(topic) ?? [];
        messages.push({ key, value, timestamp: String(timestamp) });
        byTopic.set(topic, messages);
      }
      const metadata = await sendBatchAtLeastOnce(producer, {
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
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

  return {
    kind: "java",
    pid: child.pid as number,
    async send(records) {
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
      let size = 1;
      for (const r of records) size += 1 + 2 + 4 + Buffer.byteLength(r.key) + 4 + r.value.length + 8;
      const body = Buffer.allocUnsafe(size);
      let at = 0;
      for (const r of records) {
        at = body.writeUInt8(0x52, at); // 'R'
        at = body.writeUInt16BE(topics.get(r.topic) as number, at);
        const keyLength = body.write(r.key, at + 4, "utf8");
        body.writeInt32BE(keyLength, at);
        at += 4 + keyLength;
        at = body.writeInt32BE(r.value.length, at);
        at += r.value.copy(body, at);
        at = body.writeBigInt64BE(BigInt(r.timestamp), at);
      }
      body.writeUInt8(0x46, at); // 'F'
      frames.push(body);
      const answer = new Promise<string>((resolve, reject) => waiting.push({ resolve, reject }));
      stdin.write(Buffer.concat(frames));
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
