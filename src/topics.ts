import type { Config } from "./config.js";
import { STREAMS } from "./model/schemas.js";
import type { Stream } from "./ports.js";

/** Every topic the service reads or writes, derived once from the configuration. */
export interface TopicNames {
  readonly source: Readonly<Record<Stream, string>>;
  readonly retry: Readonly<Record<Stream, string>>;
  readonly deadLetter: Readonly<Record<Stream, string>>;
}

export function topicNames(topics: Config["topics"]): TopicNames {
  const source: Record<Stream, string> = {
    "registry-mutation": topics.registryMutation,
    "outcome-created": topics.outcomeCreated,
    "escalation-edge": topics.escalationEdge,
  };
  const derive = (suffix: string) =>
    Object.fromEntries(STREAMS.map((stream) => [stream, `${source[stream]}${suffix}`])) as Record<Stream, string>;
  return { source, retry: derive(topics.retrySuffix), deadLetter: derive(topics.dlqSuffix) };
}

export interface TopicRole {
  readonly stream: Stream;
  readonly role: "source" | "retry" | "dead-letter";
}

export function roleOfTopic(names: TopicNames, topic: string): TopicRole | undefined {
  for (const stream of STREAMS) {
    if (names.source[stream] === topic) return { stream, role: "source" };
    if (names.retry[stream] === topic) return { stream, role: "retry" };
    if (names.deadLetter[stream] === topic) return { stream, role: "dead-letter" };
  }
  return undefined;
}

/** The topics the consumer group subscribes to: the three sources and their retry topics. */
export function consumedTopics(names: TopicNames): string[] {
  return STREAMS.flatMap((stream) => [names.source[stream], names.retry[stream]]);
}
