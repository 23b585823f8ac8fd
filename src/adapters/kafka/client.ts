import {
  Kafka,
  type KafkaConfig,
  logLevel,
  Partitioners,
  type Producer,
  type ProducerBatch,
  type RecordMetadata,
  type SASLOptions,
} from "kafkajs";
import type { Config } from "../../config.js";
import type { Logger, RecordPublisher } from "../../ports.js";
import { currentPem, currentSecret } from "../credentials.js";
import { createRepeatThrottle, kafkaLogLevel, REPEAT_WINDOW_MS } from "./log-level.js";
import { stopIdleRequestQueueTimers } from "./request-queue-timer.js";
import { adminPartitionLookup, placeRecordsWith, type SendOptions, sendPerPartition } from "./send-per-partition.js";

/** One kafkajs client for the whole process, with its logs routed into ours. */
export function createKafka(config: Config["kafka"], logger: Logger): Kafka {
  const options: KafkaConfig = {
    clientId: config.clientId,
    brokers: [...config.brokers],
    ssl: kafkaTls(config),
    connectionTimeout: 5_000,
    requestTimeout: 30_000,
    retry: { initialRetryTime: 300, retries: 8, maxRetryTime: 10_000 },
    logLevel: logLevel.WARN,
    logCreator: () => {
      const repeats = createRepeatThrottle();
      return ({ level, log }) => {
        const { message, ...fields } = log;
        const text = String(message);
        const dropped = repeats.admit(text, Date.now());
        if (dropped === undefined) return;
        const extra = dropped > 0 ? { repeated: dropped, repeatWindowMs: REPEAT_WINDOW_MS } : {};
        logger[kafkaLogLevel(level, text, fields)]({ component: "kafkajs", ...fields, ...extra }, text);
      };
    },
  };
  if (config.sasl) options.sasl = rotatingSasl(config.sasl);
  if (!stopIdleRequestQueueTimers())
    logger.warn(
      { component: "kafkajs" },
      "this kafkajs's request queue is not the one the idle-timer fix was written for; left as it is",
    );
  return new Kafka(options);
}

/**
 * SASL options whose password is read again at each authentication — a new connection, or the
 * re-authentication a broker with `connections.max.reauth.ms` asks for — so a rotated password file
 * is used without a restart. A refusal is not retried here: kafkajs retrying refused authentications
 * was seen to wedge its connection pool ("Timeout while acquiring lock", no request getting through
 * even after the file was right again). It crashes the consumer instead, the service stops naming the
 * refusal, and the restarted process reads the file again (docs/operations.md, "Credentials that rotate").
 */
export function rotatingSasl(sasl: NonNullable<Config["kafka"]["sasl"]>): SASLOptions {
  const options = { mechanism: sasl.mechanism, username: sasl.username } as Record<string, unknown>;
  Object.defineProperty(options, "password", {
    enumerable: true,
    get: currentSecret(sasl.password, sasl.passwordFile),
  });
  return options as unknown as SASLOptions;
}

/**
 * TLS towards the brokers: the system's CAs (`true`), or the CA file alone and, for mutual TLS, the
 * client certificate and key. kafkajs copies these options into each new socket's, so the getters
 * read the files again at every connection: a renewed certificate is presented without a restart.
 */
function kafkaTls(config: Config["kafka"]): KafkaConfig["ssl"] {
  if (!config.ssl) return false;
  const { caFile, certFile, keyFile } = config.tls;
  if (!caFile && !certFile) return true;
  const tls = {};
  if (caFile) {
    const ca = currentPem(caFile);
    Object.defineProperty(tls, "ca", { enumerable: true, get: () => [ca()] });
  }
  if (certFile && keyFile) {
    const cert = currentPem(certFile);
    const key = currentPem(keyFile);
    Object.defineProperty(tls, "cert", { enumerable: true, get: cert });
    Object.defineProperty(tls, "key", { enumerable: true, get: key });
  }
  return tls;
}

/**
 * Every producer of the project: the Java client's murmur2 partitioner, so a key lands on the same
 * partition whichever client wrote it, and no topic is ever created by a write. Its own send retries
 * are off: sendBatchAtLeastOnce sends each partition's records as their own request and sends again
 * only the partitions that failed (send-per-partition.ts, why there).
 */
export function createProducer(kafka: Kafka): Producer {
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
    retry: { retries: 0 },
  });
  placeRecordsWith(producer, adminPartitionLookup(kafka));
  return producer;
}

/**
 * Sends a batch with acks from all in-sync replicas and resolves only once every record of it was
 * acknowledged; a partition that failed is sent again, one that was acknowledged is not
 * (sendPerPartition). Some records may be written twice (a request that timed out after the broker
 * wrote it), which the projector absorbs; none is silently dropped.
 */
export async function sendBatchAtLeastOnce(
  producer: Producer,
  batch: Omit<ProducerBatch, "acks">,
  options: SendOptions = {},
): Promise<RecordMetadata[]> {
  return sendPerPartition(producer, batch, options);
}

/** The RecordPublisher port: one record per send, acknowledged by every in-sync replica. */
export function createRecordPublisher(producer: Producer): RecordPublisher {
  return {
    async publish(topic, record) {
      await sendBatchAtLeastOnce(producer, {
        topicMessages: [
          { topic, messages: [{ key: record.key, value: record.value, headers: { ...record.headers } }] },
        ],
      });
    },
  };
}
