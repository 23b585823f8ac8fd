import { describe, expect, it } from "vitest";
import { requiredAcls } from "../../src/acls.js";
import { loadConfig } from "../../src/config.js";
import { oldRetryTopicsToDrain } from "../../src/startup/legacy-topics.js";
import {
  consumedTopics,
  ownTopicNames,
  retryTopicsOf,
  roleOfTopic,
  topicNames,
  unscopedRetryNames,
  withDraining,
} from "../../src/topics.js";

describe("retry and dead-letter topics scoped by the consumer group", () => {
  it("are named <source>.<group><suffix> by default, so two groups on one source never share them", () => {
    const blue = topicNames(loadConfig({ CONSUMER_GROUP: "blue" }).topics);
    const green = topicNames(loadConfig({ CONSUMER_GROUP: "green" }).topics);
    expect(blue.retry["outcome-created"]).toBe("outcome-created.blue.retry");
    expect(blue.deadLetter["outcome-created"]).toBe("outcome-created.blue.dlq");
    expect(blue.source).toEqual(green.source);
    const shared = ownTopicNames(blue).filter((topic) => ownTopicNames(green).includes(topic));
    expect(shared).toEqual([]);
    expect(consumedTopics(blue).filter((topic) => consumedTopics(green).includes(topic))).toEqual(
      Object.values(blue.source),
    );
  });

  it("keep the earlier releases' names with RETRY_DLQ_TOPIC_SCOPE=source", () => {
    const config = loadConfig({ CONSUMER_GROUP: "blue", RETRY_DLQ_TOPIC_SCOPE: "source" });
    const names = topicNames(config.topics);
    expect(names.retry["registry-mutation"]).toBe("registry-mutation.retry");
    expect(names.deadLetter["escalation-edge"]).toBe("escalation-edge.dlq");
    expect(unscopedRetryNames(config.topics)).toBeUndefined();
  });

  it("know the old unscoped retry topics, which a draining consumer reads as its stream's retry topics", () => {
    const config = loadConfig({ CONSUMER_GROUP: "blue", RETRY_TOPIC_SUFFIX: "-r" });
    const old = unscopedRetryNames(config.topics);
    expect(old).toEqual({
      "registry-mutation": "registry-mutation-r",
      "outcome-created": "outcome-created-r",
      "escalation-edge": "escalation-edge-r",
    });
    const names = withDraining(topicNames(config.topics), { "outcome-created": "outcome-created-r" });
    expect(retryTopicsOf(names, "outcome-created")).toEqual(["outcome-created.blue-r", "outcome-created-r"]);
    expect(roleOfTopic(names, "outcome-created-r")).toEqual({ stream: "outcome-created", role: "retry" });
    expect(consumedTopics(names)).toContain("outcome-created-r");
    // Never written to, created or resized: what the service owns is the scoped set.
    expect(ownTopicNames(names)).not.toContain("outcome-created-r");
    expect(roleOfTopic(topicNames(config.topics), "outcome-created-r")).toBeUndefined();
  });

  it("grant Read on the old retry topics when there are old names to drain", () => {
    const config = loadConfig({ CONSUMER_GROUP: "blue" });
    const acls = requiredAcls(topicNames(config.topics), "blue", {
      createTopics: false,
      reconcile: false,
      oldRetry: unscopedRetryNames(config.topics),
    });
    expect(acls.filter((acl) => acl.name === "outcome-created.retry").map((acl) => acl.operations)).toEqual([["Read"]]);
    expect(acls.find((acl) => acl.name === "outcome-created.blue.retry")?.operations).toEqual([
      "Read",
      "Write",
      "DescribeConfigs",
    ]);
  });
});

describe("oldRetryTopicsToDrain", () => {
  const old = {
    "registry-mutation": "registry-mutation.retry",
    "outcome-created": "outcome-created.retry",
    "escalation-edge": "escalation-edge.retry",
  } as const;
  const at = (topic: string, committed: string, high: number, low = 0) => ({ topic, committed, high, low });

  it("drains the old topics with records past the group's position once the group has read them before", () => {
    expect(
      oldRetryTopicsToDrain(old, [
        at("outcome-created.retry", "5", 7),
        // Never committed on this partition: read from its low watermark, as the consumer starts there.
        at("outcome-created.retry", "-1", 3, 1),
        at("escalation-edge.retry", "4", 4),
        at("registry-mutation.retry", "-1", 2, 0),
      ]),
    ).toEqual({ "outcome-created": "outcome-created.retry", "registry-mutation": "registry-mutation.retry" });
  });

  it("leaves drained topics alone: the next start reads only its own", () => {
    expect(
      oldRetryTopicsToDrain(old, [at("outcome-created.retry", "7", 7), at("outcome-created.retry", "-1", 3, 3)]),
    ).toEqual({});
  });

  it("leaves the old topics alone for a group that never read them: their records are another deployment's", () => {
    expect(
      oldRetryTopicsToDrain(old, [at("outcome-created.retry", "-1", 9, 0), at("escalation-edge.retry", "-1", 4, 0)]),
    ).toEqual({});
    expect(oldRetryTopicsToDrain(old, [])).toEqual({});
  });
});
