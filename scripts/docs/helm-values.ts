/**
 * The chart's values as a table, from values.yaml itself: each key's default and the comment block
 * right above it (helm-docs' convention, without its annotations). values.yaml holds only maps,
 * scalars and flow lists, so a line reader suffices and no YAML library is needed.
 */
import { readFileSync } from "node:fs";

export const VALUES_FILE = "helm/agent-graph-projector/values.yaml";

export interface ValueRow {
  readonly path: string;
  /** The value as written; undefined for a map whose keys follow. */
  readonly value: string | undefined;
  readonly description: string;
}

export function valueRows(text: string): ValueRow[] {
  const rows: ValueRow[] = [];
  const parents: { indent: number; key: string }[] = [];
  let comment: string[] = [];
  let commentIndent = -1;
  for (const line of text.split("\n")) {
    const commentMatch = /^(\s*)# ?(.*)$/.exec(line);
    if (commentMatch) {
      const indent = commentMatch[1]?.length ?? 0;
      if (indent !== commentIndent) comment = [];
      commentIndent = indent;
      comment.push(commentMatch[2] ?? "");
      continue;
    }
    const keyMatch = /^(\s*)([A-Za-z0-9_.-]+):(?:\s+(.*))?$/.exec(line);
    if (!keyMatch) {
      // A blank line or a list item ends the comment block: it described no key.
      comment = [];
      commentIndent = -1;
      continue;
    }
    const indent = keyMatch[1]?.length ?? 0;
    while (parents.length > 0 && (parents.at(-1)?.indent ?? 0) >= indent) parents.pop();
    const key = keyMatch[2] ?? "";
    const value = keyMatch[3]?.replace(/\s+#.*$/, "").trim();
    rows.push({
      path: [...parents.map((parent) => parent.key), key].join("."),
      value: value === undefined || value === "" ? undefined : value,
      description: commentIndent === indent ? comment.join(" ").trim() : "",
    });
    if (value === undefined || value === "") parents.push({ indent, key });
    comment = [];
    commentIndent = -1;
  }
  return rows;
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("<", "&lt;");
}

export function helmValuesDoc(generated: string, root: URL): string {
  const rows = valueRows(readFileSync(new URL(VALUES_FILE, root), "utf8"))
    // A map is listed when it says something; its keys are listed anyway.
    .filter((row) => row.value !== undefined || row.description !== "")
    .map(
      (row) =>
        `| \`${row.path}\` | ${row.value === undefined ? "" : `\`${cell(row.value)}\``} | ${cell(row.description)} |`,
    );
  return [
    "# Helm values",
    "",
    generated,
    "",
    `Every value of the chart with its default and the comment above it in [values.yaml](../${VALUES_FILE});`,
    "`values.schema.json` validates them. How to install, credentials, Strimzi, KEDA and the alerts:",
    "[operations](operations.md#kubernetes-with-helm) and the",
    "[chart's README](../helm/agent-graph-projector/README.md). `config.<KEY>` becomes the environment",
    "variable `<KEY>`: every key is in [configuration](configuration.md).",
    "",
    "| value | default | meaning |",
    "| --- | --- | --- |",
    ...rows,
    "",
  ].join("\n");
}
