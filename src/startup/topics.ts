import type { Admin } from "kafkajs";
import {
  ensureTopics,
  findingsTopicSpec,
  requireOwnTopics,
  sourceReplication,
  topicConfigNumbers,
  topicSpecs,
} from "../adapters/kafka/admin.js";
import { raiseHandOffLimits } from "../adapters/kafka/topic-limits.js";
import { ownTopicNames, roleOfTopic, STREAMS, type TopicNames } from "../topics.js";
import type { StartupContext } from "./context.js";

/**
 * The topics phase, for the retry, dead-letter and findings topics: created where missing
 * (CREATE_TOPICS_ON_START), or else the retry and dead-letter topics required to exist (a missing findings
 * topic only holds findings back in the graph, where the publisher tries again).
 * `brokers` names Kafka in the line a failure ends start-up with.
 */
export async function prepareOwnTopics(
  ctx: StartupContext,
  admin: Admin,
  names: TopicNames,
  brokers: string,
): Promise<Map<string, number>> {
  const { config, logger } = ctx;
  // Retry and dead-letter topics are as durable as their source: same replication factor and
  // min.insync.replicas (the records in them are past the source offsets we commit).
  const replication = await ctx.step(brokers, () => sourceReplication(admin, names, STREAMS));
  if (config.createTopicsOnStart) {
    const ownTopics = topicSpecs(
      names,
      {
        partitions: config.topics.partitions,
        replicationFactor: config.topics.replicationFactor ?? 1,
        retryMaxAgeMs: config.retry.maxAgeMs,
      },
      replication,
    ).filter((spec) => roleOfTopic(names, spec.topic)?.role !== "source");
    const created = await ctx.step(brokers, () => ensureTopics(admin, ownTopics));
    if (created.length > 0) logger.info({ topics: created }, "created retry and dead-letter topics");
    const registry = replication["registry-mutation"];
    const findingsLayout = {
      partitions: config.topics.partitions,
      replicationFactor: registry?.replicationFactor ?? config.topics.replicationFactor ?? 1,
      ...(registry ? { minInsyncReplicas: registry.minInsyncReplicas } : {}),
    };
    if (config.findingsEnabled) {
      const findings = await ctx.step(brokers, () => ensureTopics(admin, [findingsTopicSpec(names, findingsLayout)]));
      if (findings.length > 0) logger.info({ topics: findings }, "created the findings topic");
    }
  } else {
    await ctx.step(brokers, () => requireOwnTopics(admin, names, ctx.confirmWithinMs()));
  }
  // Raised first where it is below its source topic's (only where the service may manage its topics);
  // the sink splits its sends below it. A broker may not yet host a topic created a moment ago
  // (UNKNOWN_TOPIC_OR_PARTITION): ask again.
  return ctx.step(brokers, () =>
    config.createTopicsOnStart
      ? raiseHandOffLimits(admin, names, replication, logger)
      : topicConfigNumbers(admin, ownTopicNames(names), "max.message.bytes"),
  );
}
