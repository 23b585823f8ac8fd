/**
 * Tenant scoping. The spec makes ids unique within a tenant; with one tenant per database (the
 * default) the statements are the spec's, keyed by the id alone. When several tenants share a
 * database, every node carries `tenant_id` and every MERGE/MATCH key starts with it — the one change
 * the `${…}` marks in the statements make — and §6's constraints become composite ones.
 *
 * `scopedKey(scoped, expr)` is the `tenant_id: <expr>, ` that opens a node key in that case, and
 * nothing otherwise; `expr` is always a parameter or a property already bound, never a literal.
 */
export function scopedKey(scoped: boolean, expr: string): string {
  return scoped ? `tenant_id: ${expr}, ` : "";
}

/**
 * `USING INDEX SEEK` on the §6 index behind a key MATCH (composite with the tenant where scoped). Neo4j
 * plans from its index samples, and the sample taken when §6 created the index on an empty graph says
 * every seek finds nothing until the background resample. A plan compiled in that window costs every
 * choice at zero rows and may pick a scan of the whole index once per row instead of a seek — seen
 * for §3.4's target outcome (test/int/query-plans.int.spec.ts), which turns a batch into minutes
 * holding its locks — and stays cached until Neo4j replans. The hint leaves the seek as the only plan.
 */
export function keyIndex(scoped: boolean, variable: string, label: string, property: string): string {
  return `USING INDEX SEEK ${variable}:${label}(${scoped ? "tenant_id, " : ""}${property})`;
}
