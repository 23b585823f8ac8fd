import neo4j, { type Driver } from "neo4j-driver";
import { describe, expect, it, vi } from "vitest";
import { createGraphWriter, SILENCE_GRACE_MS } from "../../src/adapters/neo4j/graph-writer.js";
import type { Statement } from "../../src/cypher/statement.js";
import { noopMetrics } from "../../src/ports.js";

const coded = (code: string) => Object.assign(new Error(code), { code });

/**
 * A driver whose write transactions run `attempt(n, cypher)` for each statement of the n-th
 * transaction (1-based): it throws to fail the transaction, may advance the fake clock by the
 * attempt's duration, and may return the statement's records. `ran` holds each transaction's Cypher.
 */
function fakeDriver(attempt: (n: number, cypher: string) => unknown) {
  let transactions = 0;
  let commits = 0;
  const ran: string[][] = [];
  const session = () => ({
    beginTransaction: async () => {
      const n = ++transactions;
      const mine: string[] = [];
      ran.push(mine);
      let open = true;
      return {
        run: async (cypher: string) => {
          mine.push(cypher);
          const returned = attempt(n, cypher);
          const records: Record<string, unknown>[] = Array.isArray(returned) ? returned : [];
          return {
            records: records.map((record) => new neo4j.Record(Object.keys(record), Object.values(record))),
            summary: { counters: { updates: () => counters } },
          };
        },
        commit: async () => {
          commits++;
          open = false;
        },
        rollback: async () => {
          open = false;
        },
        isOpen: () => open,
      };
    },
    close: async () => {},
  });
  return {
    driver: { session } as unknown as Driver,
    transactions: () => transactions,
    commits: () => commits,
    ran,
  };
}

const counters = {
  nodesCreated: 1,
  nodesDeleted: 0,
  relationshipsCreated: 0,
  relationshipsDeleted: 0,
  propertiesSet: 2,
};
const statements: Statement[] = [{ name: "outcome", cypher: "UNWIND $rows AS row RETURN row", params: { rows: [] } }];

function timing() {
  let now = 0;
  const waits: number[] = [];
  return {
    waits,
    advance: (ms: number) => {
      now += ms;
    },
    clock: { now: () => now },
    sleep: async (ms: number) => {
      waits.push(ms);
      now += ms;
    },
    random: () => 0.5,
  };
}

describe("the graph writer's retries", () => {
  it("retries a transient failure after a backoff from the failed attempt's duration, and counts it", async () => {
    const time = timing();
    const { driver, transactions } = fakeDriver((n) => {
      time.advance(300);
      if (n < 3) throw coded("Neo.TransientError.Transaction.DeadlockDetected");
    });
    const retries: string[] = [];
    const metrics = {
      ...noopMetrics,
      recordTransactionRetry: (pattern: string, reason: string) => void retries.push(`${pattern} ${reason}`),
    };
    const graph = createGraphWriter(driver, metrics, 60_000, Number.POSITIVE_INFINITY, time);
    const results = await graph.apply("neo4j", statements);
    expect(results).toEqual([{ name: "outcome", records: [], counters }]);
    expect(transactions()).toBe(3);
    expect(time.waits).toEqual([300, 600]);
    expect(retries).toEqual(["outcome DeadlockDetected", "outcome DeadlockDetected"]);
  });

  it("retries what the service classifies as transient, not only what the driver would", async () => {
    const time = timing();
    const { driver, transactions } = fakeDriver((n) => {
      if (n === 1) throw coded("Neo.ClientError.Cluster.NotALeader");
    });
    await createGraphWriter(driver, noopMetrics, 60_000, Number.POSITIVE_INFINITY, time).apply("neo4j", statements);
    expect(transactions()).toBe(2);
  });

  it("hands rejected, fatal and unrecognised failures to the caller at once", async () => {
    for (const error of [
      coded("Neo.ClientError.Schema.ConstraintValidationFailed"),
      coded("Neo.ClientError.Security.Unauthorized"),
      new Error("something nobody foresaw"),
    ]) {
      const time = timing();
      const { driver, transactions } = fakeDriver(() => {
        throw error;
      });
      const graph = createGraphWriter(driver, noopMetrics, 60_000, Number.POSITIVE_INFINITY, time);
      await expect(graph.apply("neo4j", statements)).rejects.toBe(error);
      expect(transactions()).toBe(1);
      expect(time.waits).toEqual([]);
    }
  });

  it("gives up once the next wait would pass the 15 s budget, leaving the pause to the caller", async () => {
    const time = timing();
    const error = coded("ServiceUnavailable");
    const { driver, transactions } = fakeDriver(() => {
      time.advance(1_000);
      throw error;
    });
    const graph = createGraphWriter(driver, noopMetrics, 60_000, Number.POSITIVE_INFINITY, time);
    await expect(graph.apply("neo4j", statements)).rejects.toBe(error);
    // Attempts of 1 s each, waits of 1 s then 2 s (the cap): 1+1, 1+2, 1+2, 1+2, 1+2 → 13 s, then
    // one more attempt reaches 14 s and a further 2 s wait would pass 15 s.
    expect(time.waits).toEqual([1_000, 2_000, 2_000, 2_000, 2_000]);
    expect(transactions()).toBe(6);
    expect(time.clock.now()).toBe(15_000);
  });

  it("retries reads by the same rule, without counting them as write retries", async () => {
    const time = timing();
    const { driver, transactions } = fakeDriver((n) => {
      if (n === 1) throw coded("SessionExpired");
    });
    let retries = 0;
    const metrics = { ...noopMetrics, recordTransactionRetry: () => void retries++ };
    const graph = createGraphWriter(driver, metrics, 60_000, Number.POSITIVE_INFINITY, time);
    expect(await graph.read("neo4j", "RETURN 1")).toEqual([]);
    expect(transactions()).toBe(2);
    expect(time.waits).toEqual([25]);
    expect(retries).toBe(0);
  });
});

describe("the graph writer's bounds", () => {
  it("a session whose close is never answered does not hold the batch: the write resolves after the grace", async () => {
    vi.useFakeTimers();
    try {
      const { driver } = fakeDriver(() => {});
      const session = driver.session;
      const stuck = (() => ({
        ...session(),
        close: () => new Promise<void>(() => {}),
      })) as unknown as Driver["session"];
      const graph = createGraphWriter({ session: stuck } as unknown as Driver, noopMetrics, 60_000, 1, timing());
      let settled = false;
      const applied = graph.apply("neo4j", statements).finally(() => {
        settled = true;
      });
      await vi.advanceTimersByTimeAsync(SILENCE_GRACE_MS - 1);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await expect(applied).resolves.toEqual([{ name: "outcome", records: [], counters }]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("the graph writer's follow-up statements", () => {
  it("run after the others in the same transaction, derived from that attempt's results, again on a retry", async () => {
    const { driver, ran } = fakeDriver((n, cypher) => {
      if (n === 1 && cypher === "FOLLOW-UP") throw coded("Neo.TransientError.Transaction.DeadlockDetected");
      return [{ attempt: n }];
    });
    const graph = createGraphWriter(driver, noopMetrics, 60_000, Number.POSITIVE_INFINITY, timing());
    const seen: unknown[] = [];
    const results = await graph.apply("neo4j", statements, (earlier) => {
      seen.push(earlier.map((result) => result.records[0]?.attempt));
      return [{ name: "findings", cypher: "FOLLOW-UP", params: { rows: [] } }];
    });
    expect(ran).toEqual([
      [statements[0]?.cypher, "FOLLOW-UP"],
      [statements[0]?.cypher, "FOLLOW-UP"],
    ]);
    expect(seen).toEqual([[1], [2]]);
    expect(results.map((result) => result.name)).toEqual(["outcome", "findings"]);
  });

  it("a statement's followedBy runs right after it, in the same transaction, decided by its own result", async () => {
    const { driver, ran: transactions, commits } = fakeDriver((_n, cypher) => [{ cypher }]);
    const graph = createGraphWriter(driver, noopMetrics, 60_000, Number.POSITIVE_INFINITY, timing());
    const heard: unknown[] = [];
    const results = await graph.apply("neo4j", statements, () => [
      {
        name: "reachability",
        cypher: "AFTER",
        params: { rows: [] },
        followedBy: (after) => {
          heard.push(after.records[0]?.cypher);
          return [
            {
              name: "reachability",
              cypher: "TARGETS",
              params: { rows: [] },
              followedBy: (targets) => {
                heard.push(targets.records[0]?.cypher);
                return [{ name: "findings", cypher: "FINDINGS", params: { rows: [] } }];
              },
            },
          ];
        },
      },
    ]);
    const ran = transactions.flat();
    expect(ran).toEqual([statements[0]?.cypher, "AFTER", "TARGETS", "FINDINGS"]);
    expect(heard).toEqual(["AFTER", "TARGETS"]);
    expect(commits()).toBe(1);
    expect(results.map((result) => result.name)).toEqual(["outcome", "reachability", "reachability", "findings"]);
  });
});
