import kafkajs, { type Admin, type ITopicConfig } from "kafkajs";
import { FatalError } from "../../errors.js";
import { type Sleep, systemSleep } from "../../ports.js";
import { ownTopicNames, STREAMS, type Stream, type TopicNames } from "../../topics.js";

/** How many copies of a topic the cluster keeps, and how many must be in sync for an acks=all write. */
export interface Replication {
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
}

/** What the retry and dead-letter topics take over from their source topic. */
export interface SourceTopic extends Replication {
  /** The source topic's max.message.bytes as the broker applies it (its own, or the broker's default). */
  readonly maxMessageBytes?: number;
}

/**
 * What a copy in a retry or dead-letter topic adds to the original record at most: the agp-* headers
 * (the error text is cut to 4,000 bytes, record-sink.ts) with room to spare for a bigger batch frame.
 */
export const HAND_OFF_HEADROOM_BYTES = 64 * 1024;

/** The max.message.bytes of a retry or dead-letter topic whose source takes records up to `sourceLimit`. */
export const handOffLimit = (sourceLimit: number): number => sourceLimit + HAND_OFF_HEADROOM_BYTES;

export interface TopicLayout {
  readonly partitions: number;
  readonly replicationFactor: number;
  /** Default: 2, or 1 for a single copy. */
  readonly minInsyncReplicas?: number;
  /** RETRY_MAX_AGE_MS (default one hour): the retry topics keep records longer (retryRetentionMs). */
  readonly retryMaxAgeMs?: number;
}

const DAY_MS = 86_400_000;
// kafkajs is CommonJS and Node's ESM loader does not see this export by name.
const { ConfigResourceTypes } = kafkajs;

/**
 * A retry record waits in its topic until its not-before time, at most the whole deferral window, and
 * then until a projector fetches it: retention covers the window plus a week of projector downtime.
 */
export const retryRetentionMs = (retryMaxAgeMs: number): number => retryMaxAgeMs + 7 * DAY_MS;

/**
 * Every topic the service needs, with its configuration: the registry topic is compacted (its latest
 * snapshot per agent is the registry); retry and dead-letter topics keep records for weeks, long
 * enough to inspect and re-drive. Retry and dead-letter topics take the replication of their source
 * topic when `sources` names it (they hold records the source offsets were committed past, so they
 * must be as durable), else the layout's, and take records larger than their source does by the
 * headers a copy adds (handOffLimit), so that no record the source holds is refused on its way on.
 */
export function topicSpecs(
  names: TopicNames,
  layout: TopicLayout,
  sources: Partial<Readonly<Record<Stream, SourceTopic>>> = {},
): ITopicConfig[] {
  const replicated = (replication: { replicationFactor: number; minInsyncReplicas?: number }) => ({
    numPartitions: layout.partitions,
    replicationFactor: replication.replicationFactor,
    minIsr: {
      name: "min.insync.replicas",
      value: String(Math.min(replication.minInsyncReplicas ?? 2, replication.replicationFactor)),
    },
  });
  const specs: ITopicConfig[] = [];
  for (const stream of STREAMS) {
    const compacted = stream === "registry-mutation";
    const source = replicated(layout);
    const derived = replicated(sources[stream] ?? layout);
    const sourceLimit = sources[stream]?.maxMessageBytes;
    const limit =
      sourceLimit === undefined ? [] : [{ name: "max.message.bytes", value: String(handOffLimit(sourceLimit)) }];
    specs.push({
      topic: names.source[stream],
      numPartitions: source.numPartitions,
      replicationFactor: source.replicationFactor,
      configEntries: [
        { name: "cleanup.policy", value: compacted ? "compact" : "delete" },
        source.minIsr,
        ...(compacted ? [{ name: "min.compaction.lag.ms", value: "3600000" }] : []),
      ],
    });
    specs.push({
      topic: names.retry[stream],
      numPartitions: derived.numPartitions,
      replicationFactor: derived.replicationFactor,
      configEntries: [
        { name: "cleanup.policy", value: "delete" },
        { name: "retention.ms", value: String(retryRetentionMs(layout.retryMaxAgeMs ?? 3_600_000)) },
        derived.minIsr,
        ...limit,
      ],
    });
    specs.push({
      topic: names.deadLetter[stream],
      numPartitions: derived.numPartitions,
      replicationFactor: derived.replicationFactor,
      configEntries: [
        { name: "cleanup.policy", value: "delete" },
        { name: "retention.ms", value: String(28 * DAY_MS) },
        derived.minIsr,
        ...limit,
      ],
    });
  }
  return specs;
}

/**
 * The replication for topics we create: an explicit factor (TOPIC_REPLICATION_FACTOR, --replication-factor)
 * with min.insync.replicas 2 (1 for a single copy); without one, what the cluster gives a topic created
 * without settings — its default.replication.factor and min.insync.replicas — so that the same command
 * creates single-copy topics on a development broker and replicated ones on a cluster.
 */
export async function replicationFor(admin: Admin, replicationFactor: number | undefined): Promise<Replication> {
  if (replicationFactor !== undefined) return { replicationFactor, minInsyncReplicas: Math.min(2, replicationFactor) };
  const { brokers } = await admin.describeCluster();
  const broker = brokers[0];
  if (!broker) throw new Error("the cluster lists no broker");
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [
      {
        type: ConfigResourceTypes.BROKER,
        name: String(broker.nodeId),
        configNames: ["default.replication.factor", "min.insync.replicas"],
      },
    ],
  });
  const value = (name: string) => Number(resources[0]?.configEntries.find((e) => e.configName === name)?.configValue);
  const factor = value("default.replication.factor");
  const minIsr = value("min.insync.replicas");
  return {
    replicationFactor: Number.isInteger(factor) && factor > 0 ? factor : 1,
    minInsyncReplicas: Number.isInteger(minIsr) && minIsr > 0 ? minIsr : 1,
  };
}

/** Replication factor and effective min.insync.replicas of existing topics. */
export async function topicReplication(admin: Admin, topics: readonly string[]): Promise<Map<string, Replication>> {
  const { topics: metadata } = await admin.fetchTopicMetadata({ topics: [...topics] });
  const minIsr = await topicConfigNumbers(admin, topics, "min.insync.replicas");
  const out = new Map<string, Replication>();
  for (const topic of metadata) {
    const replicationFactor = Math.max(1, ...topic.partitions.map((p) => p.replicas.length));
    out.set(topic.name, { replicationFactor, minInsyncReplicas: minIsr.get(topic.name) ?? 1 });
  }
  return out;
}

/**
 * The replication and record size limit of each stream's source topic, for topicSpecs' `sources`: of
 * the streams named in `streams` (sources known to exist), else of those the broker lists. A broker
 * that has just come back may not list a topic created a moment ago, so the service, which has checked
 * its sources, names them.
 */
export async function sourceReplication(
  admin: Admin,
  names: TopicNames,
  streams?: readonly Stream[],
): Promise<Partial<Record<Stream, SourceTopic>>> {
  const existing = streams ? undefined : new Set(await admin.listTopics());
  const present = streams ?? STREAMS.filter((stream) => existing?.has(names.source[stream]));
  if (present.length === 0) return {};
  const topics = present.map((stream) => names.source[stream]);
  const replication = await topicReplication(admin, topics);
  const limits = await topicConfigNumbers(admin, topics, "max.message.bytes");
  return Object.fromEntries(
    present.flatMap((stream) => {
      const found = replication.get(names.source[stream]);
      const maxMessageBytes = limits.get(names.source[stream]);
      return found ? [[stream, { ...found, ...(maxMessageBytes === undefined ? {} : { maxMessageBytes }) }]] : [];
    }),
  );
}

/** One numeric config of existing topics, as the broker applies it (the topic's own or the default). */
export async function topicConfigNumbers(
  admin: Admin,
  topics: readonly string[],
  configName: string,
): Promise<Map<string, number>> {
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: [configName] })),
  });
  const out = new Map<string, number>();
  for (const resource of resources) {
    const value = Number(resource.configEntries.find((e) => e.configName === configName)?.configValue);
    if (Number.isFinite(value)) out.set(resource.resourceName, value);
  }
  return out;
}

/**
 * Refuses to go on when a source topic is missing: the producers own them, and a service that created
 * one would consume an empty topic that nobody writes to. A FatalError: waiting does not create it.
 * A broker that has just restarted may answer from metadata older than a topic created a moment ago,
 * so a topic is called missing only when it is still absent after `confirmMs` of asking again.
 */
export async function requireSourceTopics(
  admin: Admin,
  names: TopicNames,
  confirmMs = 5_000,
  sleep: Sleep = systemSleep,
): Promise<void> {
  await requireTopics(admin, Object.values(names.source), "source topic(s)", confirmMs, sleep);
}

/**
 * The same check for the retry and dead-letter topics when the service may not create them
 * (CREATE_TOPICS_ON_START=false): `agent-graph-projector topics`, run with the right to, does.
 */
/**
 * The findings topic: as replicated as the layout's topics, kept four weeks (a finding also stays in
 * the graph, where `findings` lists it). Partitioned by `tenant/agent`, so one agent's findings keep
 * their order.
 */
export function findingsTopicSpec(names: TopicNames, layout: TopicLayout): ITopicConfig {
  const minIsr = Math.min(layout.minInsyncReplicas ?? 2, layout.replicationFactor);
  return {
    topic: names.findings,
    numPartitions: layout.partitions,
    replicationFactor: layout.replicationFactor,
    configEntries: [
      { name: "cleanup.policy", value: "delete" },
      { name: "retention.ms", value: String(28 * DAY_MS) },
      { name: "min.insync.replicas", value: String(minIsr) },
    ],
  };
}

export async function requireOwnTopics(
  admin: Admin,
  names: TopicNames,
  confirmMs = 5_000,
  sleep: Sleep = systemSleep,
): Promise<void> {
  await requireTopics(
    admin,
    ownTopicNames(names),
    "retry and dead-letter topic(s)",
    confirmMs,
    sleep,
    " (CREATE_TOPICS_ON_START=false)",
  );
}

async function requireTopics(
  admin: Admin,
  topics: readonly string[],
  what: string,
  confirmMs: number,
  sleep: Sleep,
  why = "",
): Promise<void> {
  let missing = [...topics];
  for (let waited = 0; ; waited += 500) {
    const existing = new Set(await admin.listTopics());
    missing = missing.filter((topic) => !existing.has(topic));
    if (missing.length === 0) return;
    if (waited >= confirmMs) break;
    await sleep(500);
  }
  throw new FatalError(
    `${what} ${missing.join(", ")} do not exist${why}; create them with "agent-graph-projector topics"`,
  );
}

/** Creates the missing topics; existing ones are left as they are. Returns the names it created. */
export async function ensureTopics(
  admin: Admin,
  specs: readonly ITopicConfig[],
  leaderTimeoutMs = 30_000,
): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((spec) => !existing.has(spec.topic));
  if (missing.length === 0) return [];
  const names = missing.map((spec) => spec.topic);
  try {
    await admin.createTopics({ topics: [...missing], waitForLeaders: true });
  } catch (error) {
    // kafkajs's wait for leaders only retries LEADER_NOT_AVAILABLE; a broker that has created the
    // topic but not yet loaded its partitions answers UNKNOWN_TOPIC_OR_PARTITION instead, and
    // another instance may have created the topic between our list and our create.
    if (!isTransientAfterCreate(error)) throw error;
    await waitForLeaders(admin, names, leaderTimeoutMs);
  }
  return names;
}

const TRANSIENT_AFTER_CREATE = new Set(["UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE", "TOPIC_ALREADY_EXISTS"]);

function isTransientAfterCreate(error: unknown): boolean {
  const { type, errors, cause } = error as { type?: string; errors?: unknown; cause?: unknown };
  if (type !== undefined && TRANSIENT_AFTER_CREATE.has(type)) return true;
  // kafkajs wraps the last error of an exhausted retry.
  if (cause !== undefined && cause !== error && isTransientAfterCreate(cause)) return true;
  // A partial CreateTopics failure lists one error per topic.
  return Array.isArray(errors) && errors.length > 0 && errors.every(isTransientAfterCreate);
}

async function waitForLeaders(admin: Admin, topics: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let lastProblem: string;
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics: [...topics] });
      const leaderless = metadata.flatMap((t) =>
        t.partitions.filter((p) => p.leader < 0).map((p) => `${t.name}[${p.partitionId}]`),
      );
      if (leaderless.length === 0) return;
      lastProblem = `no leader yet for ${leaderless.slice(0, 5).join(", ")}`;
    } catch (error) {
      if (!isTransientAfterCreate(error)) throw error;
      lastProblem = (error as Error).message;
    }
    if (Date.now() >= deadline) {
      throw new Error(`topics created but not ready after ${timeoutMs} ms: ${lastProblem}`);
    }
    await systemSleep(200);
  }
}
