import neo4j, { type Driver } from "neo4j-driver";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createGraphWriter } from "../../src/adapters/neo4j/graph-writer.js";
import type { Statement } from "../../src/cypher/statement.js";
import { noopMetrics } from "../../src/ports.js";

// The writer sends a transaction's statements back to back. Neo4j runs a statement only as far as
// its answer has been asked for, so each must be pulled whole before the next one runs.
describe("a transaction's statements sent back to back", () => {
  const endpoints = inject("endpoints");
  const label = `WriterPipeline${Date.now()}`;
  let driver: Driver;

  beforeAll(() => {
    driver = neo4j.driver(endpoints.neo4jUri, neo4j.auth.basic(endpoints.neo4jUser, endpoints.neo4jPassword));
  });
  afterAll(async () => {
    await driver.executeQuery(`MATCH (n:${label}) DETACH DELETE n`);
    await driver.close();
  });

  it("each sees every write of those before it, however many rows they answer", async () => {
    const writer = createGraphWriter(driver, noopMetrics, 30_000, 2);
    const statements: Statement[] = [
      {
        name: "outcome",
        cypher: `UNWIND $rows AS row CREATE (n:${label} {i: row.i}) RETURN row.i AS i`,
        params: { rows: Array.from({ length: 3_500 }, (_, i) => ({ i })) },
      },
      { name: "3.3", cypher: `MATCH (n:${label}) RETURN count(n) AS seen`, params: { rows: [] } },
      {
        name: "3.4",
        cypher: `UNWIND $rows AS row MATCH (n:${label} {i: row.i}) SET n.second = true RETURN n.i AS i`,
        params: { rows: Array.from({ length: 2_500 }, (_, i) => ({ i })) },
      },
      { name: "findings", cypher: `MATCH (n:${label}) WHERE n.second RETURN count(n) AS seen`, params: { rows: [] } },
    ];
    const results = await writer.apply("neo4j", statements);
    expect(results.map((result) => result.name)).toEqual(["outcome", "3.3", "3.4", "findings"]);
    expect(results[0]?.records).toHaveLength(3_500);
    expect(Number(results[1]?.records[0]?.seen)).toBe(3_500);
    expect(results[2]?.records).toHaveLength(2_500);
    expect(Number(results[3]?.records[0]?.seen)).toBe(2_500);
  });

  it("a failing statement fails the transaction, and nothing of it stays", async () => {
    const writer = createGraphWriter(driver, noopMetrics, 30_000, 2);
    const failing: Statement[] = [
      { name: "outcome", cypher: `CREATE (n:${label} {failed: true}) RETURN 1 AS one`, params: { rows: [] } },
      { name: "3.3", cypher: "UNWIND [1, 0] AS d RETURN 1 / d AS x", params: { rows: [] } },
      { name: "3.4", cypher: `CREATE (n:${label} {failed: true}) RETURN 1 AS one`, params: { rows: [] } },
    ];
    await expect(writer.apply("neo4j", failing)).rejects.toThrow(/zero/i);
    const { records } = await driver.executeQuery(`MATCH (n:${label} {failed: true}) RETURN count(n) AS left`);
    expect(Number(records[0]?.get("left"))).toBe(0);
  });
});
