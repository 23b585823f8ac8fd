import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { configKeys, OUTPUTS } from "../../scripts/docs/generate.js";
import { valueRows } from "../../scripts/docs/helm-values.js";
import { EXIT_CODES } from "../../src/cli/exit-codes.js";
import { CONFIG_KEYS } from "../../src/config.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");

describe("the generated reference", () => {
  it("describes every configuration key", () => {
    const keys = configKeys();
    expect(keys.map(({ key }) => key)).toEqual(CONFIG_KEYS);
    const undescribed = keys.filter(({ schema }) => !schema.description?.trim()).map(({ key }) => key);
    expect(undescribed, "add .describe() to these keys in src/config.ts").toEqual([]);
  });

  it.each(OUTPUTS.map(({ file, render }) => [file, render] as const))(
    "%s is current (npm run docs)",
    (file, render) => {
      expect(read(file), `${file} is stale: run npm run docs and commit it`).toBe(render());
    },
  );

  it("lists every exit code of the code in docs/cli.md, and no other", () => {
    const table = read("docs/cli.md").split("## Exit codes")[1]?.split("\n## ")[0] ?? "";
    const rows = [...table.matchAll(/^\| (\d+) \| `(\w+)` \|/gm)].map((match) => [match[2], Number(match[1])]);
    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(Object.entries(EXIT_CODES).map(([name, { code }]) => [name, code])),
    );
  });

  it("every exit in src/cli goes through EXIT_CODES", () => {
    const dir = path.join(ROOT, "src/cli");
    const literal: string[] = [];
    for (const name of readdirSync(dir).filter((entry) => entry.endsWith(".ts"))) {
      const text = readFileSync(path.join(dir, name), "utf8");
      for (const match of text.matchAll(/process\.exit\(\s*\d|exitCode\s*=\s*\d/g))
        literal.push(`${name}: ${match[0]}`);
    }
    expect(literal, "use EXIT_CODES (src/cli/exit-codes.ts), which docs/cli.md documents").toEqual([]);
  });
});

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of markdown.replace(/```[\s\S]*?```/g, "").matchAll(/^#{1,6} (.+)$/gm)) {
    const base = (match[1] as string)
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

const USER_DOCS = [
  "README.md",
  "CONTRIBUTING.md",
  "SECURITY.md",
  "bench/README.md",
  "bench/HISTORY.md",
  "CHANGELOG.md",
  ...readdirSync(path.join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

describe("the docs a user reads", () => {
  it("README.md stays a first hour's read", () => {
    expect(read("README.md").split("\n").length).toBeLessThan(200);
  });

  it.each(USER_DOCS)("%s links only to files and headings that exist", (file) => {
    const broken: string[] = [];
    const text = read(file).replace(/```[\s\S]*?```/g, "");
    for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = match[1] as string;
      if (/^[a-z]+:/.test(link)) continue;
      const [target = "", anchor] = link.split("#");
      const resolved =
        target === "" ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), target);
      if (!existsSync(resolved)) broken.push(link);
      else if (anchor && resolved.endsWith(".md") && !anchors(readFileSync(resolved, "utf8")).has(anchor))
        broken.push(link);
    }
    expect(broken).toEqual([]);
  });
});

describe("the chart's values table", () => {
  it("reads each key's path, default and the comment block right above it", () => {
    const rows = valueRows(
      [
        "# The file's header, not a key's.",
        "",
        "# Consumers in one group.",
        "replicaCount: 1",
        "image:",
        "  # Defaults to appVersion.",
        '  tag: ""',
        "  pullPolicy: IfNotPresent  # not a description",
        "  # A comment a list item ends.",
        "  - item",
        '  digest: ""',
        "probes:",
        "  startup:",
        "    periodSeconds: 5",
        "extraEnv: []",
      ].join("\n"),
    );
    expect(rows).toEqual([
      { path: "replicaCount", value: "1", description: "Consumers in one group." },
      { path: "image", value: undefined, description: "" },
      { path: "image.tag", value: '""', description: "Defaults to appVersion." },
      { path: "image.pullPolicy", value: "IfNotPresent", description: "" },
      { path: "image.digest", value: '""', description: "" },
      { path: "probes", value: undefined, description: "" },
      { path: "probes.startup", value: undefined, description: "" },
      { path: "probes.startup.periodSeconds", value: "5", description: "" },
      { path: "extraEnv", value: "[]", description: "" },
    ]);
  });
});
