import { DUMP_NODES, DUMP_RELATIONSHIPS, NODE_KEYS, type NodeLabel } from "../../cypher/dump.js";
import {
  type CanonicalGraph,
  canonicalize,
  type DumpNode,
  type DumpRelationship,
  keyOf,
  nodeRef,
  type Properties,
} from "../../model/graph.js";
import type { GraphWriter } from "../../ports.js";

const LABELS = Object.keys(NODE_KEYS) as NodeLabel[];

function labelOf(labels: unknown): NodeLabel {
  const found = LABELS.find((label) => (labels as string[]).includes(label));
  if (!found) throw new Error(`node with labels ${JSON.stringify(labels)} is not a projected node`);
  return found;
}

/**
 * The event-time judge's mark on an observation (cypher/event-time-judge.ts) says what is still to be
 * judged, and an agent's `history_floor` how far its registry history was compacted
 * (cypher/registry-history.ts), not what was projected: the same log leaves the same graph whether a
 * round or a compaction has run yet.
 */
function withoutBookkeeping(props: Properties): Properties {
  if (!("unjudged" in props) && !("history_floor" in props)) return props;
  const { unjudged: _, history_floor: __, ...rest } = props;
  return rest;
}

/** Reads the projected graph of one database as a canonical graph. */
export async function dumpGraph(graph: GraphWriter, database: string): Promise<CanonicalGraph> {
  const nodes: DumpNode[] = (await graph.read(database, DUMP_NODES)).map((row) => ({
    label: labelOf(row.labels),
    props: withoutBookkeeping(row.props as Properties),
  }));
  const rels: DumpRelationship[] = (await graph.read(database, DUMP_RELATIONSHIPS)).map((row) => {
    const fromLabel = labelOf(row.from_labels);
    const toLabel = labelOf(row.to_labels);
    return {
      type: String(row.type),
      from: nodeRef(fromLabel, keyOf(fromLabel, row.from_props as Properties)),
      to: nodeRef(toLabel, keyOf(toLabel, row.to_props as Properties)),
      props: withoutBookkeeping(row.props as Properties),
    };
  });
  return canonicalize(nodes, rels);
}
