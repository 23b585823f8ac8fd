import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EVENT_TIME_PLACEHOLDER,
  framedEncoder,
  javaLoadProducer,
  type LoadPlacement,
  type LoadRecord,
  withEventTime,
} from "../../bench/lib/load-producer.js";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import type { EscalationEdge, OutcomeCreated } from "../../src/model/events.js";
import { stackKafkaClient } from "../../stack/api.js";
import { escalation, outcome } from "../support/builders.js";
import { Harness } from "../support/harness.js";

// The bench's steady loads publish through Kafka's Java client, fed records it did not encode itself:
// what lands on the topics must be what the registry client would have framed, under the keys and
// times given, and the offsets it reports are what the bench's freshness cohorts start from.
const client = stackKafkaClient();

describe.skipIf(!client)("the bench's Java load producer (Kafka's Java client, local stack only)", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("load-producer");
  });
  afterAll(async () => harness?.close());

  it("publishes the bench's framed records as given and reports each partition's first offset", async () => {
    const ids = {
      "registry-mutation": await harness.registry.getLatestSchemaId(
        `${harness.names.source["registry-mutation"]}-value`,
      ),
      "outcome-created": await harness.registry.getLatestSchemaId(`${harness.names.source["outcome-created"]}-value`),
      "escalation-edge": await harness.registry.getLatestSchemaId(`${harness.names.source["escalation-edge"]}-value`),
    };
    const encode = framedEncoder(ids);
    // Times of now: the stack checks retention every 5 s, and records stamped weeks ago are past
    // the source topics' retention and deleted before they can be read back.
    const t0 = Date.now();
    const outcomes = Array.from({ length: 40 }, (_, n) => outcome(`out-${n}`, `agt-${n % 7}`));
    const edge = escalation("out-1", "out-2");
    // The registry client's own framing of the same events: the bytes must be identical.
    for (const event of [outcomes[0] as OutcomeCreated, edge])
      expect(encode(event).equals((await harness.encode(event)).value as Buffer)).toBe(true);

    const topicOf = (event: OutcomeCreated | EscalationEdge) =>
      harness.names.source[event.kind === "outcome-created" ? "outcome-created" : "escalation-edge"];
    // Encoded before the load with a placeholder event time, stamped as they are sent.
    const recordOf = (event: OutcomeCreated | EscalationEdge, eventAgeMs = 0): LoadRecord => ({
      topic: topicOf(event),
      key: event.kind === "outcome-created" ? event.outcome_id : event.source_outcome_id,
      value: encode(withEventTime(event, EVENT_TIME_PLACEHOLDER)),
      eventAgeMs,
    });
    const producer = javaLoadProducer(
      client?.java as string,
      client?.classpath as string,
      harness.env.KAFKA_BROKERS as string,
    );
    let first: LoadPlacement[];
    let second: LoadPlacement[];
    try {
      // Both prepared first, as a load prepares every send before it starts.
      const firstSend = producer.prepare([...outcomes.slice(0, 30).map((o) => recordOf(o)), recordOf(edge, 250)]);
      const secondSend = producer.prepare(outcomes.slice(30).map((o) => recordOf(o)));
      first = await producer.send(firstSend, t0);
      second = await producer.send(secondSend, t0 + 500);
    } finally {
      await producer.close();
    }

    const read: { topic: string; partition: number; offset: number; key: string; value: Buffer; timestamp: number }[] =
      [];
    const topics = [harness.names.source["outcome-created"], harness.names.source["escalation-edge"]];
    await readTopicsToEnd(harness.kafka, topics, (record) =>
      read.push({
        topic: record.topic,
        partition: record.partition,
        offset: Number(record.offset),
        key: record.key?.toString() ?? "",
        value: record.value as Buffer,
        timestamp: Number(record.timestamp),
      }),
    );
    expect(read).toHaveLength(41);
    // Each value as the registry client frames the event with the time it was stamped with: the send's,
    // less the event's age (a redelivered copy's).
    const sentAt = (event: OutcomeCreated | EscalationEdge) =>
      event === edge ? t0 - 250 : outcomes.indexOf(event as OutcomeCreated) < 30 ? t0 : t0 + 500;
    for (const event of [...outcomes, edge]) {
      const key = event.kind === "outcome-created" ? event.outcome_id : event.source_outcome_id;
      const found = read.find((r) => r.topic === topicOf(event) && r.key === key);
      const expected = (await harness.encode(withEventTime(event, sentAt(event)))).value as Buffer;
      expect(found?.value.equals(expected), key).toBe(true);
    }
    expect(read.find((r) => r.key === "out-35")?.timestamp).toBe(t0 + 500);
    expect(read.find((r) => r.key === "out-3")?.timestamp).toBe(t0);
    expect(read.find((r) => r.topic === topicOf(edge))?.timestamp).toBe(t0);

    // Each send's first offset per partition is where that send's records begin there.
    const firstOf = (records: typeof read) => {
      const firsts = new Map<string, number>();
      for (const r of records) {
        const slot = `${r.topic}/${r.partition}`;
        firsts.set(slot, Math.min(firsts.get(slot) ?? Number.POSITIVE_INFINITY, r.offset));
      }
      return firsts;
    };
    const asMap = (placements: LoadPlacement[]) =>
      new Map(placements.map((p) => [`${p.topic}/${p.partition}`, p.firstOffset]));
    const sentSecond = new Set(outcomes.slice(30).map((o) => o.outcome_id));
    expect(asMap(first)).toEqual(firstOf(read.filter((r) => !sentSecond.has(r.key))));
    expect(asMap(second)).toEqual(firstOf(read.filter((r) => sentSecond.has(r.key))));
  });
});
