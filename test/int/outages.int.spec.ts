import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { toMessage } from "../../src/adapters/kafka/event-publisher.js";
import { fetchLag } from "../../src/adapters/kafka/group-admin.js";
import { readerSchema } from "../../src/model/schemas.js";
import type { Stream } from "../../src/topics.js";
import { escalation, outcome, snapshot } from "../support/builders.js";
import { Harness } from "../support/harness.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A schema registry that stops answering (the process frozen with SIGSTOP: connections open, no
 * replies). Records whose writer schema the projector already holds keep flowing; records that need a
 * lookup pause their partition — never dead-lettered, never skipped — and apply once it answers again.
 * Only meaningful on the local stack, whose registry process this test can freeze.
 */
describe.skipIf(Boolean(process.env.SCHEMA_REGISTRY_URL) || process.env.STACK === "testcontainers")(
  "a schema registry outage",
  () => {
    let harness: Harness;
    let registryPid: number | undefined;
    beforeAll(async () => {
      harness = await Harness.create("outage", { TOPIC_PARTITIONS: "1" });
      await harness.clearGraph();
      const { stackStatus } = await import("../../stack/api.js");
      registryPid = (await stackStatus()).servers.find((server) => server.name === "registry")?.pid;
    });
    afterEach(() => {
      if (registryPid) process.kill(registryPid, "SIGCONT");
      return harness.stopProjectors();
    });
    afterAll(() => harness?.close());

    it("pauses what needs the registry, keeps applying what its cache covers, and resumes by itself", async () => {
      expect(registryPid).toBeGreaterThan(0);
      const ids = (harness as unknown as { schemaIds: Record<Stream, number> }).schemaIds;
      await harness.startProjector();
      await harness.publish([snapshot("fin-agt-001"), snapshot("fin-agt-002"), outcome("warm", "fin-agt-001")]);
      await harness.waitForCaughtUp();

      // Encode before the outage: the producer side needs the registry too.
      const outcomes = await Promise.all(
        [outcome("during-1", "fin-agt-001"), outcome("during-2", "fin-agt-002")].map((e) =>
          toMessage(harness.registry, ids, e),
        ),
      );
      // A newer writer schema the projector has never seen (it registered, and so holds, only ours).
      const schema = readerSchema("escalation-edge");
      const v2 = {
        ...schema,
        fields: [...(schema.fields as object[]), { name: "channel", type: ["null", "string"], default: null }],
      };
      const v2Id = await harness.registerVersion("escalation-edge", v2);
      const { kind: _kind, ...edge } = escalation("during-1", "during-2");
      const escalations = [
        { key: "during-1", value: await harness.registry.encode(v2Id, { ...edge, channel: "pager" }) },
      ];

      process.kill(registryPid as number, "SIGSTOP");
      await harness.sendRaw(harness.names.source["outcome-created"], outcomes as never);
      await harness.sendRaw(harness.names.source["escalation-edge"], escalations as never);
      await sleep(12_000);

      const graph = await harness.dump();
      expect(graph.relationships.filter((line) => / -\[PRODUCED\]-> Outcome:during-/.test(line))).toHaveLength(2);
      // The escalation needs the registry: its partition waits, nothing is dead-lettered or skipped.
      expect(graph.relationships.some((line) => line.includes("-[ESCALATED_TO]->"))).toBe(false);
      const lag = await fetchLag(harness.admin, harness.config.kafka.group, [harness.names.source["escalation-edge"]]);
      expect(lag.reduce((sum, entry) => sum + entry.lag, 0)).toBe(1);

      process.kill(registryPid as number, "SIGCONT");
      await harness.waitForCaughtUp(90_000);
      const after = await harness.dump();
      expect(
        after.relationships.some((line) => line.startsWith("Outcome:during-1 -[ESCALATED_TO]-> Outcome:during-2 ")),
      ).toBe(true);
      expect(
        after.relationships.some((line) => line.startsWith("Outcome:during-1 -[OBSERVED]-> Outcome:during-2 ")),
      ).toBe(true);
      const [letters] = await harness.admin.fetchTopicOffsets(harness.names.deadLetter["escalation-edge"]);
      expect(letters?.high).toBe("0");
    });
  },
);

/**
 * Neo4j unavailable (frozen with SIGSTOP) for longer than the retry window, while a registry backlog
 * ending with the snapshot a deferred outcome waits for is published. Once Neo4j answers again, the
 * outcome's retries run while the registry topic is still catching up: a record whose window ran out
 * during the outage must not be dead-lettered before that upstream has caught up.
 */
describe.skipIf(Boolean(process.env.NEO4J_URI) || process.env.STACK === "testcontainers")(
  "a Neo4j outage longer than the retry window",
  () => {
    let harness: Harness;
    let neo4jPid: number | undefined;
    beforeAll(async () => {
      harness = await Harness.create("neo4j-outage", {
        TOPIC_PARTITIONS: "1",
        RETRY_MAX_AGE_MS: "3000",
        RETRY_BACKOFF_MS: "100",
        RETRY_BACKOFF_MAX_MS: "500",
        // Small transactions, so the registry backlog takes a while to apply after the outage.
        BATCH_MAX_RECORDS: "100",
      });
      await harness.clearGraph();
      const { stackStatus } = await import("../../stack/api.js");
      neo4jPid = (await stackStatus()).servers.find((server) => server.name === "neo4j")?.pid;
    });
    afterEach(() => {
      if (neo4jPid) process.kill(neo4jPid, "SIGCONT");
      return harness.stopProjectors();
    });
    afterAll(() => harness?.close());

    it("dead-letters nothing that can apply once Neo4j is back", async () => {
      expect(neo4jPid).toBeGreaterThan(0);
      await harness.startProjector();
      await harness.publish([snapshot("fin-agt-001")]);
      await harness.waitForCaughtUp();

      // Deferred: its agent has not registered yet. It keeps being retried while Neo4j is frozen.
      await harness.publish([outcome("o-early", "late-agt-001")]);
      await sleep(1_500);
      process.kill(neo4jPid as number, "SIGSTOP");
      const backlog = Array.from({ length: 3_000 }, (_, i) => snapshot(`fill-agt-${i}`));
      await harness.publish([...backlog, snapshot("late-agt-001"), outcome("o-during", "late-agt-001")]);
      await sleep(8_000);
      process.kill(neo4jPid as number, "SIGCONT");
      await harness.waitForCaughtUp(120_000);

      expect(await harness.deadLetters()).toEqual([]);
      const graph = await harness.dump();
      for (const id of ["o-early", "o-during"]) {
        expect(
          graph.relationships.some((line) => line.startsWith(`Agent:late-agt-001 -[PRODUCED]-> Outcome:${id} `)),
        ).toBe(true);
      }
    });
  },
);
