import kafkajs, { type Message, type PartitionMetadata, type Producer, type ProducerBatch } from "kafkajs";
import { describe, expect, it } from "vitest";
import { placeRecordsWith, sendPerPartition } from "../../src/adapters/kafka/send-per-partition.js";

const { KafkaJSProtocolError } = kafkajs;
/** A broker's answer for one partition, as kafkajs raises it from the error table's entry. */
const protocolError = (type: string, code: number, retriable: boolean) =>
  new KafkaJSProtocolError({ message: type, type, code, retriable } as unknown as Error);

const partitions = (count: number): PartitionMetadata[] =>
  Array.from({ length: count }, (_, partitionId) => ({
    partitionErrorCode: 0,
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0],
  }));

/** A broker stand-in that fails the partitions `down` names until `down` is emptied, and keeps what it acknowledged. */
function flakyProducer(down: Set<number>, failure: () => Error) {
  const written = new Map<number, string[]>();
  let requests = 0;
  const producer = {
    async sendBatch({ topicMessages }: ProducerBatch) {
      requests++;
      const [{ messages }] = topicMessages as unknown as [{ messages: Message[] }];
      const partition = messages[0]?.partition as number;
      // One request carries one partition: that is what makes a failure attributable.
      expect(messages.every((message) => message.partition === partition)).toBe(true);
      if (down.has(partition)) throw failure();
      written.set(partition, [...(written.get(partition) ?? []), ...messages.map((m) => String(m.key))]);
      return messages.map(() => ({ topicName: "t", partition, errorCode: 0 }));
    },
  } as unknown as Producer;
  placeRecordsWith(producer, async (topics) => new Map(topics.map((topic) => [topic, partitions(4)])));
  return { producer, written, requests: () => requests };
}

const keyed = (count: number): Message[] =>
  Array.from({ length: count }, (_, i) => ({ key: `k-${i}`, value: `v-${i}` }));

describe("sendPerPartition: a failed partition is sent again, an acknowledged one is not", () => {
  it("a partition whose leader is away is retried alone; the others are written once, in order", async () => {
    const down = new Set([1]);
    const notLeader = () => protocolError("NOT_LEADER_FOR_PARTITION", 6, true);
    const { producer, written } = flakyProducer(down, notLeader);
    const messages = keyed(40);
    const acknowledged: Message[] = [];
    setTimeout(() => down.clear(), 600);
    await sendPerPartition(
      producer,
      { topicMessages: [{ topic: "t", messages }] },
      { onAcknowledged: (sent) => acknowledged.push(...sent) },
    );
    const copies = [...written.values()].flat();
    expect(copies.sort()).toEqual(messages.map((m) => String(m.key)).sort());
    // Every key once, each partition in the batch's order.
    for (const keys of written.values())
      expect(keys).toEqual(messages.map((m) => String(m.key)).filter((key) => keys.includes(key)));
    expect(new Set(acknowledged)).toEqual(new Set(messages));
    expect(acknowledged.every((message) => message.partition === undefined)).toBe(true);
  });

  it("gives up on an error that cannot pass, having reported the partitions written", async () => {
    const tooLarge = () => protocolError("MESSAGE_TOO_LARGE", 10, false);
    const { producer, written, requests } = flakyProducer(new Set([2]), tooLarge);
    const acknowledged: Message[] = [];
    await expect(
      sendPerPartition(
        producer,
        { topicMessages: [{ topic: "t", messages: keyed(40) }] },
        { onAcknowledged: (sent) => acknowledged.push(...sent) },
      ),
    ).rejects.toThrow("MESSAGE_TOO_LARGE");
    expect(requests()).toBe(4);
    expect(acknowledged.length).toBe([...written.values()].flat().length);
    expect(written.has(2)).toBe(false);
    expect(acknowledged.length).toBeGreaterThan(0);
  });
});
