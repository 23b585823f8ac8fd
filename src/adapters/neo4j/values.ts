import neo4j from "neo4j-driver";

/**
 * Neo4j values to plain JSON-friendly values: integers to numbers, datetimes to epoch milliseconds,
 * nodes and relationships to their properties. The canonical dump and the report rely on this.
 */
export function toPlain(value: unknown): unknown {
  if (value === null || value === undefined) return value ?? null;
  if (neo4j.isInt(value)) return (value as neo4j.Integer).toNumber();
  if (neo4j.isDateTime(value as object)) return new Date((value as neo4j.DateTime).toString()).getTime();
  if (neo4j.isDate(value as object) || neo4j.isDuration(value as object) || neo4j.isLocalDateTime(value as object)) {
    return String(value);
  }
  if (Array.isArray(value)) return value.map(toPlain);
  if (neo4j.isNode(value as object) || neo4j.isRelationship(value as object)) {
    return toPlain((value as neo4j.Node).properties);
  }
  if (typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, toPlain(v)]));
  }
  return value;
}
