import type { Admin } from "kafkajs";
import { fetchPositions, partitionLag } from "../adapters/kafka/group-admin.js";
import { STREAMS, type Stream, type TopicNames, unscopedRetryNames, withDraining } from "../topics.js";
import type { StartupContext } from "./context.js";

/** One partition of an old retry topic as the group sees it: committed offset ("-1": none) and watermarks. */
export interface OldRetryPartition {
  readonly topic: string;
  readonly committed: string;
  readonly high: number;
  readonly low: number;
}

/**
 * Which old unscoped retry topics (`<source><suffix>`, before RETRY_DLQ_TOPIC_SCOPE=group) this group
 * still has to read. The group read them before the upgrade when it committed on any of them: then
 * every one of them with records past its position (the low watermark where it committed nothing,
 * as the consumer starts there) is drained, so nothing it deferred under the old names is lost. A
 * group that never read them (a deployment born with scoped names, beside an old one still writing
 * there) leaves them alone: their records are another deployment's.
 */
export function oldRetryTopicsToDrain(
  oldNames: Readonly<Record<Stream, string>>,
  partitions: readonly OldRetryPartition[],
): Partial<Record<Stream, string>> {
  const readBefore = partitions.some((p) => p.committed !== "-1");
  if (!readBefore) return {};
  const draining: Partial<Record<Stream, string>> = {};
  for (const stream of STREAMS) {
    const topic = oldNames[stream];
    if (partitions.some((p) => p.topic === topic && partitionLag(p.committed, p.high, p.low) > 0))
      draining[stream] = topic;
  }
  return draining;
}

/**
 * The migration phase for group-scoped retry topics: the names with the old retry topics this group
 * still has records in (oldRetryTopicsToDrain), which the consumer then reads besides its own until
 * the next start finds them drained. Topics the principal cannot see count as absent.
 */
export async function drainOldRetryTopics(
  ctx: StartupContext,
  admin: Admin,
  names: TopicNames,
  brokers: string,
): Promise<TopicNames> {
  const { config, logger } = ctx;
  const oldNames = unscopedRetryNames(config.topics);
  if (oldNames === undefined) return names;
  const draining = await ctx.step(brokers, async () => {
    const existing = new Set(await admin.listTopics());
    const present = STREAMS.map((stream) => oldNames[stream]).filter((topic) => existing.has(topic));
    if (present.length === 0) return {};
    return oldRetryTopicsToDrain(oldNames, await fetchPositions(admin, config.kafka.group, present));
  });
  const topics = Object.values(draining);
  if (topics.length === 0) return names;
  logger.info(
    { topics, group: config.kafka.group },
    "draining the retry topics of an earlier release (RETRY_DLQ_TOPIC_SCOPE=group): records still waiting there are applied, deferrals go to the group's own",
  );
  return withDraining(names, draining);
}
