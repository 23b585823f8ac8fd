import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diffGraphs } from "../../src/model/graph.js";
import { HEADER } from "../../src/topics.js";
import { generateEventLog, SMALL_WORKLOAD } from "../../workload/generate.js";
import { outcome, overlong, snapshot, tool, workflow } from "../support/builders.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";

/**
 * Poison that only Neo4j recognises: ids within the configured length limit (raised here on purpose)
 * but past Neo4j's index entry limit. Each transaction carrying one fails the same way every time;
 * the batch must be narrowed down, the record dead-lettered with Neo4j's code, everything else applied.
 */
describe("records Neo4j refuses are isolated, not retried forever", () => {
  const harnesses: Harness[] = [];
  afterAll(async () => {
    for (const harness of harnesses) await harness.close();
  });
  const limits = { MAX_ID_LENGTH: "100000", MAX_TEXT_LENGTH: "100000", RETRY_MAX_ATTEMPTS: "3" };

  describe("between two good records on one partition", () => {
    let harness: Harness;
    beforeAll(async () => {
      harness = await Harness.create("poison", { ...limits, TOPIC_PARTITIONS: "1" });
      harnesses.push(harness);
      await harness.clearGraph();
      await harness.startProjector();
      await harness.publish([snapshot("fin-agt-001")]);
      await harness.waitForCaughtUp();
    });

    const cases = [
      { name: "an agent_id", poison: () => snapshot(overlong("-agt-001")) },
      { name: "a tool_id", poison: () => snapshot("fin-agt-101", { tools: [tool(overlong("-tool"))] }) },
      {
        name: "a workflow_id",
        poison: () => snapshot("fin-agt-102", { owned_workflows: [workflow(overlong("-wf"))] }),
      },
      { name: "an outcome_id", poison: () => outcome(overlong("-o"), "fin-agt-001") },
    ];

    it.each(cases)("$name of 40,000 characters → neo4j-rejected", async ({ poison }) => {
      const tag = Math.random().toString(36).slice(2, 8);
      const bad = poison();
      const good = (n: number) =>
        bad.kind === "outcome-created" ? outcome(`o-${tag}-${n}`, "fin-agt-001") : snapshot(`g${tag}-agt-${n}`);
      const topic = harness.names.source[bad.kind === "outcome-created" ? "outcome-created" : "registry-mutation"];
      await harness.sendRaw(topic, [
        await harness.encode(good(1)),
        { ...(await harness.encode(bad)), headers: { "x-trace": tag } },
        await harness.encode(good(2)),
      ]);
      await harness.waitForCaughtUp();

      const letters = (await harness.deadLetters()).filter((letter) => letter.headers["x-trace"] === tag);
      expect(letters).toHaveLength(1);
      expect(letters[0]?.headers[HEADER.errorClass]).toBe("neo4j-rejected");
      expect(letters[0]?.headers[HEADER.errorMessage]).toMatch(/^Neo\.\w+Error\.[\w.]+: .*too large to index/);
      expect(letters[0]?.headers[HEADER.errorMessage]?.length).toBeLessThan(2_000);
      const graph = await harness.dump();
      for (const n of [1, 2]) {
        const event = good(n);
        const line =
          event.kind === "outcome-created"
            ? `Outcome:${event.outcome_id} `
            : `Agent:${(event as { agent_id: string }).agent_id} `;
        expect(graph.nodes.some((node) => node.startsWith(line))).toBe(true);
      }
    });
  });

  it("poison on one of three registry partitions of a backlog: the others, outcomes and escalations all apply", async () => {
    const harness = await Harness.create("poison3", { ...limits, TOPIC_PARTITIONS: "3", CATCH_UP_HOLD_RECORDS: "100" });
    harnesses.push(harness);
    await harness.clearGraph();
    const log = generateEventLog(17, { ...SMALL_WORKLOAD, agents: 150, outcomes: 600, escalations: 200 });
    expect(log.registry.length).toBeGreaterThan(100);
    // A backlog, as a new deployment sees it: the registry stream is held up to the poison, so the
    // catch-up hold keeps outcomes and escalations waiting until the registry topic has caught up.
    await harness.publish(log.registry.slice(0, 60));
    await harness.sendRaw(harness.names.source["registry-mutation"], [
      { ...(await harness.encode(snapshot(overlong("-agt-007")))), partition: 1 },
    ]);
    await harness.publish([...log.registry.slice(60), ...log.outcomes, ...log.escalations]);
    await harness.startProjector();
    await harness.waitForCaughtUp(180_000);

    const letters = await harness.deadLetters();
    expect(
      letters.map((letter) => [letter.headers[HEADER.sourcePartition], letter.headers[HEADER.errorClass]]),
    ).toEqual([["1", "neo4j-rejected"]]);
    const expected = referenceGraph([...log.registry, ...log.outcomes, ...log.escalations]);
    expect(diffGraphs(expected, await harness.dump())).toEqual([]);
  });

  it("a record too heavy for the transaction timeout is narrowed to and dead-lettered; its neighbours apply", async () => {
    const harness = await Harness.create("heavy", { ...limits, TOPIC_PARTITIONS: "1", MAX_LIST_LENGTH: "100000" });
    harnesses.push(harness);
    await harness.clearGraph();
    // Plans compiled first, with the default timeout: only the heavy record's size decides below.
    const warm = await harness.startProjector();
    await harness.publish([snapshot("warm-agt-001", { tools: [tool("t-warm")] })]);
    await harness.waitForCaughtUp();
    await warm.stop("warmed up");
    await harness.startProjector({ NEO4J_TX_TIMEOUT_MS: "1000" });
    const heavy = snapshot("heavy-agt-001", {
      tools: Array.from({ length: 40_000 }, (_, n) => ({ tool_id: `h${n}`, name: "T" })),
    });
    await harness.sendRaw(harness.names.source["registry-mutation"], [
      await harness.encode(snapshot("light-agt-001", { tools: [tool("t-light")] })),
      { ...(await harness.encode(heavy)), headers: { "x-trace": "heavy" } },
      await harness.encode(snapshot("light-agt-002", { tools: [tool("t-light")] })),
    ]);
    await harness.waitForCaughtUp(180_000);

    const letters = await harness.deadLetters();
    expect(letters.map((letter) => [letter.headers["x-trace"], letter.headers[HEADER.errorClass]])).toEqual([
      ["heavy", "neo4j-rejected"],
    ]);
    expect(letters[0]?.headers[HEADER.errorMessage]).toMatch(/^Neo\.ClientError\.Transaction\.TransactionTimedOut/);
    const graph = await harness.dump();
    for (const agent of ["light-agt-001", "light-agt-002"])
      expect(
        graph.relationships.some((line) => line.startsWith(`Agent:${agent} -[AUTHORIZED_FOR]-> Tool:t-light`)),
      ).toBe(true);
  }, 240_000);
});
