import { NODE_KEYS, type NodeLabel } from "../cypher/dump.js";

/** Property values as the canonical dump holds them: datetimes as epoch millis, integers as numbers. */
export type PropertyValue = string | number | boolean;
export type Properties = Readonly<Record<string, PropertyValue>>;

export interface DumpNode {
  readonly label: NodeLabel;
  readonly props: Properties;
}

export interface DumpRelationship {
  readonly type: string;
  readonly from: string;
  readonly to: string;
  readonly props: Properties;
}

/** A graph as sorted lines, so two graphs compare with a plain diff. */
export interface CanonicalGraph {
  readonly nodes: readonly string[];
  readonly relationships: readonly string[];
}

export function nodeRef(label: NodeLabel, key: string): string {
  return `${label}:${key}`;
}

/** A node's key: its id, preceded by its tenant where several tenants share the database. */
export function keyOf(label: NodeLabel, props: Properties): string {
  const id = String(props[NODE_KEYS[label]]);
  return props.tenant_id === undefined ? id : `${String(props.tenant_id)}/${id}`;
}

export function canonicalize(nodes: readonly DumpNode[], relationships: readonly DumpRelationship[]): CanonicalGraph {
  return {
    nodes: nodes
      .map((node) => `${nodeRef(node.label, keyOf(node.label, node.props))} ${stableJson(node.props)}`)
      .sort(),
    relationships: relationships.map((rel) => `${rel.from} -[${rel.type}]-> ${rel.to} ${stableJson(rel.props)}`).sort(),
  };
}

/** The first lines that differ between two canonical graphs, for a readable test failure. */
export function diffGraphs(expected: CanonicalGraph, actual: CanonicalGraph, limit = 20): string[] {
  const out: string[] = [];
  for (const part of ["nodes", "relationships"] as const) {
    const want = new Set(expected[part]);
    const have = new Set(actual[part]);
    for (const line of expected[part]) if (!have.has(line)) out.push(`- ${line}`);
    for (const line of actual[part]) if (!want.has(line)) out.push(`+ ${line}`);
  }
  return out.slice(0, limit);
}

function stableJson(props: Properties): string {
  return JSON.stringify(Object.fromEntries(Object.entries(props).sort(([a], [b]) => (a < b ? -1 : 1))));
}
