import neo4j, { type Driver } from "neo4j-driver";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createGraphWriter, RETRY_BUDGET_MS, SILENCE_GRACE_MS } from "../../src/adapters/neo4j/graph-writer.js";
import type { Statement } from "../../src/cypher/statement.js";
import { classify } from "../../src/errors.js";
import { noopMetrics } from "../../src/ports.js";
import { LoopbackProxy } from "../support/tcp-proxy.js";

const statement = (name: Statement["name"], comment: string): Statement => ({
  name,
  cypher: `UNWIND $rows AS row RETURN row.i AS i // ${comment}`,
  params: { rows: [{ i: 0 }] },
});

describe("a Neo4j connection that goes silent mid-transaction", () => {
  const endpoints = inject("endpoints");
  const target = new URL(endpoints.neo4jUri.replace(/^[a-z+]+:/, "http:"));
  const proxy = new LoopbackProxy(target.hostname, Number(target.port));
  let driver: Driver;
  const txTimeoutMs = 1_000;

  beforeAll(async () => {
    const port = await proxy.listen();
    driver = neo4j.driver(`bolt://127.0.0.1:${port}`, neo4j.auth.basic(endpoints.neo4jUser, endpoints.neo4jPassword));
  });
  afterAll(async () => {
    await proxy.close();
    await driver?.close();
  });

  it("fails the write within the documented bound, as transient, and writes again on a new connection", async () => {
    const writer = createGraphWriter(driver, noopMetrics, txTimeoutMs);
    expect(await writer.apply("neo4j", [statement("outcome", "healthy")])).toHaveLength(1);

    // The transaction's first statement is answered; the path goes silent as the second is sent.
    proxy.silenceAt("the-path-goes-silent-here");
    const started = Date.now();
    const settled = await Promise.race([
      writer.apply("neo4j", [statement("outcome", "first"), statement("3.3", "the-path-goes-silent-here")]).then(
        () => ({ kind: "applied" as const }),
        (error: unknown) => ({ kind: "failed" as const, error }),
      ),
      new Promise<{ kind: "hung" }>((resolve) => setTimeout(() => resolve({ kind: "hung" }), 45_000)),
    ]);
    const elapsedMs = Date.now() - started;
    expect(settled.kind).toBe("failed");
    if (settled.kind !== "failed") return;
    expect(classify(settled.error)).toBe("transient");
    expect(String(settled.error)).toContain("no answer");
    // Each attempt is bounded by NEO4J_TX_TIMEOUT_MS + SILENCE_GRACE_MS, and the writer starts no attempt
    // past its retry budget: two or three silent attempts (the backoff is jittered) before it gives the
    // failure back, never a hang.
    expect(elapsedMs).toBeLessThan(RETRY_BUDGET_MS + (txTimeoutMs + SILENCE_GRACE_MS) + 3_000);
    // The silent connections were dropped, not left open in the pool.
    expect(proxy.closedByClient).toBeGreaterThanOrEqual(1);

    proxy.resume();
    expect(await writer.apply("neo4j", [statement("outcome", "after")])).toHaveLength(1);
  });
});
