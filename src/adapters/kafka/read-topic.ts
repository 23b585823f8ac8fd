import { randomUUID } from "node:crypto";
import type { Kafka } from "kafkajs";
import type { SourceRecord, TopicReader } from "../../ports.js";
import { toSourceRecord } from "./source-record.js";

/**
 * Reads topics from their earliest offset up to the high watermarks seen at the start, then stops.
 * It uses a throwaway consumer group that commits nothing and is deleted afterwards, so the
 * projector's group and offsets are never touched. Records come as the consumer builds them.
 */
export async function readTopicsToEnd(
  kafka: Kafka,
  topics: readonly string[],
  onRecord: (record: SourceRecord) => void,
  timeoutMs = 120_000,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `agent-graph-projector-reader-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 250 });
  try {
    const remaining = new Map<string, bigint>();
    for (const topic of topics) {
      for (const p of await admin.fetchTopicOffsets(topic)) {
        if (BigInt(p.high) > BigInt(p.low)) remaining.set(`${topic}/${p.partition}`, BigInt(p.high));
      }
    }
    if (remaining.size === 0) return;
    await consumer.connect();
    await consumer.subscribe({ topics: [...topics], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`reading ${topics.join(", ")} did not finish within ${timeoutMs} ms`)),
        timeoutMs,
      );
      consumer
        .run({
          autoCommit: false,
          eachMessage: async ({ topic, partition, message }) => {
            const key = `${topic}/${partition}`;
            const end = remaining.get(key);
            if (end === undefined) return;
            if (BigInt(message.offset) < end) onRecord(toSourceRecord(topic, partition, message));
            if (BigInt(message.offset) + 1n >= end) {
              remaining.delete(key);
              if (remaining.size === 0) {
                clearTimeout(timer);
                resolve();
              }
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect().catch(() => {});
    await admin.deleteGroups([groupId]).catch(() => {});
    await admin.disconnect();
  }
}

/** The TopicReader port over a kafkajs client. */
export function createTopicReader(kafka: Kafka, timeoutMs?: number): TopicReader {
  return { readToEnd: (topics, onRecord) => readTopicsToEnd(kafka, topics, onRecord, timeoutMs) };
}
