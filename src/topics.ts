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
  /** Where a deferred record waits: `<source>.<group><suffix>`, or `<source><suffix>` unscoped (RETRY_DLQ_TOPIC_SCOPE). */
  readonly retry: Readonly<Record<Stream, string>>;
  readonly deadLetter: Readonly<Record<Stream, string>>;
  /**
   * Unscoped retry topics of an earlier release that still hold records this group has not read
   * (startup/legacy-topics.ts): consumed like the stream's retry topic, never written to.
   */
  readonly draining: Readonly<Partial<Record<Stream, string>>>;
  /** Where governance findings are published (adapters/kafka/finding-publisher.ts); ours, like retry and dead-letter. */
  readonly findings: string;
}

type TopicConfig = Pick<Config["topics"], "registryMutation" | "outcomeCreated" | "escalationEdge" | "findings"> & {
  readonly retrySuffix: string;
  readonly dlqSuffix: string;
  /** The consumer group the retry and dead-letter topics are named for; undefined: the source topic alone. */
  readonly scope?: string | undefined;
};

export function topicNames(topics: TopicConfig): TopicNames {
  const source: Record<Stream, string> = {
    "registry-mutation": topics.registryMutation,
    "outcome-created": topics.outcomeCreated,
    "escalation-edge": topics.escalationEdge,
  };
  return {
    source,
    retry: derivedNames(source, topics.retrySuffix, topics.scope),
    deadLetter: derivedNames(source, topics.dlqSuffix, topics.scope),
    draining: {},
    findings: topics.findings,
  };
}

function derivedNames(
  source: Record<Stream, string>,
  suffix: string,
  scope: string | undefined,
): Record<Stream, string> {
  const infix = scope === undefined ? "" : `.${scope}`;
  return Object.fromEntries(STREAMS.map((stream) => [stream, `${source[stream]}${infix}${suffix}`])) as Record<
    Stream,
    string
  >;
}

/**
 * The retry topics an earlier release used (`<source><suffix>`), when this configuration names its
 * own after the group; undefined when they are the same topics.
 */
export function unscopedRetryNames(topics: TopicConfig): Readonly<Record<Stream, string>> | undefined {
  if (topics.scope === undefined) return undefined;
  return topicNames({ ...topics, scope: undefined }).retry;
}

/** The names with old unscoped retry topics to drain besides the stream's own (startup/legacy-topics.ts). */
export function withDraining(names: TopicNames, draining: Readonly<Partial<Record<Stream, string>>>): TopicNames {
  return { ...names, draining };
}

/** The topics a stream's deferred records are read back from: its retry topic, and an old one being drained. */
export function retryTopicsOf(names: TopicNames, stream: Stream): string[] {
  const draining = names.draining[stream];
  return draining === undefined ? [names.retry[stream]] : [names.retry[stream], draining];
}

export interface TopicRole {
  readonly stream: Stream;
  readonly role: "source" | "retry" | "dead-letter";
}

export function roleOfTopic(names: TopicNames, topic: string): TopicRole | undefined {
  for (const stream of STREAMS) {
    if (names.source[stream] === topic) return { stream, role: "source" };
    if (names.retry[stream] === topic || names.draining[stream] === topic) return { stream, role: "retry" };
    if (names.deadLetter[stream] === topic) return { stream, role: "dead-letter" };
  }
  return undefined;
}

/** The topics the consumer group subscribes to: the three sources and their retry topics. */
export function consumedTopics(names: TopicNames): string[] {
  return STREAMS.flatMap((stream) => [names.source[stream], ...retryTopicsOf(names, stream)]);
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
