import neo4j from "neo4j-driver";
import { describe, expect, it } from "vitest";
import { toLongTransaction } from "../../bench/lib/long-transactions.js";

describe("toLongTransaction", () => {
  it("keeps one snapshot row with plain numbers and the statement's first line of text", () => {
    const tx = toLongTransaction(
      {
        transactionId: "neo4j-transaction-7",
        database: "neo4j",
        currentQuery: `\nUNWIND $rows AS row\n  MATCH (source:Outcome {outcome_id: row.source_outcome_id})${" x".repeat(200)}`,
        clientAddress: "127.0.0.1:5000",
        status: "Blocked by: [neo4j-transaction-6]",
        elapsedMs: neo4j.int(31_000),
        cpuMs: neo4j.int(120),
        waitMs: neo4j.int(30_500),
        idleMs: null,
        activeLockCount: neo4j.int(40_000),
        pageHits: neo4j.int(9),
        pageFaults: neo4j.int(0),
        heapBytes: undefined,
      },
      new Date("2026-12-01T00:00:00Z"),
    );
    expect(tx.statement.startsWith("UNWIND $rows AS row MATCH (source:Outcome {outcome_id:")).toBe(true);
    expect(tx.statement).toHaveLength(160);
    expect(tx).toMatchObject({
      status: "Blocked by: [neo4j-transaction-6]",
      elapsedMs: 31_000,
      cpuMs: 120,
      waitMs: 30_500,
      idleMs: null,
      activeLockCount: 40_000,
      heapBytes: null,
      seenAt: "2026-12-01T00:00:00.000Z",
    });
  });
});
