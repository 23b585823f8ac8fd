import type { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import type { Producer } from "kafkajs";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createFindingPublisher } from "../../src/adapters/kafka/finding-publisher.js";
import { UNPUBLISHED_COUNTS, UNPUBLISHED_FINDINGS } from "../../src/cypher/findings.js";
import type { FindingMetrics, GraphWriter } from "../../src/ports.js";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };

interface StoredFinding {
  finding_id: string;
  tenant_id: string;
  detected_at: number;
  published: boolean;
}

/**
 * An outbox in memory: the publisher's three statements over a list of findings, and a producer that
 * records each send, how many ran at once, and can be held open by the test.
 */
function outbox() {
  const findings: StoredFinding[] = [];
  const sent: string[] = [];
  let inFlight = 0;
  let mostAtOnce = 0;
  let hold: Promise<void> | undefined;
  const graph = {
    async read(_database: string, cypher: string) {
      const waiting = findings.filter((f) => !f.published);
      if (cypher === UNPUBLISHED_FINDINGS)
        return waiting.map((f) => ({
          ...f,
          kind: "undeclared-escalation",
          source_agent_id: "sw-agt-001",
          target_agent_id: "sw-agt-002",
          resolves: null,
        }));
      if (cypher === UNPUBLISHED_COUNTS) {
        if (waiting.length === 0) return [];
        const oldest = Math.min(...waiting.map((f) => f.detected_at));
        return [{ tenant_id: "default", unpublished: waiting.length, oldest_detected_at: oldest }];
      }
      throw new Error(`unexpected read ${cypher}`);
    },
    async apply(_database: string, statements: readonly { params: Record<string, unknown> }[]) {
      const rows = statements[0]?.params.rows as { finding_id: string }[];
      for (const row of rows) for (const f of findings) if (f.finding_id === row.finding_id) f.published = true;
      return [];
    },
  } as unknown as GraphWriter;
  const producer = {
    async sendBatch(batch: { topicMessages: { messages: { value: Buffer }[] }[] }) {
      inFlight++;
      mostAtOnce = Math.max(mostAtOnce, inFlight);
      try {
        if (hold) await hold;
        for (const message of batch.topicMessages[0]?.messages ?? []) sent.push(String(message.value));
        return [];
      } finally {
        inFlight--;
      }
    },
  } as unknown as Producer;
  const registry = {
    encode: async (_id: number, value: { finding_id: string }) => Buffer.from(value.finding_id),
  } as unknown as SchemaRegistry;
  return {
    findings,
    sent,
    mostAtOnce: () => mostAtOnce,
    holdSends(until: Promise<void> | undefined) {
      hold = until;
    },
    commit(finding_id: string, detected_at = Date.now()) {
      findings.push({ finding_id, tenant_id: "default", detected_at, published: false });
    },
    publisher(metrics?: FindingMetrics) {
      return createFindingPublisher({
        graph,
        outboxes: [{ database: "neo4j", scoped: false }],
        producer,
        registry,
        schemaId: 1,
        topic: "governance-findings",
        logger: quiet,
        ...(metrics ? { metrics } : {}),
      });
    },
  };
}

describe("the findings publisher's sweep", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("publishes, each interval, a finding no commit asked for; none once stopped", async () => {
    const box = outbox();
    const publisher = box.publisher();
    publisher.sweepEvery(30_000);
    // Committed, and the client never heard: nothing calls recorded().
    box.commit("lost-answer");
    await vi.advanceTimersByTimeAsync(29_000);
    expect(box.sent).toEqual([]);
    // The tick, then the round's linger.
    await vi.advanceTimersByTimeAsync(1_000 + 250);
    expect(box.sent).toEqual(["lost-answer"]);
    expect(box.findings[0]?.published).toBe(true);

    // Nothing new: the next tick publishes nothing again.
    await vi.advanceTimersByTimeAsync(30_000);
    expect(box.sent).toEqual(["lost-answer"]);
    box.commit("second");
    await vi.advanceTimersByTimeAsync(30_000);
    expect(box.sent).toEqual(["lost-answer", "second"]);

    await publisher.stop();
    box.commit("after-stop");
    await vi.advanceTimersByTimeAsync(120_000);
    expect(box.sent).toEqual(["lost-answer", "second"]);
  });

  it("a tick during a commit's round waits for it: never two publishes at once", async () => {
    const box = outbox();
    const publisher = box.publisher();
    publisher.sweepEvery(1_000);
    let release: () => void = () => {};
    box.holdSends(
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    box.commit("first");
    publisher.recorded();
    await vi.advanceTimersByTimeAsync(250);
    // The round's send is held; five ticks pass over it.
    box.commit("meanwhile");
    await vi.advanceTimersByTimeAsync(5_000);
    expect(box.sent).toEqual([]);
    box.holdSends(undefined);
    release();
    await vi.advanceTimersByTimeAsync(1_500);
    await publisher.idle();
    expect(box.mostAtOnce()).toBe(1);
    // `meanwhile` was read by the held round or the one a tick asked for after it: each sent once.
    expect([...box.sent].sort()).toEqual(["first", "meanwhile"]);
    await publisher.stop();
  });

  it("a round asked for just before a stop (a stop's drain committed findings) still makes its attempt", async () => {
    const box = outbox();
    const publisher = box.publisher();
    box.commit("drained");
    publisher.recorded();
    // The stop comes within the round's linger.
    const stopping = publisher.stop();
    await vi.advanceTimersByTimeAsync(250);
    await stopping;
    expect(box.sent).toEqual(["drained"]);
    expect(box.findings[0]?.published).toBe(true);
  });

  it("reports when the oldest finding still waiting was recorded, per tenant, and none once published", async () => {
    const box = outbox();
    const oldest: Map<string, number>[] = [];
    const publisher = box.publisher({
      setUnpublishedFindings() {},
      setOldestUnpublishedFinding: (byTenant) => void oldest.push(new Map(byTenant)),
    });
    const away = Promise.reject(new Error("findings topic away"));
    away.catch(() => {});
    box.holdSends(away);
    box.commit("old", 1_000);
    box.commit("new", 5_000);
    publisher.recorded();
    // The send fails until given up (its budget), then the round counts what is left.
    await vi.advanceTimersByTimeAsync(40_000);
    expect(oldest[0]).toEqual(new Map([["default", 1_000]]));
    box.holdSends(undefined);
    await vi.advanceTimersByTimeAsync(60_000);
    await publisher.idle();
    expect(oldest.at(-1)).toEqual(new Map());
    expect([...box.sent].sort()).toEqual(["new", "old"]);
    await publisher.stop();
  });
});
