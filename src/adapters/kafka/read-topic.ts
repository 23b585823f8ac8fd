import { randomUUID } from "node:crypto";
import type { Admin, Kafka } from "kafkajs";
import { READER_GROUP_PREFIX } from "../../acls.js";
import type { SourceRecord, TopicReader } from "../../ports.js";
import { toSourceRecord } from "./source-record.js";

/**
 * Reads topics from their earliest offset up to the end offsets taken at the start, then stops.
 * Committed records only: the consumer reads with isolation READ_COMMITTED (kafkajs's default), so
 * records of aborted transactions are never passed on. "The end" is where the consumer's position has
 * reached the partition's end offset, not the sight of a record just before it: on a log written with
 * transactions the last offsets are transaction markers (and often aborted records), which the consumer
 * steps over without passing on. The end offsets are the last stable offsets (see endOffsets). It uses
 * a throwaway consumer group that commits nothing and is deleted afterwards, so the projector's group
 * and offsets are never touched. Records come as the consumer builds them.
 */
export async function readTopicsToEnd(
  kafka: Kafka,
  topics: readonly string[],
  onRecord: (record: SourceRecord) => void,
  timeoutMs = 120_000,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `${READER_GROUP_PREFIX}${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 250 });
  try {
    const ends = await endOffsets(admin, topics);
    if (ends.size === 0) return;
    const remaining = new Map(ends);
    await consumer.connect();
    await consumer.subscribe({ topics: [...topics], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `reading ${topics.join(", ")} did not finish within ${timeoutMs} ms; not at the end yet: ${[...remaining.keys()].join(", ")}`,
            ),
          ),
        timeoutMs,
      );
      // The position after each fetched batch, markers and aborted records included: kafkajs reports
      // it here also for a batch it filtered down to nothing, which never reaches eachBatch.
      consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
        const key = `${payload.topic}/${payload.partition}`;
        const end = remaining.get(key);
        if (end === undefined || BigInt(payload.lastOffset) + 1n < end) return;
        remaining.delete(key);
        if (remaining.size > 0) return;
        clearTimeout(timer);
        resolve();
      });
      consumer
        .run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            const end = ends.get(`${batch.topic}/${batch.partition}`);
            if (end === undefined) return;
            try {
              for (const message of batch.messages) {
                if (BigInt(message.offset) < end) onRecord(toSourceRecord(batch.topic, batch.partition, message));
              }
            } catch (error) {
              clearTimeout(timer);
              reject(error);
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

/**
 * Per `topic/partition`, the end offset of each partition that holds anything. kafkajs's admin asks
 * for it with isolation READ_COMMITTED (ListOffsets v2 and later), so the broker answers with the last
 * stable offset: the high watermark, or the first offset of the oldest transaction still open, whose
 * records a READ_COMMITTED consumer could not read yet. The read ends before that transaction rather
 * than waiting for its producer.
 */
async function endOffsets(admin: Admin, topics: readonly string[]): Promise<Map<string, bigint>> {
  const ends = new Map<string, bigint>();
  for (const topic of topics) {
    for (const p of await admin.fetchTopicOffsets(topic)) {
      if (BigInt(p.high) > BigInt(p.low)) ends.set(`${topic}/${p.partition}`, BigInt(p.high));
    }
  }
  return ends;
}

/** The TopicReader port over a kafkajs client. */
export function createTopicReader(kafka: Kafka, timeoutMs?: number): TopicReader {
  return { readToEnd: (topics, onRecord) => readTopicsToEnd(kafka, topics, onRecord, timeoutMs) };
}
