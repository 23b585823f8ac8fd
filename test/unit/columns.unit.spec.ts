import { describe, expect, it } from "vitest";
import {
  RESULTS_COLUMN,
  ROWS_CLAUSE,
  resultsAsOneRecord,
  rowsAsColumns,
  STRING_SEPARATOR,
} from "../../src/cypher/columns.js";
import { OUTCOME_WITH_PRODUCED } from "../../src/cypher/s3_3-produced.js";
import { ESCALATION } from "../../src/cypher/s3_4-escalation-observed.js";

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

// No RETURN: what a statement returns is rewritten on its own (below).
const STATEMENT = `
${ROWS_CLAUSE}
MERGE (o:Outcome {outcome_id: row.outcome_id})
SET o.status = row.status
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

describe("rows returned as one record", () => {
  it("collects the final RETURN's items, one list per row, and names their keys", () => {
    const statement = `${ROWS_CLAUSE}
MATCH (o:Outcome {outcome_id: row.outcome_id})
CALL (o) {
  RETURN count(*) AS n
}
RETURN row.i AS i, o.agent_id = row.agent_id AS current,
       n, [x IN [1, 2] | x * 2] AS doubled, {a: 1, b: 'x, y'} AS map`;
    const rows = [
      { i: 0, outcome_id: "o-1", agent_id: "a-1" },
      { i: 1, outcome_id: "o-2", agent_id: "a-2" },
    ];
    const sent = rowsAsColumns(statement, { rows });
    expect(sent.resultKeys).toEqual(["i", "current", "n", "doubled", "map"]);
    expect(sent.cypher).toContain(
      "\nWITH row.i AS i, o.agent_id = row.agent_id AS current,\n       n, [x IN [1, 2] | x * 2] AS doubled, {a: 1, b: 'x, y'} AS map\n" +
        `RETURN collect([i, current, n, doubled, map]) AS ${RESULTS_COLUMN}\n`,
    );
    // The subquery's own RETURN and everything before the final one are the statement's text.
    expect(sent.cypher).toContain("CALL (o) {\n  RETURN count(*) AS n\n}");
    // Rows sent as columns too.
    expect(sent.params.row_count).toBe(2);
  });

  it("rewrites the §3 statements that report a row's fate", () => {
    expect(resultsAsOneRecord(OUTCOME_WITH_PRODUCED)?.keys).toEqual(["i", "existed"]);
    expect(resultsAsOneRecord(ESCALATION)?.keys).toEqual([
      "i",
      "produced",
      "same_agent",
      "already_counted",
      "from_agent",
      "to_agent",
      "observed_count",
      "declared",
    ]);
  });

  it.each([
    ["an aggregate", `${ROWS_CLAUSE}\nRETURN count(row) AS n`],
    ["DISTINCT", `${ROWS_CLAUSE}\nRETURN DISTINCT row.i AS i`],
    ["ORDER BY", `${ROWS_CLAUSE}\nRETURN row.i AS i ORDER BY i`],
    ["LIMIT", `${ROWS_CLAUSE}\nRETURN row.i AS i LIMIT 3`],
    ["an unnamed expression", `${ROWS_CLAUSE}\nRETURN row.i`],
    ["a name twice", `${ROWS_CLAUSE}\nRETURN row.i AS i, row.j AS i`],
    ["no RETURN", STATEMENT],
    ["no rows clause", "MATCH (n) RETURN n.id AS id"],
  ])("leaves a statement with %s as it is", (_name, statement) => {
    expect(resultsAsOneRecord(statement)).toBeUndefined();
    const sent = rowsAsColumns(statement, { rows: [{ i: 0 }] });
    expect(sent).toEqual({ cypher: statement, params: { rows: [{ i: 0 }] } });
  });
});
