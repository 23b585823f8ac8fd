import type { CanonicalGraph, PropertyValue } from "../../src/model/graph.js";

/** Reads a canonical graph back for assertions: nodes by `Label:key`, relationships by type and ends. */
export class GraphView {
  private readonly nodes = new Map<string, Record<string, PropertyValue>>();
  private readonly rels = new Map<string, Record<string, PropertyValue>[]>();

  constructor(readonly graph: CanonicalGraph) {
    for (const line of graph.nodes) {
      const space = line.indexOf(" ");
      this.nodes.set(line.slice(0, space), JSON.parse(line.slice(space + 1)));
    }
    for (const line of graph.relationships) {
      const match = /^(\S+) -\[(\w+)\]-> (\S+) (.*)$/.exec(line);
      if (!match) throw new Error(`unreadable relationship line: ${line}`);
      const [, from, type, to, props] = match;
      const key = `${from} ${type} ${to}`;
      this.rels.set(key, [...(this.rels.get(key) ?? []), JSON.parse(props as string)]);
    }
  }

  node(label: string, key: string): Record<string, PropertyValue> | undefined {
    return this.nodes.get(`${label}:${key}`);
  }

  nodeKeys(label: string): string[] {
    return [...this.nodes.keys()]
      .filter((ref) => ref.startsWith(`${label}:`))
      .map((ref) => ref.slice(label.length + 1));
  }

  /** All copies of one relationship; more than one means a duplicate was written. */
  rel(type: string, from: string, to: string): Record<string, PropertyValue>[] {
    const fromRef = from.includes(":") ? from : `Agent:${from}`;
    const toRef = to.includes(":")
      ? to
      : type === "AUTHORIZED_FOR"
        ? `Tool:${to}`
        : type === "OWNS_WORKFLOW"
          ? `Workflow:${to}`
          : `Agent:${to}`;
    return this.rels.get(`${fromRef} ${type} ${toRef}`) ?? [];
  }

  count(type: string): number {
    let n = 0;
    for (const [key, copies] of this.rels) if (key.split(" ")[1] === type) n += copies.length;
    return n;
  }
}
