import {
  type Kafka,
  type Message,
  Partitioners,
  type PartitionMetadata,
  type Producer,
  type ProducerBatch,
  type RecordMetadata,
} from "kafkajs";
import { classify } from "../../errors.js";
import { systemSleep } from "../../ports.js";

/** The partitions of each topic named, as the brokers' metadata has them. */
export type PartitionLookup = (topics: readonly string[]) => Promise<ReadonlyMap<string, PartitionMetadata[]>>;

/** How long a topic's partitions are used before they are asked again (kafkajs's own metadata age). */
const PARTITIONS_MAX_AGE_MS = 300_000;

interface Placement {
  readonly lookup: PartitionLookup;
  /** The producer's own partitioner (createProducer): a record goes where the producer would put it. */
  readonly partitioner: ReturnType<typeof Partitioners.DefaultPartitioner>;
  readonly known: Map<string, { partitions: PartitionMetadata[]; at: number }>;
}

const placements = new WeakMap<Producer, Placement>();

/**
 * Lets sendBatchAtLeastOnce place this producer's records on their partitions before sending. A
 * producer without a lookup (a stand-in in unit tests) sends each batch as one request.
 */
export function placeRecordsWith(producer: Producer, lookup: PartitionLookup): void {
  placements.set(producer, { lookup, partitioner: Partitioners.DefaultPartitioner(), known: new Map() });
}

/**
 * A lookup through a short-lived admin client with no retries of its own: asked once per topic and
 * PARTITIONS_MAX_AGE_MS, and again when a send fails, so an unreachable broker fails the attempt,
 * which the send's own retry loop repeats.
 */
export function adminPartitionLookup(kafka: Kafka): PartitionLookup {
  return async (topics) => {
    const admin = kafka.admin({ retry: { retries: 0 } });
    await admin.connect();
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics: [...topics] });
      return new Map(found.map((topic) => [topic.name, topic.partitions]));
    } finally {
      await admin.disconnect();
    }
  };
}

export interface SendOptions {
  /** How long failed partitions are sent again before the send gives up (30 s). */
  readonly budgetMs?: number;
  /**
   * Called with the caller's messages of each partition the brokers acknowledged, as they are: when
   * the send then throws, these are written and must not be sent again.
   */
  readonly onAcknowledged?: (messages: readonly Message[]) => void;
}

interface PartitionSend {
  readonly topic: string;
  /** Undefined: not placed (no lookup), the batch goes as one request. */
  readonly partition: number | undefined;
  readonly messages: Message[];
}

/**
 * Sends a batch with acks from all in-sync replicas, one request per topic-partition, and resolves
 * once every record was acknowledged. A failure is then attributable: only the partitions that
 * failed are sent again, with a doubling wait, until `budgetMs`; the others were written and are
 * reported to `onAcknowledged`. One request for the whole batch cannot say which partitions the
 * brokers wrote: a produce response with an error for one partition throws for all of them, and
 * kafkajs 2.2.4's own retry of a multi-partition sendBatch can resolve without having written some
 * records (it remembers answers per broker, so partitions that moved to a broker that already
 * answered are never sent: seen on a three-broker cluster when a leader was killed). The producer's
 * own retries are off (createProducer). A partition's records stay in one request, in order, so the
 * order within a partition and the broker's max.message.bytes judgement of that partition's batch are
 * those of the whole batch. Gives up at once on an error that cannot pass (a record too large, no
 * authorization); a request that timed out after the broker wrote it is sent again (at least once).
 */
export async function sendPerPartition(
  producer: Producer,
  batch: Omit<ProducerBatch, "acks">,
  options: SendOptions = {},
): Promise<RecordMetadata[]> {
  const { budgetMs = 30_000, onAcknowledged = () => {} } = options;
  const deadline = Date.now() + budgetMs;
  const written: RecordMetadata[] = [];
  let pending: PartitionSend[] | undefined;
  for (let delay = 250; ; delay = Math.min(delay * 2, 4_000)) {
    let failure: unknown;
    try {
      pending ??= await place(producer, batch);
      const results = await Promise.allSettled(
        pending.map(({ topic, partition, messages }) =>
          producer.sendBatch({
            ...batch,
            acks: -1,
            topicMessages: [
              { topic, messages: partition === undefined ? messages : messages.map((m) => ({ ...m, partition })) },
            ],
          }),
        ),
      );
      const failed: PartitionSend[] = [];
      results.forEach((result, index) => {
        const send = pending?.[index] as PartitionSend;
        if (result.status === "fulfilled") {
          written.push(...result.value);
          onAcknowledged(send.messages);
        } else {
          failed.push(send);
          // A fatal answer decides, whichever partition gave it.
          if (failure === undefined || classify(result.reason) === "fatal") failure = result.reason;
        }
      });
      if (failed.length === 0) return written;
      pending = failed;
    } catch (error) {
      // The partitions could not be asked: nothing was sent.
      failure = error;
    }
    if (classify(failure) === "fatal" || Date.now() + delay > deadline) throw failure;
    await systemSleep(delay);
  }
}

/** The batch as one send per topic-partition, each in the batch's order. */
async function place(producer: Producer, batch: Omit<ProducerBatch, "acks">): Promise<PartitionSend[]> {
  const placement = placements.get(producer);
  const topicMessages = batch.topicMessages ?? [];
  if (!placement)
    return topicMessages.map(({ topic, messages }) => ({ topic, partition: undefined, messages: [...messages] }));
  const now = Date.now();
  const stale = [
    ...new Set(
      topicMessages
        .map(({ topic }) => topic)
        .filter((topic) => now - (placement.known.get(topic)?.at ?? -Infinity) > PARTITIONS_MAX_AGE_MS),
    ),
  ];
  if (stale.length > 0) {
    const found = await placement.lookup(stale);
    for (const topic of stale) {
      const partitions = found.get(topic);
      if (partitions && partitions.length > 0) placement.known.set(topic, { partitions, at: now });
    }
  }
  const sends = new Map<string, PartitionSend>();
  for (const { topic, messages } of topicMessages) {
    const partitionMetadata = placement.known.get(topic)?.partitions;
    // Unknown to the brokers: kafkajs names the error when it tries.
    if (!partitionMetadata) {
      sends.set(`${topic}\u0000`, { topic, partition: undefined, messages: [...messages] });
      continue;
    }
    for (const message of messages) {
      const partition = placement.partitioner({ topic, partitionMetadata, message });
      const key = `${topic}\u0000${partition}`;
      const send = sends.get(key) ?? { topic, partition, messages: [] };
      send.messages.push(message);
      sends.set(key, send);
    }
  }
  return [...sends.values()];
}
