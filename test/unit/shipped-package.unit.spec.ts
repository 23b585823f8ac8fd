import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// The package ships what src/ builds to (package.json "files": dist, bin, schemas, cypher). Dev-only code
// (workload/, bench/, demo/, stack/, test/) must stay out of it: no module under src/ may import one.
const SRC = path.resolve(import.meta.dirname, "../../src");

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) =>
      entry.isDirectory()
        ? sourceFiles(path.join(dir, entry.name))
        : entry.name.endsWith(".ts")
          ? [path.join(dir, entry.name)]
          : [],
    );
}

describe("the shipped package", () => {
  it("no module under src/ imports anything outside src/", () => {
    const outside: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const text = fs.readFileSync(file, "utf8");
      for (const match of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
        const target = path.resolve(path.dirname(file), match[1] as string);
        if (!target.startsWith(`${SRC}${path.sep}`)) outside.push(`${path.relative(SRC, file)} → ${match[1]}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
