import Table from "cli-table3";

/** People get aligned tables; scripts pass --json and get one JSON document on stdout. */
export function printRows(
  rows: readonly Record<string, unknown>[],
  options: { json?: boolean; title?: string; empty?: string },
): void {
  if (options.json) {
    printDocument(rows);
    return;
  }
  if (options.title) process.stdout.write(`\n${options.title}\n`);
  if (rows.length === 0) {
    process.stdout.write(`  ${options.empty ?? "(none)"}\n`);
    return;
  }
  const head = Object.keys(rows[0] as object);
  const table = new Table({ head, style: { head: [], border: [], compact: true } });
  for (const row of rows) table.push(head.map((key) => formatCell(row[key])));
  process.stdout.write(`${table.toString()}\n`);
}

/** A command's whole result as the one JSON document `--json` promises. */
export function printDocument(document: unknown): void {
  process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
}

function formatCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number" && value > 1e12 && value < 1e14) return new Date(value).toISOString();
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}
