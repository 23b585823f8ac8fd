/**
 * What a left-behind graph gets wrong against the reference model (test/support/reference-model.ts),
 * counted the way a reader of §4's queries would notice: missing PRODUCED, missing observations (the
 * :OBSERVED markers and the ESCALATED_TO edges behind them), CAN_ESCALATE_TO with a wrong
 * `observed_count` or a wrong `declared`, and every other differing line of the canonical dump.
 */
import type { CanonicalGraph } from "../../src/model/graph.js";

export interface GraphErrors {
  readonly missingProduced: number;
  readonly missingObserved: number;
  readonly missingEscalatedTo: number;
  readonly wrongObservedCount: number;
  readonly wrongDeclared: number;
  /** Differing canonical lines not counted above (nodes and relationships, missing or extra). */
  readonly otherDifferences: number;
  /** Lines of the expected graph, for scale. */
  readonly expectedNodes: number;
  readonly expectedRelationships: number;
  readonly examples: string[];
}

const REL = /^(\S+) -\[(\w+)\]-> (\S+) (\{.*\})$/;

interface Rel {
  readonly key: string;
  readonly type: string;
  readonly props: Record<string, unknown>;
  readonly line: string;
}

function parse(lines: readonly string[]): Map<string, Rel> {
  const out = new Map<string, Rel>();
  for (const line of lines) {
    const m = REL.exec(line);
    if (!m) throw new Error(`unexpected relationship line: ${line.slice(0, 200)}`);
    const [, from, type, to, json] = m as unknown as [string, string, string, string, string];
    out.set(`${from} ${type} ${to}`, { key: `${from} ${type} ${to}`, type, props: JSON.parse(json), line });
  }
  return out;
}

export function compareGraphs(expected: CanonicalGraph, actual: CanonicalGraph): GraphErrors {
  const want = parse(expected.relationships);
  const have = parse(actual.relationships);
  let missingProduced = 0;
  let missingObserved = 0;
  let missingEscalatedTo = 0;
  let wrongObservedCount = 0;
  let wrongDeclared = 0;
  let otherDifferences = 0;
  const examples: string[] = [];
  const note = (line: string) => {
    if (examples.length < 8) examples.push(line);
  };
  for (const [key, rel] of want) {
    const got = have.get(key);
    if (rel.type === "PRODUCED" && !got) {
      missingProduced += 1;
      note(`missing ${rel.line}`);
    } else if (rel.type === "OBSERVED" && !got) {
      missingObserved += 1;
      note(`missing ${rel.line}`);
    } else if (rel.type === "ESCALATED_TO" && !got) {
      missingEscalatedTo += 1;
      note(`missing ${rel.line}`);
    } else if (rel.type === "CAN_ESCALATE_TO") {
      const count = got?.props.observed_count ?? 0;
      const declared = got?.props.declared ?? false;
      if (count !== rel.props.observed_count) {
        wrongObservedCount += 1;
        note(`observed_count ${String(count)} instead of ${String(rel.props.observed_count)}: ${key}`);
      }
      if (declared !== rel.props.declared) {
        wrongDeclared += 1;
        note(`declared ${String(declared)} instead of ${String(rel.props.declared)}: ${key}`);
      }
    } else if (!got || got.line !== rel.line) {
      otherDifferences += 1;
      note(got ? `differs: ${got.line} (expected ${rel.line})` : `missing ${rel.line}`);
    }
  }
  for (const [key, rel] of have) {
    if (want.has(key)) continue;
    if (rel.type === "CAN_ESCALATE_TO") {
      // An edge the reference does not have: wrong in whichever property it carries.
      if ((rel.props.observed_count ?? 0) !== 0) wrongObservedCount += 1;
      if (rel.props.declared === true) wrongDeclared += 1;
      if ((rel.props.observed_count ?? 0) === 0 && rel.props.declared !== true) otherDifferences += 1;
    } else otherDifferences += 1;
    note(`extra ${rel.line}`);
  }
  const wantNodes = new Set(expected.nodes);
  const haveNodes = new Set(actual.nodes);
  for (const line of expected.nodes)
    if (!haveNodes.has(line)) {
      otherDifferences += 1;
      note(`node missing or different: ${line}`);
    }
  const wantRefs = new Set(expected.nodes.map((line) => line.slice(0, line.indexOf(" "))));
  for (const line of actual.nodes)
    if (!wantNodes.has(line) && !wantRefs.has(line.slice(0, line.indexOf(" ")))) otherDifferences += 1;
  return {
    missingProduced,
    missingObserved,
    missingEscalatedTo,
    wrongObservedCount,
    wrongDeclared,
    otherDifferences,
    expectedNodes: expected.nodes.length,
    expectedRelationships: expected.relationships.length,
    examples,
  };
}

/** Nodes per label and relationships per type of a canonical graph, names sorted. */
export interface GraphCounts {
  readonly nodes: Record<string, number>;
  readonly relationships: Record<string, number>;
}

export function countsByType(graph: CanonicalGraph): GraphCounts {
  const count = (names: string[]) => {
    const out: Record<string, number> = {};
    for (const name of names.sort()) out[name] = (out[name] ?? 0) + 1;
    return out;
  };
  return {
    nodes: count(graph.nodes.map((line) => line.slice(0, line.indexOf(":")))),
    relationships: count(graph.relationships.map((line) => REL.exec(line)?.[2] ?? "?")),
  };
}

/** Everything compareGraphs counted, in one number. */
export function differenceCount(errors: GraphErrors): number {
  return (
    errors.missingProduced +
    errors.missingObserved +
    errors.missingEscalatedTo +
    errors.wrongObservedCount +
    errors.wrongDeclared +
    errors.otherDifferences
  );
}
