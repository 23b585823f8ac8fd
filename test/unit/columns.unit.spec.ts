import { describe, expect, it } from "vitest";
import { ROWS_CLAUSE, rowsAsColumns, STRING_SEPARATOR } from "../../src/cypher/columns.js";

/** The rows a rewritten statement rebuilds, evaluated the way its list comprehensions do. */
function rebuiltRows(params: Readonly<Record<string, unknown>>, keys: readonly string[]) {
  const columns = params.row_columns as Record<string, unknown[]>;
  const strings = (params.row_strings ?? {}) as Record<string, string>;
  const split = Object.fromEntries(
    Object.entries(strings).map(([key, joined]) => [key, joined.split(params.row_separator as string)]),
  );
  return Array.from({ length: params.row_count as number }, (_, index) =>
    Object.fromEntries(keys.map((key) => [key, ((split[key] ?? columns[key]) as unknown[])[index]])),
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
        status: ["ok", null, "failed"],
        meta: [{ a: 1 }, { a: 2 }, null],
      },
      row_strings: { outcome_id: `o-1${STRING_SEPARATOR}o-2${STRING_SEPARATOR}o-3` },
      row_separator: STRING_SEPARATOR,
    });
    expect(rebuiltRows(sent.params, ["i", "outcome_id", "status", "meta"])).toEqual(rows);
    expect(sent.cypher).not.toContain("$rows");
    expect(sent.cypher).toContain(
      "UNWIND [row_strings IN [{`outcome_id`: split($row_strings.`outcome_id`, $row_separator)}] | [row_index IN range(0, $row_count - 1) | {`i`: $row_columns.`i`[row_index], `outcome_id`: row_strings.`outcome_id`[row_index], `status`: $row_columns.`status`[row_index], `meta`: $row_columns.`meta`[row_index]}]][0] AS row",
    );
    // Everything after the clause is the statement's own text.
    expect(sent.cypher.split(" AS row\n")[1]).toBe(STATEMENT.split(`${ROWS_CLAUSE}\n`)[1]);
  });

  it("sends a column of strings as one joined string, unless a value holds the separator", () => {
    const rows = [
      { i: 0, id: "", name: `a${STRING_SEPARATOR}b` },
      { i: 1, id: "é-𝄞", name: "c" },
      { i: 2, id: "", name: "d" },
    ];
    const sent = rowsAsColumns(STATEMENT, { rows });
    expect(sent.params.row_strings).toEqual({ id: `${STRING_SEPARATOR}é-𝄞${STRING_SEPARATOR}` });
    expect((sent.params.row_columns as Record<string, unknown>).name).toEqual([`a${STRING_SEPARATOR}b`, "c", "d"]);
    expect(rebuiltRows(sent.params, ["i", "id", "name"])).toEqual(rows);
  });

  it("lists every column when none is all strings, as before", () => {
    const sent = rowsAsColumns(STATEMENT, {
      rows: [
        { i: 0, s: null },
        { i: 1, s: "x" },
      ],
    });
    expect(sent.params).toEqual({ row_count: 2, row_columns: { i: [0, 1], s: [null, "x"] } });
    expect(sent.cypher).toContain("UNWIND [row_index IN range(0, $row_count - 1) | {");
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
    for (const clashing of [
      { rows, row_count: 7 },
      { rows, row_separator: "," },
      { rows, row_strings: {} },
    ])
      expect(rowsAsColumns(STATEMENT, clashing).params).toBe(clashing);
  });
});
