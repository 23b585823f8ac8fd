import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Stream } from "../topics.js";

/** Our reader schemas, one per stream, as shipped in `schemas/`. */
const schemaDir = fileURLToPath(new URL("../../schemas/", import.meta.url));

export function readerSchemaText(stream: Stream): string {
  return readFileSync(`${schemaDir}${stream}.avsc`, "utf8");
}

export function readerSchema(stream: Stream): Record<string, unknown> {
  return JSON.parse(readerSchemaText(stream)) as Record<string, unknown>;
}

/** The schema of the findings topic, which is ours: registered by the service under `<topic>-value`. */
export function findingSchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(`${schemaDir}governance-finding.avsc`, "utf8")) as Record<string, unknown>;
}
