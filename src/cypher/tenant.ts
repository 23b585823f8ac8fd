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
