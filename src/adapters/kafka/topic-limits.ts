import kafkajs, { type Admin } from "kafkajs";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../ports.js";
import { ownTopicNames, STREAMS, type Stream, type TopicNames } from "../../topics.js";
import { handOffLimit, type SourceTopic, topicConfigNumbers } from "./admin.js";

// kafkajs is CommonJS and Node's ESM loader does not see these exports by name.
const { ConfigResourceTypes, ConfigSource } = kafkajs;

/**
 * Raises the max.message.bytes of existing retry and dead-letter topics that take less than their
 * source topic does (handOffLimit): topics created by an earlier version, or before the source's owner
 * raised its limit. Returns every retry and dead-letter topic's limit as the broker then applies it,
 * for the record sink. A raise the broker refuses (no ALTER_CONFIGS permission) is logged and the
 * topic keeps its limit: the sink then hands on what fits and dead-letters the rest without its value.
 */
export async function raiseHandOffLimits(
  admin: Admin,
  names: TopicNames,
  sources: Partial<Readonly<Record<Stream, SourceTopic>>>,
  logger: Logger,
): Promise<Map<string, number>> {
  const own = ownTopicNames(names);
  const current = await topicConfigNumbers(admin, own, "max.message.bytes");
  let raised = false;
  for (const stream of STREAMS) {
    const sourceLimit = sources[stream]?.maxMessageBytes;
    if (sourceLimit === undefined) continue;
    const wanted = handOffLimit(sourceLimit);
    for (const topic of [names.retry[stream], names.deadLetter[stream]]) {
      const limit = current.get(topic);
      if (limit === undefined || limit >= wanted) continue;
      try {
        await setTopicConfig(admin, topic, "max.message.bytes", String(wanted));
        raised = true;
        logger.info(
          { topic, from: limit, to: wanted, source: names.source[stream], sourceLimit },
          "raised max.message.bytes to take every record its source topic takes",
        );
      } catch (error) {
        logger.warn(
          { topic, limit, wanted, source: names.source[stream], sourceLimit, error: errorMessage(error) },
          "could not raise max.message.bytes; records too large for it are dead-lettered without their value",
        );
      }
    }
  }
  return raised ? topicConfigNumbers(admin, own, "max.message.bytes") : current;
}

/**
 * Sets one config of a topic and keeps the others it has of its own. kafkajs speaks only the
 * original AlterConfigs request, which replaces a topic's whole set of overrides: a request naming
 * one config alone would drop its retention and min.insync.replicas.
 */
export async function setTopicConfig(admin: Admin, topic: string, name: string, value: string): Promise<void> {
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
  });
  const overrides = (resources[0]?.configEntries ?? [])
    .filter((entry) => entry.configSource === ConfigSource.TOPIC_CONFIG && entry.configName !== name)
    .map((entry) => ({ name: entry.configName, value: entry.configValue }));
  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [...overrides, { name, value }] }],
  });
}
