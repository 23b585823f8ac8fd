import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProducer } from "../../src/adapters/kafka/client.js";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { createRecordSink } from "../../src/adapters/kafka/record-sink.js";
import { setTopicConfig } from "../../src/adapters/kafka/topic-limits.js";
import type { SinkItem } from "../../src/ports.js";
import type { Stream } from "../../src/topics.js";
import { Harness } from "../support/harness.js";
import { retryItem, sourceRecord } from "../support/sink-items.js";

/**
 * A send the broker takes for some partitions and not for others must not write the others twice
 * when it is sent again: duplicate dead letters and a second retry chain for each deferred record
 * otherwise follow every broker flap. On one broker, a partition refused as too large is such a
 * send; a leader away is test/cluster/handoff-flap.cluster.spec.ts. The copies on every partition are
 * counted.
 */
describe("a send that fails for some partitions writes the acknowledged ones once", () => {
  let harness: Harness;
  let producer: ReturnType<typeof createProducer>;

  beforeAll(async () => {
    harness = await Harness.create("partial-send", { TOPIC_PARTITIONS: "4" });
    producer = createProducer(harness.kafka);
    await producer.connect();
  });
  afterAll(async () => {
    await producer?.disconnect();
    await harness?.close();
  });

  /** Every record on the topics, as topic/partition → the keys in offset order. */
  async function copies(topics: readonly string[]): Promise<Map<string, string[]>> {
    const seen = new Map<string, string[]>();
    await readTopicsToEnd(harness.kafka, topics, ({ topic, partition, key }) => {
      const where = `${topic}/${partition}`;
      seen.set(where, [...(seen.get(where) ?? []), String(key)]);
    });
    return seen;
  }

  const duplicatesOf = (keys: readonly string[]) => keys.filter((key, index) => keys.indexOf(key) !== index);

  it("a deferral chunk one partition of which the broker refuses as too large: the other partitions' copies once", async () => {
    const stream: Stream = "outcome-created";
    // The topic takes less than the sink believes (its limit lowered since start-up).
    await setTopicConfig(harness.admin, harness.names.retry[stream], "max.message.bytes", "20000");
    await setTopicConfig(harness.admin, harness.names.deadLetter[stream], "max.message.bytes", "20000");
    const sink = createRecordSink(producer, harness.names, "test", { maxMessageBytes: 1_048_588 });
    const item = (offset: number, value: Buffer): SinkItem =>
      retryItem(stream, sourceRecord(harness.names.source[stream], offset, value, { partition: offset % 4 }));
    // 24 small copies over the four partitions, and one no gzip shrinks under the limit among them.
    const items = Array.from({ length: 24 }, (_, offset) => item(offset, Buffer.from("small")));
    items.splice(12, 0, item(100, randomBytes(50_000)));
    const report = await sink.send(items);
    expect([...report.tooLarge.keys()].map((record) => record.offset)).toEqual(["100"]);

    const retried = await copies([harness.names.retry[stream]]);
    const keys = [...retried.values()].flat();
    expect(keys.sort()).toEqual(
      items
        .filter((i) => i.record.offset !== "100")
        .map((i) => `k-${i.record.offset}`)
        .sort(),
    );
    for (const [where, onPartition] of retried) expect(duplicatesOf(onPartition), where).toEqual([]);
    const letters = await harness.deadLetters();
    expect(letters.map((letter) => letter.key)).toEqual(["k-100"]);
  });
});
