import { describe, expect, it } from "vitest";
import type { Statement, StatementResult } from "../../src/cypher/statement.js";
import { NO_WRITES } from "../../src/cypher/statement.js";
import { type Fate, fateReason, Rejection } from "../../src/model/fate.js";
import { type BatchDeps, processBatch, UNKNOWN_ERROR_ATTEMPTS } from "../../src/pipeline/process-batch.js";
import { noopMetrics, type SinkItem, type SourceRecord } from "../../src/ports.js";
import { HEADER } from "../../src/topics.js";

/**
 * The batch pipeline with in-memory ports: a decoder that reads JSON, a graph whose PRODUCED
 * statement finds no agent (so every outcome is deferred), and a sink that records what it is handed.
 */
function deps(overrides: Partial<BatchDeps> = {}) {
  const sent: SinkItem[] = [];
  const statements: Statement[][] = [];
  const base: BatchDeps = {
    decoder: {
      async decode(_stream, value) {
        try {
          return JSON.parse(value.toString()) as Record<string, unknown>;
        } catch {
          return new Rejection("undecodable", "not JSON");
        }
      },
    },
    graph: {
      async apply(_database, batch) {
        statements.push([...batch]);
        return batch.map((s): StatementResult => ({ name: s.name, records: [], counters: NO_WRITES }));
      },
      read: async () => [],
      trial: async () => {},
      ping: async () => {},
      close: async () => {},
    },
    sink: {
      async send(items) {
        sent.push(...items);
        return { tooLarge: new Map() };
      },
    },
    metrics: noopMetrics,
    clock: { now: () => 1_000_000 },
    logger: { info() {}, warn() {}, error() {}, debug() {} },
    rules: { servedTenants: new Set(["default"]), maxListLength: 10, maxIdLength: 256, maxTextLength: 4096 },
    databases: new Map([["default", "neo4j"]]),
    defaultTenant: "default",
    retry: { maxAttempts: 3, maxAgeMs: 60_000, backoffMs: 100, backoffMaxMs: 1000 },
    ...overrides,
  };
  return { deps: base, sent, statements };
}

const outcomeRecord = (offset: number, headers: Record<string, string> = {}, body?: string): SourceRecord => ({
  topic: "outcome-created",
  partition: 0,
  offset: String(offset),
  timestamp: "1700000000000",
  key: Buffer.from(`o-${offset}`),
  value: Buffer.from(
    body ??
      JSON.stringify({
        event_id: `e${offset}`,
        tenant_id: "default",
        outcome_id: `o-${offset}`,
        agent_id: "fin-agt-001",
        status: "ok",
        correlation_id: null,
        created_at: 1,
      }),
  ),
  headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)])),
});

describe("processBatch", () => {
  it("defers a record whose preconditions failed, with attempt, backoff and first-seen time", async () => {
    const { deps: d, sent } = deps();
    const summary = await processBatch("outcome-created", [outcomeRecord(0)], d);
    expect(summary).toMatchObject({ deferred: 1 });
    expect(sent).toEqual([
      expect.objectContaining({
        kind: "retry",
        attempt: 1,
        notBefore: 1_000_100,
        firstSeen: 1_000_000,
        reason: "agent-missing",
      }),
    ]);
  });

  it("counts a deferred record the retry topic would not take as dead-lettered, and nothing when the hand-off fails", async () => {
    const counted: string[] = [];
    const metrics = {
      ...noopMetrics,
      recordFate: (_stream: unknown, _patterns: unknown, fate: Fate, count = 1) =>
        void counted.push(`${fate.kind}:${fateReason(fate)} ${count}`),
    };
    const tooLarge = deps({
      metrics,
      sink: { send: async (items) => ({ tooLarge: new Map([[items[0]?.record as SourceRecord, "too large"]]) }) },
    });
    const summary = await processBatch("outcome-created", [outcomeRecord(0), outcomeRecord(1)], tooLarge.deps);
    expect(summary).toMatchObject({ deferred: 1, "dead-lettered": 1 });
    expect(counted.sort()).toEqual(["dead-lettered:record-too-large 1", "deferred:agent-missing 1"]);

    counted.length = 0;
    const failing = deps({
      metrics,
      sink: {
        send: async () => {
          throw new Error("broker away");
        },
      },
    });
    await expect(processBatch("outcome-created", [outcomeRecord(0)], failing.deps)).rejects.toThrow("broker away");
    expect(counted).toEqual([]);
  });

  it("backs off exponentially and dead-letters past the attempt bound", async () => {
    const { deps: d, sent } = deps();
    await processBatch(
      "outcome-created",
      [outcomeRecord(0, { [HEADER.attempt]: "1", [HEADER.firstSeen]: "999000" })],
      d,
    );
    expect(sent[0]).toMatchObject({ kind: "retry", attempt: 2, notBefore: 1_000_200, firstSeen: 999_000 });
    await processBatch("outcome-created", [outcomeRecord(1, { [HEADER.attempt]: "2" })], d);
    expect(sent[1]).toMatchObject({
      kind: "dead-letter",
      fate: { kind: "dead-lettered", reason: "precondition-timeout" },
    });
  });

  it("dead-letters past the age bound whatever the attempt count", async () => {
    const { deps: d, sent } = deps();
    await processBatch(
      "outcome-created",
      [outcomeRecord(0, { [HEADER.attempt]: "1", [HEADER.firstSeen]: String(1_000_000 - 60_000) })],
      d,
    );
    expect(sent[0]).toMatchObject({ kind: "dead-letter", fate: { reason: "precondition-timeout" } });
  });

  it("dead-letters a poison record and still applies its neighbours in the same transaction", async () => {
    const { deps: d, sent, statements } = deps();
    const summary = await processBatch(
      "outcome-created",
      [outcomeRecord(0), outcomeRecord(1, {}, "{not json"), outcomeRecord(2)],
      d,
    );
    expect(summary).toMatchObject({ deferred: 2, "dead-lettered": 1 });
    expect(statements).toHaveLength(1);
    expect(statements[0]?.[0]?.params.rows.map((row) => row.outcome_id)).toEqual(["o-0", "o-2"]);
    expect(sent.find((item) => item.kind === "dead-letter")).toMatchObject({
      record: { offset: "1" },
      fate: { reason: "undecodable" },
    });
  });

  it("lets an infrastructure failure escape, so the caller pauses instead of acknowledging", async () => {
    const { deps: d, sent } = deps({
      graph: {
        apply: async () => {
          throw Object.assign(new Error("connection refused"), { code: "ServiceUnavailable" });
        },
        read: async () => [],
        trial: async () => {},
        ping: async () => {},
        close: async () => {},
      },
    });
    await expect(processBatch("outcome-created", [outcomeRecord(0)], d)).rejects.toThrow("connection refused");
    expect(sent).toEqual([]);
  });

  it("records freshness of applied records from the event's own time to the commit", async () => {
    const observed: number[] = [];
    const { deps: d } = deps({
      metrics: { ...noopMetrics, recordFreshness: (_stream, seconds) => void observed.push(...seconds) },
      graph: {
        // The agent exists for record 0 only: record 1 is deferred, and must not count.
        async apply(_database, batch) {
          return batch.map(
            (s): StatementResult => ({
              name: s.name,
              records: s.name === "3.3" ? [{ i: 0, existed: false }] : [],
              counters: NO_WRITES,
            }),
          );
        },
        read: async () => [],
        trial: async () => {},
        ping: async () => {},
        close: async () => {},
      },
    });
    // created_at is 1 ms after the epoch; the clock reads 1,000,000 ms.
    const summary = await processBatch("outcome-created", [outcomeRecord(0), outcomeRecord(1)], d);
    expect(summary).toMatchObject({ applied: 1, deferred: 1 });
    expect(observed).toEqual([999.999]);
  });

  it("routes each tenant to its database and dead-letters tenants it does not serve", async () => {
    const databases: string[] = [];
    const { deps: d, sent } = deps({
      databases: new Map([
        ["default", "neo4j"],
        ["acme", "acmedb"],
      ]),
      rules: { servedTenants: new Set(["default", "acme"]), maxListLength: 10, maxIdLength: 256, maxTextLength: 4096 },
    });
    const apply = d.graph.apply;
    d.graph.apply = async (database, batch) => {
      databases.push(database);
      return apply(database, batch);
    };
    const record = (offset: number, tenant: string) =>
      outcomeRecord(
        offset,
        {},
        JSON.stringify({
          event_id: "e",
          tenant_id: tenant,
          outcome_id: `o${offset}`,
          agent_id: "fin-agt-001",
          status: "ok",
          correlation_id: null,
          created_at: 1,
        }),
      );
    await processBatch("outcome-created", [record(0, "default"), record(1, "acme"), record(2, "initech")], d);
    expect(databases.sort()).toEqual(["acmedb", "neo4j"]);
    expect(sent.filter((item) => item.kind === "dead-letter")).toEqual([
      expect.objectContaining({ fate: expect.objectContaining({ reason: "unserved-tenant" }) }),
    ]);
  });

  describe("poison that only Neo4j recognises", () => {
    const poisonGraph = (error: (offsets: string[]) => unknown) => {
      const attempts: string[][] = [];
      const graph: BatchDeps["graph"] = {
        async apply(_database, batch) {
          const rows = (batch[0]?.params.rows ?? []) as { outcome_id: string }[];
          const ids = rows.map((row) => row.outcome_id);
          attempts.push(ids);
          if (ids.some((id) => id.startsWith("poison"))) throw error(ids);
          return batch.map((s): StatementResult => ({ name: s.name, records: [], counters: NO_WRITES }));
        },
        read: async () => [],
        trial: async () => {},
        ping: async () => {},
        close: async () => {},
      };
      return { graph, attempts };
    };
    const outcome = (offset: number, id: string) =>
      outcomeRecord(
        offset,
        {},
        JSON.stringify({
          event_id: `e${offset}`,
          tenant_id: "default",
          outcome_id: id,
          agent_id: "fin-agt-001",
          status: "ok",
          correlation_id: null,
          created_at: 1,
        }),
      );
    const batch = [outcome(0, "good-0"), outcome(1, "good-1"), outcome(2, "poison-2"), outcome(3, "good-3")];

    it("narrows a rejected batch to the refused record, dead-letters it with Neo4j's code, applies the rest", async () => {
      const { graph, attempts } = poisonGraph(() =>
        Object.assign(new Error("Property value is too large to index"), {
          code: "Neo.DatabaseError.Statement.ExecutionFailed",
        }),
      );
      const { deps: d, sent } = deps({ graph });
      await processBatch("outcome-created", batch, d);
      const deadLetters = sent.filter((item) => item.kind === "dead-letter");
      expect(deadLetters.map((item) => item.record.offset)).toEqual(["2"]);
      expect(deadLetters[0]).toMatchObject({
        fate: {
          reason: "neo4j-rejected",
          message: expect.stringContaining("Neo.DatabaseError.Statement.ExecutionFailed"),
        },
      });
      // Every good record went through a transaction that did not fail, in order.
      const succeeded = attempts.filter((ids) => !ids.some((id) => id.startsWith("poison"))).flat();
      expect(succeeded).toEqual(["good-0", "good-1", "good-3"]);
    });

    it("reports progress at every answer while it narrows, so liveness does not take a long narrowing for a wedge", async () => {
      const { graph, attempts } = poisonGraph(() =>
        Object.assign(new Error("terminated"), {
          code: "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
        }),
      );
      const { deps: d } = deps({ graph });
      let progressed = 0;
      await processBatch("outcome-created", batch, d, () => progressed++);
      // Every attempt after the first failed one got an answer from Neo4j: each is progress.
      expect(attempts.length).toBeGreaterThan(2);
      expect(progressed).toBe(attempts.length);
    });

    it("tries an unrecognised error a bounded number of times, then narrows it the same way", async () => {
      const { graph, attempts } = poisonGraph(() => new Error("nobody knows this one"));
      const waits: number[] = [];
      const { deps: d, sent } = deps({ graph, sleep: async (ms) => void waits.push(ms) });
      await processBatch("outcome-created", batch, d);
      expect(attempts.slice(0, UNKNOWN_ERROR_ATTEMPTS).every((ids) => ids.length === 4)).toBe(true);
      expect(waits).toHaveLength(UNKNOWN_ERROR_ATTEMPTS - 1);
      expect(sent.filter((item) => item.kind === "dead-letter").map((item) => item.record.offset)).toEqual(["2"]);
    });

    it("blames no record for an unrecognised error while Neo4j does not answer", async () => {
      const { graph } = poisonGraph(() => new Error("nobody knows this one"));
      const down = { ...graph, ping: async () => Promise.reject(new Error("connection refused")) };
      const { deps: d, sent } = deps({ graph: down, sleep: async () => {} });
      await expect(processBatch("outcome-created", batch, d)).rejects.toThrow("connection refused");
      expect(sent).toEqual([]);
    });

    it.each([
      "Neo.TransientError.General.TransactionMemoryLimit",
      "Neo.TransientError.General.MemoryPoolOutOfMemoryError",
      "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
    ])("narrows a batch too heavy for Neo4j (%s) to the record that fails alone", async (code) => {
      const { graph, attempts } = poisonGraph(() => Object.assign(new Error("too heavy"), { code }));
      const { deps: d, sent } = deps({ graph });
      await processBatch("outcome-created", batch, d);
      const deadLetters = sent.filter((item) => item.kind === "dead-letter");
      expect(deadLetters.map((item) => item.record.offset)).toEqual(["2"]);
      expect(deadLetters[0]).toMatchObject({
        fate: { reason: "neo4j-rejected", message: expect.stringContaining(code) },
      });
      const succeeded = attempts.filter((ids) => !ids.some((id) => id.startsWith("poison"))).flat();
      expect(succeeded).toEqual(["good-0", "good-1", "good-3"]);
    });

    it("blames no record for a batch too heavy while Neo4j does not answer", async () => {
      const { graph } = poisonGraph(() =>
        Object.assign(new Error("too heavy"), { code: "Neo.TransientError.General.TransactionMemoryLimit" }),
      );
      const down = { ...graph, ping: async () => Promise.reject(new Error("connection refused")) };
      const { deps: d, sent } = deps({ graph: down });
      await expect(processBatch("outcome-created", batch, d)).rejects.toThrow("connection refused");
      expect(sent).toEqual([]);
    });

    it("lets a transient failure through untouched, so the partition pauses", async () => {
      const { graph, attempts } = poisonGraph(() =>
        Object.assign(new Error("deadlock"), { code: "Neo.TransientError.Transaction.DeadlockDetected" }),
      );
      const { deps: d, sent } = deps({ graph });
      await expect(processBatch("outcome-created", batch, d)).rejects.toThrow("deadlock");
      expect(attempts).toHaveLength(1);
      expect(sent).toEqual([]);
    });
  });

  describe("a deferred record past its window", () => {
    const upstream = (committed: Record<string, number>, retryEnds: Record<string, number> = { "reg.retry/0": 0 }) => ({
      ends: async () => ({ "reg/0": 10 }),
      committed: async () => committed,
      retryEnds: async () => retryEnds,
    });
    const past = { [HEADER.attempt]: "7", [HEADER.firstSeen]: String(1_000_000 - 61_000) };

    it("is retried with the upstream's end offsets as its mark, not dead-lettered", async () => {
      const { deps: d, sent } = deps({ upstream: upstream({ "reg/0": 3 }) });
      await processBatch("outcome-created", [outcomeRecord(0, past)], d);
      expect(sent).toEqual([expect.objectContaining({ kind: "retry", upstreamMark: { "reg/0": 10 } })]);
    });

    it("stays deferred while the group has not applied the upstream up to the mark", async () => {
      const { deps: d, sent } = deps({ upstream: upstream({ "reg/0": 9 }) });
      await processBatch("outcome-created", [outcomeRecord(0, { ...past, [HEADER.upstreamMark]: '{"reg/0":10}' })], d);
      expect(sent).toEqual([expect.objectContaining({ kind: "retry", upstreamMark: { "reg/0": 10 } })]);
    });

    it("takes a new mark instead when the upstream deferred records again since its mark", async () => {
      const { deps: d, sent } = deps({ upstream: upstream({ "reg/0": 10 }, { "reg.retry/0": 4 }) });
      // Within its second window: 61 s of 120, attempt 4 of 6.
      const marked = { ...past, [HEADER.attempt]: "3", [HEADER.upstreamMark]: '{"reg/0":10}' };
      await processBatch("outcome-created", [outcomeRecord(0, marked)], d);
      expect(sent).toEqual([expect.objectContaining({ kind: "retry", upstreamMark: { "reg/0": 10 } })]);
    });

    it("is dead-lettered as precondition-timeout once the upstream was applied up to the mark", async () => {
      const { deps: d, sent } = deps({ upstream: upstream({ "reg/0": 10 }) });
      await processBatch("outcome-created", [outcomeRecord(0, { ...past, [HEADER.upstreamMark]: '{"reg/0":10}' })], d);
      expect(sent).toEqual([
        expect.objectContaining({
          kind: "dead-letter",
          fate: expect.objectContaining({ reason: "precondition-timeout" }),
        }),
      ]);
    });
  });
});
