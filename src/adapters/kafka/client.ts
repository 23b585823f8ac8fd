import { readFileSync } from "node:fs";
import { Kafka, type KafkaConfig, logLevel, Partitioners, type Producer, type SASLOptions } from "kafkajs";
import type { Config } from "../../config.js";
import type { Logger } from "../../ports.js";

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
    logCreator:
      () =>
      ({ level, log }) => {
        const { message, ...fields } = log;
        const entry = { component: "kafkajs", ...fields };
        // A rebalance makes kafkajs log every in-flight heartbeat as an error; it is routine.
        const routine = /rebalanc/i.test(String((fields as { error?: unknown }).error ?? ""));
        if (level === logLevel.ERROR && !routine) logger.error(entry, String(message));
        else if (routine) logger.info(entry, String(message));
        else if (level === logLevel.WARN) logger.warn(entry, String(message));
        else logger.debug(entry, String(message));
      },
  };
  // A copy: kafkajs writes into its SASL options, and the configuration is frozen.
  if (config.sasl) options.sasl = { ...config.sasl } as SASLOptions;
  return new Kafka(options);
}

/**
 * TLS towards the brokers: the system's CAs (`true`), or the CA file alone and, for mutual TLS, the
 * client certificate and key, read once at start.
 */
function kafkaTls(config: Config["kafka"]): KafkaConfig["ssl"] {
  if (!config.ssl) return false;
  const { caFile, certFile, keyFile } = config.tls;
  if (!caFile && !certFile) return true;
  return {
    ...(caFile ? { ca: [readFileSync(caFile, "utf8")] } : {}),
    ...(certFile && keyFile ? { cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8") } : {}),
  };
}

/**
 * Every producer of the project: the Java client's murmur2 partitioner, so a key lands on the same
 * partition whichever client wrote it, and no topic is ever created by a write.
 */
export function createProducer(kafka: Kafka): Producer {
  return kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
}
