import { STREAMS, type Stream, type TopicNames } from "./topics.js";

/** One Kafka ACL the service's principal needs: allow `operations` on a resource. */
export interface RequiredAcl {
  readonly resource: "topic" | "group";
  readonly name: string;
  readonly pattern: "literal" | "prefixed";
  readonly operations: readonly ("Read" | "Write" | "DescribeConfigs" | "AlterConfigs" | "Create" | "Delete")[];
  readonly why: string;
}

/** The prefix of the throwaway groups that read a topic to its end (reconcile, rebuild, dlq). */
export const READER_GROUP_PREFIX = "agent-graph-projector-reader-";

/**
 * The least a principal running `run` needs on Kafka, and nothing more: the source topics read, the
 * retry topics read and written, the dead-letter and findings topics written, each one's configuration read
 * (replication and record size limits), the group joined and committed. Read and Write imply Describe,
 * which the lag and the catch-up hold need (offsets and watermarks). Topic creation at start-up
 * (CREATE_TOPICS_ON_START, the default) adds Create on the retry and dead-letter topics, and
 * AlterConfigs to raise their max.message.bytes to their source's (topic-limits.ts); scheduled
 * reconciliation (RECONCILE_INTERVAL_MS) adds the throwaway reader groups; FINDINGS_ENABLED=false drops
 * the findings topic; group-scoped retry topics (RETRY_DLQ_TOPIC_SCOPE=group, the default) add Read on
 * the old unscoped ones, which start-up drains after an upgrade (startup/legacy-topics.ts). The table in
 * docs/operations.md ("Least privilege") is this list; test/int/secured grants exactly it and runs the
 * service as that principal.
 */
export function requiredAcls(
  names: TopicNames,
  groupId: string,
  options: {
    readonly createTopics: boolean;
    readonly reconcile: boolean;
    readonly findings?: boolean;
    /** The unscoped retry topics of an earlier release (topics.ts unscopedRetryNames), drained at start-up. */
    readonly oldRetry?: Readonly<Record<Stream, string>> | undefined;
  },
): RequiredAcl[] {
  const create = options.createTopics ? (["Create", "AlterConfigs"] as const) : [];
  return [
    ...STREAMS.map(
      (stream): RequiredAcl => ({
        resource: "topic",
        name: names.source[stream],
        pattern: "literal",
        operations: ["Read", "DescribeConfigs"],
        why: "consume; its replication and max.message.bytes shape the retry and dead-letter topics",
      }),
    ),
    ...STREAMS.map(
      (stream): RequiredAcl => ({
        resource: "topic",
        name: names.retry[stream],
        pattern: "literal",
        operations: ["Read", "Write", "DescribeConfigs", ...create],
        why: "defer a record and read it back when due",
      }),
    ),
    ...(options.oldRetry === undefined
      ? []
      : STREAMS.map(
          (stream): RequiredAcl => ({
            resource: "topic",
            name: (options.oldRetry as Readonly<Record<Stream, string>>)[stream],
            pattern: "literal",
            operations: ["Read"],
            why: "drain what an earlier release deferred under the unscoped name (only while that topic exists)",
          }),
        )),
    ...STREAMS.map(
      (stream): RequiredAcl => ({
        resource: "topic",
        name: names.deadLetter[stream],
        pattern: "literal",
        operations: ["Write", "DescribeConfigs", ...create],
        why: "dead-letter a record with its reason",
      }),
    ),
    ...(options.findings === false
      ? []
      : [
          {
            resource: "topic",
            name: names.findings,
            pattern: "literal",
            operations: ["Write", ...(options.createTopics ? (["Create"] as const) : [])],
            why: "publish governance findings",
          } satisfies RequiredAcl,
        ]),
    { resource: "group", name: groupId, pattern: "literal", operations: ["Read"], why: "join, commit, read the lag" },
    ...(options.reconcile
      ? [
          {
            resource: "group",
            name: READER_GROUP_PREFIX,
            pattern: "prefixed",
            operations: ["Read", "Delete"],
            why: "scheduled reconciliation reads the registry topic to its end in a throwaway group",
          } satisfies RequiredAcl,
        ]
      : []),
  ];
}
