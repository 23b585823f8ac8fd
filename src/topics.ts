import type { Config } from "./config.js";

/**
 * The wire: the three source streams, the topics each one uses, and the headers the projector puts on
 * the records it moves between them.
 */

/** Which of the three source streams a record belongs to (a retry topic maps to its source's). */
export type Stream = "registry-mutation" | "outcome-created" | "escalation-edge";

export const STREAMS: readonly Stream[] = ["registry-mutation", "outcome-created", "escalation-edge"];

/** Every topic the service reads or writes, derived once from the configuration. */
export interface TopicNames {
  readonly source: Readonly<Record<Stream, string>>;
  readonly retry: Readonly<Record<Stream, string>>;
  readonly deadLetter: Readonly<Record<Stream, string>>;
  /** Where governance findings are published (adapters/kafka/finding-publisher.ts); ours, like retry and dead-letter. */
  readonly findings: string;
}

export function topicNames(topics: Config["topics"]): TopicNames {
  const source: Record<Stream, string> = {
    "registry-mutation": topics.registryMutation,
    "outcome-created": topics.outcomeCreated,
    "escalation-edge": topics.escalationEdge,
  };
  const derive = (suffix: string) =>
    Object.fromEntries(STREAMS.map((stream) => [stream, `${source[stream]}${suffix}`])) as Record<Stream, string>;
  return {
    source,
    retry: derive(topics.retrySuffix),
    deadLetter: derive(topics.dlqSuffix),
    findings: topics.findings,
  };
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

/** The topics the service owns: each stream's retry and dead-letter topic. */
export function ownTopicNames(names: TopicNames): string[] {
  return STREAMS.flatMap((stream) => [names.retry[stream], names.deadLetter[stream]]);
}

/**
 * Header names the projector adds to retry and dead-letter records. A record keeps its original key,
 * value and headers; these say where it came from and why it is here.
 */
export const HEADER = {
  attempt: "agp-attempt",
  notBefore: "agp-not-before",
  firstSeen: "agp-first-seen",
  deferReason: "agp-defer-reason",
  upstreamMark: "agp-upstream-mark",
  sourceTopic: "agp-source-topic",
  sourcePartition: "agp-source-partition",
  sourceOffset: "agp-source-offset",
  sourceTimestamp: "agp-source-timestamp",
  errorClass: "agp-error-class",
  errorMessage: "agp-error-message",
  serviceVersion: "agp-service-version",
  /** On a dead-lettered record sent without its value because it would not fit: the value's size. */
  valueOmitted: "agp-value-omitted",
  /** Set by producers on a tombstone, which has no value to carry its tenant. */
  tenantId: "tenant_id",
  /** Set by producers on a tombstone: the registry version of the deletion. */
  registryVersion: "registry_version",
} as const;

export function headerString(headers: Readonly<Record<string, Buffer | undefined>>, name: string): string | undefined {
  const value = headers[name];
  return value === undefined ? undefined : value.toString("utf8");
}

export function headerNumber(headers: Readonly<Record<string, Buffer | undefined>>, name: string): number | undefined {
  const text = headerString(headers, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}
