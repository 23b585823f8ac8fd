import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const src = join(root, "src");
const MAX_LINES = 400;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Each src module's relative imports, type-only ones and re-exports included: a cycle of types is one too. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(src)) {
    const text = readFileSync(file, "utf8");
    const targets = [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"(\.{1,2}\/[^"]+)"/gms)].map((match) =>
      relative(src, resolve(dirname(file), (match[1] ?? "").replace(/\.js$/, ".ts"))),
    );
    graph.set(relative(src, file), targets);
  }
  return graph;
}

/** Every cycle found by a depth-first walk, each as the path that closes it. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return found;
}

describe("src module graph", () => {
  it("reads the imports it is meant to guard", () => {
    const graph = importGraph();
    expect(graph.get("service.ts")?.length ?? 0).toBeGreaterThan(0);
    expect(graph.get("adapters/kafka/consumer.ts")).toContain("adapters/kafka/each-batch.ts");
  });

  it("has no circular imports", () => {
    expect(cycles(importGraph()).map((cycle) => cycle.join(" -> "))).toEqual([]);
  });

  it(`keeps every module under ${MAX_LINES} lines`, () => {
    const long = sourceFiles(src)
      .map((file) => ({ file: relative(src, file), lines: readFileSync(file, "utf8").split("\n").length - 1 }))
      .filter(({ lines }) => lines >= MAX_LINES);
    expect(long).toEqual([]);
  });
});
