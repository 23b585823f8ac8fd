import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchLag } from "../../src/adapters/kafka/group-admin.js";
import { createTopicReader } from "../../src/adapters/kafka/read-topic.js";
import { loadConfig } from "../../src/config.js";
import { listDeadLetters } from "../../src/operations/dlq.js";
import type { RunningService } from "../../src/service.js";
import { consumedTopics, type TopicNames, topicNames, unscopedRetryNames, withDraining } from "../../src/topics.js";
import { outcome, snapshot } from "../support/builders.js";
import { Harness } from "../support/harness.js";
import { until } from "../support/until.js";

/** A metric's samples summed over the label values `match` accepts. */
async function sum(
  service: RunningService,
  name: string,
  match: (labels: Partial<Record<string, string | number>>) => boolean,
): Promise<number> {
  const metric = service.metrics.registry.getSingleMetric(name);
  const { values } = (await metric?.get()) ?? { values: [] };
  return values.filter((v) => match(v.labels)).reduce((total, v) => total + v.value, 0);
}

/**
 * Two deployments (blue/green, a staging projector on production topics) read the same source topics
 * with different consumer groups. Their retry and dead-letter topics are named after their groups, so
 * neither reads the other's deferred copies nor shares its dead-letter queue.
 */
describe("deployments on the same source topics", () => {
  let harness: Harness;
  const deployment = (group: string, extra: Record<string, string> = {}) => {
    const env = { ...harness.env, CONSUMER_GROUP: group, ...extra };
    return { group, env, names: topicNames(loadConfig(env).topics) };
  };
  const endOf = async (topic: string) =>
    (await harness.admin.fetchTopicOffsets(topic)).reduce((total, p) => total + Number(p.high), 0);
  const caughtUp = async (group: string, names: TopicNames) =>
    (await fetchLag(harness.admin, group, consumedTopics(names))).every((entry) => entry.lag === 0);
  const produced = async (agent: string, outcomeId: string) => {
    const { records } = await harness.driver.executeQuery(
      "MATCH (:Agent {agent_id: $agent})-[:PRODUCED]->(:Outcome {outcome_id: $outcome}) RETURN count(*) AS n",
      { agent, outcome: outcomeId },
      { database: harness.config.neo4j.database },
    );
    return Number(records[0]?.get("n"));
  };

  beforeAll(async () => {
    harness = await Harness.create("deployments");
    await harness.clearGraph();
  });
  afterAll(() => harness?.close());

  it("each defers and dead-letters into its own topics, applies its own copies once, and lists only its own dead letters", async () => {
    // A long backoff: each deployment's copies wait in its retry topic while the agent is published.
    const slow = { RETRY_BACKOFF_MS: "4000", RETRY_BACKOFF_MAX_MS: "8000" };
    const blue = deployment(`${harness.config.kafka.group}-blue`, slow);
    const green = deployment(`${harness.config.kafka.group}-green`, slow);
    expect(blue.names.source).toEqual(green.names.source);
    expect(blue.names.retry["outcome-created"]).not.toBe(green.names.retry["outcome-created"]);

    const services = new Map<string, RunningService>();
    for (const d of [blue, green]) services.set(d.group, await harness.startProjector(d.env));

    await harness.publish([outcome("dep-o1", "dep-agt-001")]);
    await harness.sendRaw(harness.names.source["outcome-created"], [{ key: "bad", value: Buffer.from("not avro") }]);
    for (const d of [blue, green]) {
      await until(`${d.group} deferred the outcome and dead-lettered the bytes`, async () => {
        const deferred = await endOf(d.names.retry["outcome-created"]);
        const dead = await endOf(d.names.deadLetter["outcome-created"]);
        return deferred >= 1 && dead === 1;
      });
    }
    await harness.publish([snapshot("dep-agt-001")]);
    for (const d of [blue, green]) await until(`${d.group} caught up`, () => caughtUp(d.group, d.names));
    expect(await produced("dep-agt-001", "dep-o1")).toBe(1);

    for (const d of [blue, green]) {
      const other = d === blue ? green : blue;
      const service = services.get(d.group) as RunningService;
      // Every copy it deferred went to its own retry topic and was read back once, by it alone (a slow
      // Neo4j may make it defer the outcome more than once before the agent is there).
      const outcomes = (result: string) =>
        sum(service, "agp_records_total", (l) => l.stream === "outcome-created" && l.result === result);
      const copies = await endOf(d.names.retry["outcome-created"]);
      expect(copies, d.group).toBeGreaterThanOrEqual(1);
      expect(await outcomes("deferred"), d.group).toBe(copies);
      // Read back to its end by its own group (caught up), never by the other's.
      const [theirs] = await harness.admin.fetchOffsets({
        groupId: other.group,
        topics: [d.names.retry["outcome-created"]],
      });
      expect(
        theirs?.partitions.every((p) => p.offset === "-1"),
        d.group,
      ).toBe(true);
      expect(
        await sum(service, "agp_records_consumed_total", (l) =>
          [...Object.values(other.names.retry), ...Object.values(other.names.deadLetter)].includes(String(l.topic)),
        ),
        d.group,
      ).toBe(0);
      // Applied once (or found already applied by the other deployment), from its own copy.
      expect((await outcomes("applied")) + (await outcomes("unchanged")), d.group).toBe(1);
      expect(await outcomes("dead-lettered"), d.group).toBe(1);
      expect(await endOf(d.names.deadLetter["outcome-created"]), d.group).toBe(1);

      // `dlq list` of each deployment: its own dead letter, on its own topic.
      const rows = await listDeadLetters(createTopicReader(harness.kafka), d.names);
      expect(rows, d.group).toEqual([expect.objectContaining({ reason: "not-avro", key: "bad" })]);
      expect(rows[0]?.dlq.startsWith(`${d.names.deadLetter["outcome-created"]}:`), d.group).toBe(true);
    }
    await harness.stopProjectors();
  });

  it("after the upgrade to group-scoped names, what waits in the old retry topic is applied, not lost", async () => {
    const group = `${harness.config.kafka.group}-upgraded`;
    const before = deployment(group, { RETRY_DLQ_TOPIC_SCOPE: "source" });
    const after = deployment(group);
    const old = unscopedRetryNames(loadConfig(after.env).topics);
    expect(old?.["outcome-created"]).toBe(before.names.retry["outcome-created"]);

    // The earlier release's names: the outcome waits for its agent in the unscoped retry topic.
    const earlier = await harness.startProjector(before.env);
    await harness.publish([outcome("dep-o2", "dep-agt-002")]);
    const oldRetry = before.names.retry["outcome-created"];
    await until("the old release read its deferred copy back at least once", async () => {
      const [committed] = await harness.admin.fetchOffsets({ groupId: group, topics: [oldRetry] });
      return (committed?.partitions ?? []).some((p) => p.offset !== "-1");
    });
    await earlier.stop("upgrade");
    await harness.publish([snapshot("dep-agt-002")]);

    const upgraded = await harness.startProjector(after.env);
    const draining = withDraining(after.names, { "outcome-created": oldRetry });
    await until("the upgraded deployment caught up, old retry topic included", async () => {
      return (await caughtUp(group, draining)) && (await produced("dep-agt-002", "dep-o2")) === 1;
    });
    expect(await sum(upgraded, "agp_records_consumed_total", (l) => l.topic === oldRetry)).toBeGreaterThan(0);
    await upgraded.stop("done");

    // Drained: the next start reads only its own topics.
    const next = await harness.startProjector(after.env);
    await until("the next start caught up", () => caughtUp(group, after.names));
    expect(consumedTopics(after.names)).not.toContain(oldRetry);
    expect(await sum(next, "agp_records_consumed_total", (l) => l.topic === oldRetry)).toBe(0);
  });
});
