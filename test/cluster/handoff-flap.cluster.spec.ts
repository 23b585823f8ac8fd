import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProducer } from "../../src/adapters/kafka/client.js";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { createRecordSink } from "../../src/adapters/kafka/record-sink.js";
import type { SinkItem } from "../../src/ports.js";
import type { Stream } from "../../src/topics.js";
import { stackDown, stackUp } from "../../stack/api.js";
import { CAN_RESTART_SERVERS, sleep } from "../faults/support.js";
import { Harness } from "../support/harness.js";
import { retryItem, sourceRecord } from "../support/sink-items.js";

const env = { ...process.env, STACK_KAFKA_BROKERS: process.env.STACK_KAFKA_BROKERS ?? "3" };
const log = (line: string) => console.log(`[handoff-flap] ${line}`);

/**
 * A broker leading some partitions of the retry and dead-letter topics stops while the projector hands
 * deferred and dead-lettered records on, and comes back. The partitions on the other brokers are
 * acknowledged at once; only the stopped broker's must be sent again. Sending the whole batch again —
 * kafkajs's request, or the service's retry of its batch — wrote every acknowledged copy once per
 * attempt: duplicate dead letters and parallel retry chains after every broker flap. The topics have
 * one replica, so the stopped broker's partitions stay unavailable until it is back.
 */
describe.skipIf(!CAN_RESTART_SERVERS)("hand-off while a partition leader is away", () => {
  let harness: Harness;
  let producer: ReturnType<typeof createProducer>;
  let stopped: number | undefined;

  beforeAll(async () => {
    harness = await Harness.create("handoff-flap", { TOPIC_PARTITIONS: "6" });
    producer = createProducer(harness.kafka);
    await producer.connect();
  });
  afterAll(async () => {
    // Always brought back: the other cluster specs need all three brokers.
    if (stopped !== undefined) await stackUp({ env, services: ["kafka"] });
    await producer?.disconnect();
    await harness?.close();
  });

  it("each copy once on every partition after the leader's return; the others' copies not sent again", async () => {
    const stream: Stream = "outcome-created";
    const id = randomUUID().slice(0, 8);
    const [retryTopic, deadLetterTopic] = [`flap-retry-${id}`, `flap-dlq-${id}`];
    await harness.admin.createTopics({
      // kafkajs's own wait asks one broker, which may not know the topic yet: waited for below.
      waitForLeaders: false,
      topics: [retryTopic, deadLetterTopic].map((topic) => ({ topic, numPartitions: 6, replicationFactor: 1 })),
    });
    const names = {
      ...harness.names,
      retry: { ...harness.names.retry, [stream]: retryTopic },
      deadLetter: { ...harness.names.deadLetter, [stream]: deadLetterTopic },
    };
    // A fresh topic's metadata reaches every broker a little after its creation.
    let leaders: number[] = [];
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(500)) {
      const found = await harness.admin
        .fetchTopicMetadata({ topics: [retryTopic, deadLetterTopic] })
        .then(({ topics }) => topics.flatMap((topic) => topic.partitions.map((p) => p.leader)))
        .catch(() => []);
      if (found.length === 12 && found.every((leader) => leader >= 0)) {
        leaders = found;
        break;
      }
    }
    const away = leaders[0] as number;
    expect(new Set(leaders).size).toBeGreaterThan(1);

    const dead: string[] = [];
    const sink = createRecordSink(producer, names, "test", { onDeadLetter: (topic) => dead.push(topic) });
    const record = (offset: number) =>
      sourceRecord(harness.names.source[stream], offset, Buffer.from(`v-${offset}`), { partition: offset % 6 });
    const rejected = { kind: "dead-lettered", reason: "schema-mismatch", message: "test" } as const;
    const items: SinkItem[] = Array.from({ length: 120 }, (_, offset) =>
      offset % 2 === 0
        ? retryItem(stream, record(offset))
        : { kind: "dead-letter", stream, record: record(offset), fate: rejected },
    );

    await stackDown({ env, services: ["kafka"], units: [`kafka-${away}`] });
    stopped = away;
    log(`stopped kafka-${away}, leader of ${leaders.filter((leader) => leader === away).length} of 12 partitions`);
    // The service's way: a failed batch is handed on again, whole, until it goes.
    let attempts = 0;
    const handedOn = (async () => {
      for (;;) {
        attempts++;
        try {
          return await sink.send(items);
        } catch {
          await sleep(500);
        }
      }
    })();
    // Longer than a send's own retries (30 s): the failed batch is handed on again, as the service does.
    await sleep(35_000);
    await stackUp({ env, services: ["kafka"] });
    stopped = undefined;
    log(`kafka-${away} back`);
    await handedOn;

    const copies = new Map<string, string[]>();
    await readTopicsToEnd(harness.kafka, [retryTopic, deadLetterTopic], ({ topic, partition, key }) => {
      const where = `${topic}[${partition}]`;
      copies.set(where, [...(copies.get(where) ?? []), String(key)]);
    });
    const duplicates = [...copies].flatMap(([where, keys]) =>
      keys.filter((key, index) => keys.indexOf(key) !== index).map((key) => `${where} ${key}`),
    );
    log(
      `${attempts} hand-off attempts; copies per partition: ${[...copies].map(([where, keys]) => `${where} ${keys.length}`).join(", ")}`,
    );
    expect(duplicates).toEqual([]);
    const written = [...copies.values()].flat().sort();
    expect(written).toEqual(items.map((item) => `k-${item.record.offset}`).sort());
    // Each dead letter counted once.
    expect(dead.length).toBe(60);
    expect(attempts).toBeGreaterThan(1);
  });
});
