import { afterEach, describe, expect, it } from "vitest";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { LIST_FINDINGS, recordFindings } from "../../src/cypher/findings.js";
import { type Finding, finding } from "../../src/model/findings.js";
import { Harness } from "../support/harness.js";
import { until } from "../support/until.js";

const SWEEP_MS = 3_000;
/** The round's linger, and a loaded machine's Kafka and Neo4j round trips. */
const MARGIN_MS = 12_000;

async function publishedIds(h: Harness): Promise<string[]> {
  const decoding: Promise<Finding>[] = [];
  await readTopicsToEnd(h.kafka, [h.names.findings], (record) => {
    decoding.push(h.registry.decode(record.value as Buffer));
  });
  return (await Promise.all(decoding)).map((f) => f.finding_id);
}

/** The findings outbox's periodic sweep on real servers: nothing committed is left unpublished. */
describe("governance findings, swept", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it("a finding committed while its answer was lost (published = false, no round asked for) is published at the next sweep, with no other finding happening", async () => {
    const h = await Harness.create("findings-sweep");
    harness = h;
    await h.clearGraph();
    const database = h.config.neo4j.database;
    const service = await h.startProjector({ FINDINGS_SWEEP_INTERVAL_MS: String(SWEEP_MS) });
    // The start-up round is over: from here only the sweep publishes.
    await service.findings.idle();

    // The statement the projector's transaction runs, committed outside it: the service never hears of it.
    const lost = finding("default", "undeclared-escalation", "sw-agt-001", "sw-agt-002");
    await h
      .graph()
      .apply(database, [{ name: "findings", cypher: recordFindings(false), params: { rows: [{ ...lost }] } }]);
    const committedAt = Date.now();

    await until("the finding on the findings topic", async () => (await publishedIds(h)).includes(lost.finding_id), {
      timeoutMs: SWEEP_MS + MARGIN_MS,
    });
    const tookMs = Date.now() - committedAt;
    expect(await publishedIds(h)).toEqual([lost.finding_id]);
    const inGraph = await h.graph().read(database, LIST_FINDINGS, { tenant: null, open: false });
    expect(inGraph.map((f) => [f.finding_id, f.published])).toEqual([[lost.finding_id, true]]);
    console.log(`swept finding published ${tookMs} ms after its commit (sweep interval ${SWEEP_MS} ms)`);
  });
});
