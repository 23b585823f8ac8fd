import { randomBytes } from "node:crypto";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProducer } from "../../src/adapters/kafka/client.js";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { createRecordSink } from "../../src/adapters/kafka/record-sink.js";
import { setTopicConfig } from "../../src/adapters/kafka/topic-limits.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import { readerSchema } from "../../src/model/schemas.js";
import type { SinkItem } from "../../src/ports.js";
import { HEADER, type Stream } from "../../src/topics.js";
import { escalation, outcome, snapshot } from "../support/builders.js";
import { Harness } from "../support/harness.js";
import { retryItem, sourceRecord } from "../support/sink-items.js";

const { CompressionTypes, ConfigResourceTypes, ConfigSource } = kafkajs;

/** Kafka's default max.message.bytes: the largest record batch a topic created without settings takes. */
const KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/** Bytes gzip cannot shrink: compression alone must not be what makes a copy fit. */
const incompressible = (bytes: number): Buffer => randomBytes(bytes);

/**
 * The retry and dead-letter topics take records as large as their source topic does: a deferred copy
 * (the original plus the agp-* headers) must never be refused for its size, and a record that still
 * cannot be handed on is the record's problem, not a reason to stop the service.
 */
describe("hand-off to the retry and dead-letter topics never fails on size", () => {
  let harness: Harness;
  let stopped: unknown;

  /**
   * A projector over fresh topics. Their retry and dead-letter topics exist already with the broker's
   * default limit, as an earlier version of the service created them; `outcomeLimit`: the outcome
   * topic's owner allows records that large.
   */
  async function setUp(prefix: string, outcomeLimit?: number): Promise<void> {
    await harness?.close();
    stopped = undefined;
    harness = await Harness.create(prefix, { TOPIC_PARTITIONS: "1" });
    await harness.clearGraph();
    if (outcomeLimit !== undefined)
      await harness.admin.alterConfigs({
        validateOnly: false,
        resources: [
          {
            type: ConfigResourceTypes.TOPIC,
            name: harness.names.source["outcome-created"],
            configEntries: [{ name: "max.message.bytes", value: String(outcomeLimit) }],
          },
        ],
      });
    const service = await harness.startProjector();
    service.done.catch((error: unknown) => {
      stopped = error;
    });
  }
  afterAll(() => harness?.close());

  /**
   * A producer's encoder for a writer schema with one more field than ours, `attachment` (bytes, last),
   * registered under the stream's subject: our encoding of the event with the attachment appended
   * (an Avro record is its fields in order; bytes are a zigzag varint length and the bytes).
   */
  async function withAttachment(
    stream: Stream,
  ): Promise<(event: ProjectorEvent, attachment: Buffer) => Promise<Buffer>> {
    const schema = readerSchema(stream);
    const writer = { ...schema, fields: [...(schema.fields as object[]), { name: "attachment", type: "bytes" }] };
    const id = await harness.registerVersion(stream, writer);
    return async (event, attachment) => {
      const ours = (await harness.encode(event)).value as Buffer;
      const frame = Buffer.alloc(5);
      frame.writeInt32BE(id, 1);
      const length: number[] = [];
      for (let n = attachment.length * 2; ; n >>>= 7) {
        if (n < 0x80) {
          length.push(n);
          break;
        }
        length.push((n & 0x7f) | 0x80);
      }
      return Buffer.concat([frame, ours.subarray(5), Buffer.from(length), attachment]);
    };
  }

  async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (stopped) throw new Error(`the projector stopped while waiting for ${what}: ${String(stopped)}`);
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  const hasEdge = async (prefix: string) => (await harness.dump()).relationships.some((l) => l.startsWith(prefix));
  const deferred = (stream: Stream) => async () =>
    (await harness.admin.fetchTopicOffsets(harness.names.retry[stream])).some((p) => Number(p.high) > 0);

  /** A topic's own configs (not the broker's defaults), as the broker reports them. */
  async function ownConfigs(topic: string): Promise<Record<string, string>> {
    const { resources } = await harness.admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
    });
    return Object.fromEntries(
      (resources[0]?.configEntries ?? [])
        .filter((e) => e.configSource === ConfigSource.TOPIC_CONFIG)
        .map((e) => [e.configName, e.configValue]),
    );
  }

  it("an outcome of 1.2 MB on a 4 MB topic, deferred until its agent registers, is applied", async () => {
    await setUp("handoff-big", 4 * 1024 * 1024);
    const encode = await withAttachment("outcome-created");
    await harness.sendRaw(harness.names.source["outcome-created"], [
      { key: "o-big", value: await encode(outcome("o-big", "big-agt-001"), incompressible(1_200_000)) },
    ]);
    // The agent registers later: the outcome goes through the retry topic meanwhile.
    await eventually("the large outcome's deferral", deferred("outcome-created"));
    await harness.publish([snapshot("big-agt-001")]);
    await eventually("the large outcome's PRODUCED edge", () =>
      hasEdge("Agent:big-agt-001 -[PRODUCED]-> Outcome:o-big "),
    );
    expect(stopped).toBeUndefined();
    // The retry and dead-letter topics existed with the default limit: raised, their other settings kept.
    for (const topic of [harness.names.retry["outcome-created"], harness.names.deadLetter["outcome-created"]]) {
      const own = await ownConfigs(topic);
      expect(Number(own["max.message.bytes"])).toBeGreaterThanOrEqual(4 * 1024 * 1024);
      expect(own["retention.ms"]).toMatch(/^\d+$/);
      expect(own["min.insync.replicas"]).toMatch(/^\d+$/);
    }
  });

  it("a 2 MB outcome its producer gzipped onto a default 1 MB topic, deferred until its agent registers, is applied", async () => {
    await setUp("handoff-gzip");
    const encode = await withAttachment("outcome-created");
    // Text that gzip shrinks to a few KB: the broker takes it, judging the compressed batch.
    const attachment = Buffer.from("step done, nothing to report; ".repeat(66_700)).subarray(0, 2_000_000);
    const value = await encode(outcome("o-gzip", "gzip-agt-001"), attachment);
    expect(value.length).toBeGreaterThan(KAFKA_DEFAULT_MAX_MESSAGE_BYTES * 1.9);
    const producer = createProducer(harness.kafka);
    await producer.connect();
    try {
      await producer.sendBatch({
        acks: -1,
        compression: CompressionTypes.GZIP,
        topicMessages: [{ topic: harness.names.source["outcome-created"], messages: [{ key: "o-gzip", value }] }],
      });
    } finally {
      await producer.disconnect();
    }
    await eventually("the gzipped outcome's deferral", deferred("outcome-created"));
    await harness.publish([snapshot("gzip-agt-001")]);
    await eventually("the gzipped outcome's PRODUCED edge", () =>
      hasEdge("Agent:gzip-agt-001 -[PRODUCED]-> Outcome:o-gzip "),
    );
    expect(stopped).toBeUndefined();
    expect((await harness.deadLetters()).filter((l) => l.headers[HEADER.sourceTopic] !== undefined)).toEqual([]);
  });

  it("a record within a few hundred bytes of the default 1 MB limit is deferred and applied", async () => {
    await setUp("handoff-near");
    await harness.publish([snapshot("near-agt-001")]);
    const encode = await withAttachment("escalation-edge");
    const event = escalation("o-near-src", "o-near-dst");
    // The record batch frames the value in about 100 bytes; the value takes all but 200 of the limit,
    // and a copy's agp-* headers alone take more than the 100 left.
    const fill = KAFKA_DEFAULT_MAX_MESSAGE_BYTES - 200 - (await encode(event, Buffer.alloc(0))).length;
    const near = await encode(event, incompressible(fill));
    expect(near.length).toBeGreaterThan(KAFKA_DEFAULT_MAX_MESSAGE_BYTES - 210);
    await harness.sendRaw(harness.names.source["escalation-edge"], [{ key: "o-near-src", value: near }]);
    await eventually("the near-limit escalation's deferral", deferred("escalation-edge"));
    await harness.publish([outcome("o-near-src", "near-agt-001"), outcome("o-near-dst", "near-agt-001")]);
    await eventually("the near-limit escalation's ESCALATED_TO edge", () =>
      hasEdge("Outcome:o-near-src -[ESCALATED_TO]-> Outcome:o-near-dst "),
    );
    await harness.waitForCaughtUp();
    expect(stopped).toBeUndefined();
    expect((await harness.deadLetters()).filter((l) => l.headers[HEADER.sourceTopic] !== undefined)).toEqual([]);
  });
});

/**
 * The sink on the real broker when its idea of a topic's limit is stale (the topic was lowered after
 * start-up, or could not be raised): the broker's refusal decides, one record at a time.
 */
describe("a copy the broker refuses as too large", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("handoff-refused", { TOPIC_PARTITIONS: "1" });
  });
  afterAll(() => harness?.close());

  it("is dead-lettered as record-too-large, without its value when the dead-letter topic refuses it too", async () => {
    const stream: Stream = "outcome-created";
    for (const topic of [harness.names.retry[stream], harness.names.deadLetter[stream]])
      await setTopicConfig(harness.admin, topic, "max.message.bytes", "100000");
    const producer = createProducer(harness.kafka);
    await producer.connect();
    try {
      // The sink believes the topics take 1 MB.
      const sink = createRecordSink(producer, harness.names, "test", { maxMessageBytes: 1_048_588 });
      const item = (offset: number, value: Buffer, trace: string): SinkItem =>
        retryItem(
          stream,
          sourceRecord(harness.names.source[stream], offset, value, {
            key: `k-${trace}`,
            headers: { "x-trace": Buffer.from(trace) },
          }),
        );
      await sink.send([
        item(7, Buffer.from("small"), "small-1"),
        item(8, incompressible(200_000), "big"),
        item(9, Buffer.from("small"), "small-2"),
      ]);

      const retried: string[] = [];
      await readTopicsToEnd(harness.kafka, [harness.names.retry[stream]], ({ headers }) => {
        retried.push(String(headers["x-trace"]));
      });
      expect(retried).toEqual(["small-1", "small-2"]);
      const letters = await harness.deadLetters();
      expect(letters).toHaveLength(1);
      const [letter] = letters;
      expect(letter?.key).toBe("k-big");
      expect(letter?.value).toBeNull();
      expect(letter?.headers).toMatchObject({
        "x-trace": "big",
        [HEADER.errorClass]: "record-too-large",
        [HEADER.valueOmitted]: "200000",
        [HEADER.sourceTopic]: harness.names.source[stream],
        [HEADER.sourcePartition]: "0",
        [HEADER.sourceOffset]: "8",
      });
    } finally {
      await producer.disconnect();
    }
  });
});
