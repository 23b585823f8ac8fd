import { describe, expect, it } from "vitest";
import { ROWS_CLAUSE, rowsAsColumns } from "../../src/cypher/columns.js";

/** The rows a rewritten statement rebuilds, evaluated the way its list comprehension does. */
function rebuiltRows(params: Readonly<Record<string, unknown>>, keys: readonly string[]) {
  const columns = params.row_columns as Record<string, unknown[]>;
  return Array.from({ length: params.row_count as number }, (_, index) =>
    Object.fromEntries(keys.map((key) => [key, (columns[key] as unknown[])[index]])),
  );
}

const STATEMENT = `
${ROWS_CLAUSE}
MERGE (o:Outcome {outcome_id: row.outcome_id})
SET o.status = row.status
RETURN row.i AS i
`;

describe("rows sent as columns", () => {
  it("sends one list per key and rebuilds the same rows before the statement's own clauses", () => {
    const rows = [
      { i: 0, outcome_id: "o-1", status: "ok", meta: { a: 1 } },
      { i: 1, outcome_id: "o-2", status: null, meta: { a: 2 } },
      { i: 2, outcome_id: "o-3", status: "failed", meta: null },
    ];
    const sent = rowsAsColumns(STATEMENT, { rows, terminal_ids: ["t"] });
    expect(sent.params).toEqual({
      terminal_ids: ["t"],
      row_count: 3,
      row_columns: {
        i: [0, 1, 2],
        outcome_id: ["o-1", "o-2", "o-3"],
        status: ["ok", null, "failed"],
        meta: [{ a: 1 }, { a: 2 }, null],
      },
    });
    expect(rebuiltRows(sent.params, ["i", "outcome_id", "status", "meta"])).toEqual(rows);
    expect(sent.cypher).not.toContain("$rows");
    expect(sent.cypher).toContain(
      "UNWIND [row_index IN range(0, $row_count - 1) | {`i`: $row_columns.`i`[row_index], `outcome_id`: $row_columns.`outcome_id`[row_index], `status`: $row_columns.`status`[row_index], `meta`: $row_columns.`meta`[row_index]}] AS row",
    );
    // Everything after the clause is the statement's own text.
    expect(sent.cypher.split(" AS row\n")[1]).toBe(STATEMENT.split(`${ROWS_CLAUSE}\n`)[1]);
  });

  it("keeps one rewritten text per statement and key set", () => {
    const a = rowsAsColumns(STATEMENT, { rows: [{ x: 1 }, { x: 2 }] });
    const b = rowsAsColumns(STATEMENT, { rows: [{ x: 3 }, { x: 4 }, { x: 5 }] });
    expect(a.cypher).toBe(b.cypher);
    expect(rowsAsColumns(STATEMENT, { rows: [{ y: 1 }, { y: 2 }] }).cypher).not.toBe(a.cypher);
  });

  it.each([
    ["a single row", [{ i: 0 }]],
    ["no rows", []],
    [
      "rows of differing keys",
      [
        { i: 0, a: 1 },
        { i: 1, b: 1 },
      ],
    ],
    ["a row with a key fewer", [{ i: 0, a: 1 }, { i: 1 }]],
    ["a row with a key more", [{ i: 0 }, { i: 1, a: 1 }]],
    [
      "an undefined value (a key a map would leave out)",
      [
        { i: 0, a: 1 },
        { i: 1, a: undefined },
      ],
    ],
    ["a key that is not a plain identifier", [{ "a`b": 1 }, { "a`b": 2 }]],
    ["rows without keys", [{}, {}]],
  ])("sends %s as it is", (_name, rows) => {
    const params = { rows };
    expect(rowsAsColumns(STATEMENT, params)).toEqual({ cypher: STATEMENT, params });
  });

  it("leaves a statement that reads $rows elsewhere, or not through the clause, as it is", () => {
    const rows = [{ i: 0 }, { i: 1 }];
    for (const cypher of [`${STATEMENT}\nWITH size($rows) AS n RETURN n`, "UNWIND $rows AS r RETURN r.i"]) {
      expect(rowsAsColumns(cypher, { rows }).cypher).toBe(cypher);
    }
    const clashing = { rows, row_count: 7 };
    expect(rowsAsColumns(STATEMENT, clashing).params).toBe(clashing);
  });
});
