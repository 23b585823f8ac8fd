import kafkajs, { type Admin, type ITopicConfig } from "kafkajs";
import { describe, expect, it } from "vitest";
import { handOffLimit } from "../../src/adapters/kafka/admin.js";
import { loadConfig } from "../../src/config.js";
import { FatalError } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { startupScope } from "../../src/startup/context.js";
import { StartupError, StartupStopped } from "../../src/startup/deadline.js";
import { type GraphSchema, prepareGraph } from "../../src/startup/graph.js";
import { prepareOwnTopics } from "../../src/startup/topics.js";
import { ownTopicNames, topicNames } from "../../src/topics.js";

const { ConfigSource } = kafkajs;

const ENV = {
  KAFKA_BROKERS: "b1:9092",
  NEO4J_URI: "bolt://graph:7687",
  TOPIC_REGISTRY_MUTATION: "reg",
  TOPIC_OUTCOME_CREATED: "out",
  TOPIC_ESCALATION_EDGE: "esc",
};

/** A start-up scope over time that passes only when start-up waits, with every log line kept. */
function scopeFor(env: Record<string, string>, stop?: AbortSignal) {
  const config = loadConfig({ ...ENV, ...env });
  const lines: { msg: string; [key: string]: unknown }[] = [];
  const logger = createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line)) });
  let now = 0;
  const slept: number[] = [];
  const scope = startupScope(config, logger, { now: () => now }, stop, async (ms) => {
    slept.push(ms);
    now += ms;
  });
  return { ...scope, ctx: scope.context, config, lines, slept };
}

describe("the verify-or-migrate phase", () => {
  const databases = new Map([
    ["acme", "acme"],
    ["globex", "shared"],
    ["initech", "shared"],
  ]);
  const schema = (calls: string[], verify: () => Promise<void> = async () => {}): GraphSchema => ({
    migrate: async () => void calls.push("migrate"),
    verify: async () => {
      calls.push("verify");
      await verify();
    },
    backfill: async () => void calls.push("backfill"),
  });

  it("creates the constraints by default, and says they are in place for each served database once", async () => {
    const { ctx, lines } = scopeFor({});
    const calls: string[] = [];
    await prepareGraph(ctx, schema(calls), databases, true);
    expect(calls).toEqual(["migrate"]);
    expect(lines.filter((line) => line.msg === "constraints in place")).toMatchObject([
      { databases: ["acme", "shared"] },
    ]);
  });

  it("with MIGRATE_ON_START=false only checks, and a missing constraint ends start-up at once with one line", async () => {
    const { ctx, lines, slept } = scopeFor({ MIGRATE_ON_START: "false" });
    const calls: string[] = [];
    const started = prepareGraph(
      ctx,
      schema(calls, () => Promise.reject(new FatalError("constraints agent_agent_id missing on acme: run migrate"))),
      databases,
      true,
    );
    await expect(started).rejects.toThrow(StartupError);
    await expect(started).rejects.toThrow(
      /^Neo4j at bolt:\/\/graph:7687: constraints agent_agent_id missing on acme: run migrate$/,
    );
    expect(calls).toEqual(["verify"]);
    expect(slept).toEqual([]);
    expect(lines.some((line) => line.msg === "constraints in place")).toBe(false);
  });

  it("with MIGRATE_ON_START=false, `run` backfills what an older version left once the check passes; `check` changes nothing", async () => {
    for (const writes of [true, false]) {
      const { ctx } = scopeFor({ MIGRATE_ON_START: "false" });
      const calls: string[] = [];
      await prepareGraph(ctx, schema(calls), databases, writes);
      expect(calls).toEqual(writes ? ["verify", "backfill"] : ["verify"]);
    }
  });

  it("a Neo4j that is not up yet is asked again until it answers", async () => {
    const { ctx, slept } = scopeFor({ MIGRATE_ON_START: "false" });
    let refusals = 2;
    const calls: string[] = [];
    await prepareGraph(
      ctx,
      schema(calls, async () => {
        if (refusals-- > 0) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ServiceUnavailable" });
      }),
      databases,
      false,
    );
    expect(calls).toEqual(["verify", "verify", "verify"]);
    expect(slept).toHaveLength(2);
  });

  it("a stop request during the check ends start-up as stopped, not failed", async () => {
    const stop = new AbortController();
    const { ctx } = scopeFor({}, stop.signal);
    const started = prepareGraph(
      ctx,
      { migrate: () => new Promise(() => {}), verify: () => new Promise(() => {}), backfill: async () => {} },
      databases,
      true,
    );
    stop.abort();
    await expect(started).rejects.toThrow(StartupStopped);
  });
});

describe("the start-up scope", () => {
  it("closes what was opened newest first, and one close failing does not keep the others open", async () => {
    const { ctx, closeOpened } = scopeFor({});
    const closed: string[] = [];
    ctx.opened(async () => void closed.push("http"));
    ctx.opened(async () => {
      closed.push("neo4j");
      throw new Error("already closed");
    });
    ctx.opened(async () => void closed.push("kafka"));
    await closeOpened();
    expect(closed).toEqual(["kafka", "neo4j", "http"]);
  });
});

interface FakeTopic {
  replicationFactor: number;
  overrides: Map<string, string>;
}

/** A broker in memory: topics with their replication and config overrides, the defaults of a fresh broker. */
function fakeBroker(topics: Record<string, { replicationFactor?: number; overrides?: Record<string, string> }>) {
  const state = new Map<string, FakeTopic>(
    Object.entries(topics).map(([name, t]) => [
      name,
      { replicationFactor: t.replicationFactor ?? 1, overrides: new Map(Object.entries(t.overrides ?? {})) },
    ]),
  );
  const created: string[] = [];
  const altered: string[] = [];
  const defaults: Record<string, string> = { "max.message.bytes": "1048588", "min.insync.replicas": "1" };
  const admin = {
    listTopics: async () => [...state.keys()],
    fetchTopicMetadata: async ({ topics: wanted }: { topics: string[] }) => ({
      topics: wanted.map((name) => {
        const topic = state.get(name);
        if (!topic)
          throw Object.assign(new Error("This server does not host this topic-partition"), {
            type: "UNKNOWN_TOPIC_OR_PARTITION",
          });
        const replicas = Array.from({ length: topic.replicationFactor }, (_, i) => i);
        return { name, partitions: [{ partitionId: 0, leader: 0, replicas, isr: replicas }] };
      }),
    }),
    describeConfigs: async ({ resources }: { resources: { name: string; configNames?: string[] }[] }) => ({
      resources: resources.map(({ name, configNames }) => {
        const topic = state.get(name);
        if (!topic) throw new Error(`no topic ${name}`);
        const entries = new Map<string, { value: string; source: number }>();
        for (const [key, value] of Object.entries(defaults))
          entries.set(key, { value, source: ConfigSource.DEFAULT_CONFIG });
        for (const [key, value] of topic.overrides) entries.set(key, { value, source: ConfigSource.TOPIC_CONFIG });
        return {
          resourceName: name,
          configEntries: [...entries]
            .filter(([key]) => !configNames || configNames.includes(key))
            .map(([configName, { value, source }]) => ({ configName, configValue: value, configSource: source })),
        };
      }),
    }),
    createTopics: async ({ topics: specs }: { topics: ITopicConfig[] }) => {
      for (const spec of specs) {
        created.push(spec.topic);
        state.set(spec.topic, {
          replicationFactor: spec.replicationFactor ?? 1,
          overrides: new Map((spec.configEntries ?? []).map((entry) => [entry.name, entry.value])),
        });
      }
      return true;
    },
    alterConfigs: async ({
      resources,
    }: {
      resources: { name: string; configEntries: { name: string; value: string }[] }[];
    }) => {
      for (const { name, configEntries } of resources) {
        altered.push(name);
        const topic = state.get(name);
        if (topic) topic.overrides = new Map(configEntries.map((entry) => [entry.name, entry.value]));
      }
    },
  };
  return { admin: admin as unknown as Admin, state, created, altered };
}

describe("the topics phase", () => {
  const names = topicNames(loadConfig(ENV).topics);
  const sources = (maxMessageBytes: number) =>
    Object.fromEntries(
      Object.values(names.source).map((name) => [
        name,
        {
          replicationFactor: 3,
          overrides: { "min.insync.replicas": "2", "max.message.bytes": String(maxMessageBytes) },
        },
      ]),
    );

  it("creates the missing retry and dead-letter topics as durable as their source, taking every record it takes", async () => {
    const broker = fakeBroker(sources(2_000_000));
    const { ctx, lines } = scopeFor({});
    const limits = await prepareOwnTopics(ctx, broker.admin, names, "Kafka at b1:9092");
    expect(broker.created.sort()).toEqual([...ownTopicNames(names), names.findings].sort());
    expect(broker.state.get(names.findings)?.replicationFactor).toBe(3);
    for (const topic of ownTopicNames(names)) {
      expect(broker.state.get(topic)?.replicationFactor).toBe(3);
      expect(broker.state.get(topic)?.overrides.get("min.insync.replicas")).toBe("2");
      expect(limits.get(topic)).toBe(handOffLimit(2_000_000));
    }
    expect(lines.filter((line) => line.msg === "created retry and dead-letter topics")).toHaveLength(1);
  });

  it("raises an existing retry or dead-letter topic's record limit below its source's, keeping its other settings", async () => {
    const own = Object.fromEntries(
      ownTopicNames(names).map((name) => [
        name,
        { replicationFactor: 3, overrides: { "retention.ms": "604800000", "max.message.bytes": "1048588" } },
      ]),
    );
    const findings = { [names.findings]: { replicationFactor: 3, overrides: {} } };
    const broker = fakeBroker({ ...sources(2_000_000), ...own, ...findings });
    const { ctx } = scopeFor({});
    const limits = await prepareOwnTopics(ctx, broker.admin, names, "Kafka at b1:9092");
    expect(broker.created).toEqual([]);
    for (const topic of ownTopicNames(names)) {
      expect(limits.get(topic)).toBe(handOffLimit(2_000_000));
      expect(broker.state.get(topic)?.overrides.get("retention.ms")).toBe("604800000");
    }
  });

  it("with CREATE_TOPICS_ON_START=false creates and changes nothing, and takes the limits the topics have", async () => {
    const own = Object.fromEntries(
      ownTopicNames(names).map((name) => [name, { overrides: { "max.message.bytes": "1048588" } }]),
    );
    const findings = { [names.findings]: { replicationFactor: 3, overrides: {} } };
    const broker = fakeBroker({ ...sources(2_000_000), ...own, ...findings });
    const { ctx } = scopeFor({ CREATE_TOPICS_ON_START: "false" });
    const limits = await prepareOwnTopics(ctx, broker.admin, names, "Kafka at b1:9092");
    expect(broker.created).toEqual([]);
    expect(broker.altered).toEqual([]);
    expect([...limits.values()]).toEqual(ownTopicNames(names).map(() => 1048588));
  });

  it("with CREATE_TOPICS_ON_START=false a missing dead-letter topic ends start-up with one line saying what to run", async () => {
    const own = Object.fromEntries(
      ownTopicNames(names)
        .filter((name) => name !== names.deadLetter["outcome-created"])
        .map((name) => [name, {}]),
    );
    const broker = fakeBroker({ ...sources(1_000_000), ...own });
    const { ctx } = scopeFor({ CREATE_TOPICS_ON_START: "false", STARTUP_TIMEOUT_MS: "1000" });
    const started = prepareOwnTopics(ctx, broker.admin, names, "Kafka at b1:9092");
    await expect(started).rejects.toThrow(StartupError);
    await expect(started).rejects.toThrow(
      `Kafka at b1:9092: retry and dead-letter topic(s) ${names.deadLetter["outcome-created"]} do not exist (CREATE_TOPICS_ON_START=false); create them with "agent-graph-projector topics"`,
    );
    expect(broker.created).toEqual([]);
    expect(broker.altered).toEqual([]);
  });
});
