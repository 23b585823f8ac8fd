import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { LIST_FINDINGS } from "../../src/cypher/findings.js";
import type { Finding } from "../../src/model/findings.js";
import type { Harness } from "./harness.js";

/** A finding as read back from the findings topic, with its key. */
export interface Published {
  readonly key: string;
  readonly value: Finding;
}

export async function graphFindings(harness: Harness): Promise<Record<string, unknown>[]> {
  return harness.graph().read(harness.config.neo4j.database, LIST_FINDINGS, { tenant: null, open: false });
}

export async function topicFindings(harness: Harness): Promise<Published[]> {
  const found: Promise<Published>[] = [];
  await readTopicsToEnd(harness.kafka, [harness.names.findings], (record) => {
    found.push(
      harness.registry
        .decode(record.value as Buffer)
        .then((value: Finding) => ({ key: String(record.key), value: { ...value } })),
    );
  });
  return Promise.all(found);
}

/** Waits until every finding in the graph is published and the topic holds the expected ids. */
export async function waitForPublished(
  harness: Harness,
  ids: readonly string[],
  timeoutMs = 60_000,
): Promise<Published[]> {
  const deadline = Date.now() + timeoutMs;
  let last: Published[] = [];
  while (Date.now() < deadline) {
    const graph = await graphFindings(harness);
    last = await topicFindings(harness).catch(() => []);
    const seen = new Set(last.map((p) => p.value.finding_id));
    if (graph.every((f) => f.published === true) && ids.every((id) => seen.has(id))) return last;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`findings not published within ${timeoutMs} ms; on the topic: ${JSON.stringify(last)}`);
}

export const byFindingId = (a: { finding_id?: unknown }, b: { finding_id?: unknown }): number =>
  String(a.finding_id) < String(b.finding_id) ? -1 : 1;

/** A finding's published fields, from a row of the graph's listing. */
const FIELDS = ["finding_id", "tenant_id", "kind", "source_agent_id", "target_agent_id", "resolves"] as const;
export const findingContent = (row: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(FIELDS.map((field) => [field, row[field]]));
