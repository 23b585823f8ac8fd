import neo4j from "neo4j-driver";
import { RESULTS_COLUMN } from "../../cypher/columns.js";

/**
 * Neo4j values to plain JSON-friendly values: integers to numbers, datetimes to epoch milliseconds,
 * nodes and relationships to their properties. The canonical dump and the report rely on this.
 */
export function toPlain(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  // Scalars first: most of what the §3 statements return is a flag per row, and each type check
  // below probes the value's properties (0.2 CPU-s of a full-log run, in a profile).
  if (typeof value !== "object") return value;
  if (neo4j.isInt(value)) return (value as neo4j.Integer).toNumber();
  if (neo4j.isDateTime(value)) return new Date((value as neo4j.DateTime).toString()).getTime();
  if (neo4j.isDate(value) || neo4j.isDuration(value) || neo4j.isLocalDateTime(value)) return String(value);
  if (Array.isArray(value)) return value.map(toPlain);
  if (neo4j.isNode(value) || neo4j.isRelationship(value)) return toPlain((value as neo4j.Node).properties);
  const plain: Record<string, unknown> = {};
  for (const key of Object.keys(value)) plain[key] = toPlain((value as Record<string, unknown>)[key]);
  return plain;
}

/** A result record as a plain object of its fields (toPlain of each), without the driver's toObject copy. */
export function plainRecord(record: neo4j.Record): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  record.keys.forEach((key, index) => {
    plain[key as string] = toPlain(record.get(index));
  });
  return plain;
}

/** A statement's rows sent back as one list (cypher/columns.ts), as plain objects of `keys`. */
export function plainRows(records: readonly neo4j.Record[], keys: readonly string[]): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const record of records) {
    for (const values of record.get(RESULTS_COLUMN) as unknown[][]) {
      const row: Record<string, unknown> = {};
      keys.forEach((key, index) => {
        row[key] = toPlain(values[index]);
      });
      rows.push(row);
    }
  }
  return rows;
}

/**
 * Neo4j's own time on a statement, from its result summary: until the first row was available plus
 * until the last was consumed (ms). Undefined when the server did not say.
 */
export function serverMs(summary: { resultAvailableAfter: unknown; resultConsumedAfter: unknown }): number | undefined {
  const available = toPlain(summary.resultAvailableAfter);
  const consumed = toPlain(summary.resultConsumedAfter);
  if (typeof available !== "number" || typeof consumed !== "number") return undefined;
  if (available < 0 || consumed < 0) return undefined;
  return available + consumed;
}
