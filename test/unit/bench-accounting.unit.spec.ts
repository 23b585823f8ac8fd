import { describe, expect, it } from "vitest";
import { accountingRows, accountingTable, runAccounting } from "../../bench/lib/accounting.js";
import { parseMetrics, sumSamples } from "../../bench/lib/prom.js";

const instance = (fetches: number, outcomeTx: number) =>
  parseMetrics(
    [
      `agp_batch_size_records_count{stream="outcome-created"} ${outcomeTx}`,
      `agp_batch_size_records_sum{stream="outcome-created"} ${outcomeTx * 1000}`,
      `agp_records_total{stream="escalation-edge",result="deferred",reason="missing-outcome"} 5`,
      `agp_records_consumed_total{topic="e.retry-x"} 5`,
      `agp_records_consumed_total{topic="e"} 500`,
      `agp_transaction_retries_total{pattern="3.4",reason="DeadlockDetected"} 1`,
      `agp_transaction_retries_total{pattern="3.4",reason="ServiceUnavailable"} 1`,
      `agp_partition_pauses_total{reason="catch-up-hold"} 2`,
      `agp_fetches_total ${fetches}`,
      "agp_lag_polls_total 10",
      "agp_rebalances_total 1",
    ].join("\n"),
  );

describe("bench accounting", () => {
  it("adds up the instances' counters and divides each process's CPU by the records", () => {
    const a = runAccounting(
      sumSamples([instance(30, 10), instance(20, 20)]),
      { neo4j: 10, kafka: 2, registry: 1, projector1: 3, projector2: 5, bench: 1 },
      100_000,
      ["e.retry-x"],
    );
    // Projectors, Neo4j and Kafka; not the registry, not the bench.
    expect(a.cpuSecondsPerRecord).toEqual({ total: 0.0002, projectors: 0.00008, neo4j: 0.0001, kafka: 0.00002 });
    expect(a.projectorCpuSeconds).toEqual([3, 5]);
    expect(a.perStream["outcome-created"]).toEqual({ transactions: 30, rowsPerTransaction: 1000 });
    expect(a.perStream["registry-mutation"]).toEqual({ transactions: 0, rowsPerTransaction: null });
    expect(a).toMatchObject({
      deferred: 10,
      retryRecordsConsumed: 10,
      deadlockRetries: 2,
      catchUpHoldPauses: 4,
      fetches: 50,
      fetchesPerThousandRecords: 0.5,
      lagPolls: 20,
      rebalances: 2,
    });
  });

  it("reads a counter an older build does not export as null, not 0", () => {
    const a = runAccounting(parseMetrics("agp_rebalances_total 1"), { neo4j: 1, kafka: 1, projector: 1 }, 10, []);
    expect(a.fetches).toBeNull();
    expect(a.catchUpHoldPauses).toBeNull();
    expect(a.lagPolls).toBeNull();
  });

  it("takes medians per instance count and sets total and Neo4j CPU per record against one instance's", () => {
    const run = (instances: number, total: number, neo4j: number, rate: number) => ({
      instances,
      recordsPerSecond: rate,
      accounting: runAccounting(
        parseMetrics("agp_rebalances_total 1"),
        {
          neo4j,
          kafka: 0,
          ...Object.fromEntries(
            Array.from({ length: instances }, (_, n) => [`projector${n + 1}`, (total - neo4j) / instances]),
          ),
        },
        1_000_000,
        [],
      ),
    });
    const rows = accountingRows(
      [
        run(1, 100, 60, 10),
        run(3, 120, 63, 9),
        run(3, 130, 69, 8),
        run(1, 110, 66, 12),
        run(1, 105, 63, 11),
        run(3, 125, 66, 8),
      ],
      [0, 0, 1, 1, 2, 2],
    );
    expect(rows.map((r) => r.instances)).toEqual([1, 3]);
    const [one, three] = rows;
    expect(one?.cpuMicrosecondsPerRecord.total).toBe(105);
    expect(three?.cpuMicrosecondsPerRecord).toMatchObject({ total: 125, neo4j: 66 });
    expect(three?.vsOne).toEqual({ total: 1.19, neo4j: 1.048 });
    expect(three?.projectorCpuSecondsPerInstance).toBe(19.67);
    // Turn by turn: 120/100, 130/110, 125/105; 63/60, 69/66, 66/63.
    expect(three?.vsOnePerTurn).toEqual({ total: [1.2, 1.182, 1.19], neo4j: [1.05, 1.045, 1.048] });
    expect(one?.vsOnePerTurn.total).toEqual([1, 1, 1]);
    expect(accountingTable(rows)).toMatch(/total \/ one instance's\s+1\s+1\.19/);
  });
});
