import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { plainRows } from "../../src/adapters/neo4j/values.js";
import { ROWS_CLAUSE, rowsAsColumns, STRING_SEPARATOR } from "../../src/cypher/columns.js";
import { Harness, testEnv } from "../support/harness.js";

/**
 * Rows sent as columns (cypher/columns.ts) are rebuilt by Neo4j itself: the rows a statement sees are
 * the rows the service built, whatever the strings hold — empty ones at either end of a joined column
 * (which a split dropping trailing empties would lose), characters outside the BMP, the separator
 * itself (that column travels as a list), and nulls. The rows come back as one record
 * (`resultsAsOneRecord`) and are read back as the same rows.
 */
describe("rows sent as columns, rebuilt by Neo4j", () => {
  let harness: Harness;
  beforeAll(() => {
    harness = new Harness(testEnv("columns"));
  });
  afterAll(async () => {
    await harness?.close();
  });

  const echo = `${ROWS_CLAUSE}\nRETURN row {.*} AS row`;
  const cases: [string, Record<string, unknown>[]][] = [
    [
      "ids, statuses and counts",
      Array.from({ length: 2_000 }, (_, i) => ({
        i,
        outcome_id: `outcome-${i}`,
        status: i % 3 === 0 ? "failed" : "ok",
        correlation_id: i % 7 === 0 ? null : `c-${i}`,
      })),
    ],
    [
      "empty strings first and last, and a column of nothing but empty strings",
      [
        { i: 0, a: "", b: "" },
        { i: 1, a: "x", b: "" },
        { i: 2, a: "", b: "" },
      ],
    ],
    [
      "characters outside the BMP, and the separator inside a value",
      [
        { i: 0, a: "é-𝄞-漢", b: `left${STRING_SEPARATOR}right` },
        { i: 1, a: "🙂", b: "plain" },
      ],
    ],
  ];

  it("returns a row for every row, nulls included, and none for a row the statement ends", async () => {
    const rows = [
      { i: 0, c: null },
      { i: 1, c: "x" },
      { i: 2, c: null },
    ];
    const sent = rowsAsColumns(
      `${ROWS_CLAUSE}\nWITH row WHERE row.i <> 1\nRETURN row.i AS i, row.c AS c, null AS nothing`,
      {
        rows,
      },
    );
    const { records } = await harness.driver.executeQuery(sent.cypher, sent.params);
    expect(plainRows(records, sent.resultKeys ?? [])).toEqual([
      { i: 0, c: null, nothing: null },
      { i: 2, c: null, nothing: null },
    ]);
  });

  it.each(cases)("%s", async (_name, rows) => {
    const sent = rowsAsColumns(echo, { rows });
    expect(Object.keys(sent.params.row_strings as object).length).toBeGreaterThan(0);
    expect(sent.resultKeys).toEqual(["row"]);
    const { records } = await harness.driver.executeQuery(sent.cypher, sent.params);
    expect(records).toHaveLength(1);
    expect(plainRows(records, ["row"]).map((result) => result.row)).toEqual(rows);
  });
});
