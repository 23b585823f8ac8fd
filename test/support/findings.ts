import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { OLDEST_MARK } from "../../src/cypher/event-time-judge.js";
import { LIST_FINDINGS } from "../../src/cypher/findings.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import { type Finding, terminalFinding } from "../../src/model/findings.js";
import { snapshot, tombstone } from "./builders.js";
import type { Harness } from "./harness.js";
import { until } from "./until.js";

/** A finding as read back from the findings topic, with its key: what identifies it, and the whole record. */
export interface Published {
  readonly key: string;
  /** The fields its id implies (findingContent), the same on every copy. */
  readonly value: Finding;
  /** Everything the record carries, the evidence too (detected_at differs between instances' copies). */
  readonly record: Record<string, unknown>;
}

export async function graphFindings(harness: Harness): Promise<Record<string, unknown>[]> {
  return harness.graph().read(harness.config.neo4j.database, LIST_FINDINGS, { tenant: null, open: false });
}

export async function topicFindings(harness: Harness): Promise<Published[]> {
  const found: Promise<Published>[] = [];
  await readTopicsToEnd(harness.kafka, [harness.names.findings], (record) => {
    found.push(
      harness.registry.decode(record.value as Buffer).then((value: Record<string, unknown>) => ({
        key: String(record.key),
        value: findingContent(value) as unknown as Finding,
        record: { ...value },
      })),
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

/**
 * The graph's findings (their published fields, sorted by id) once they equal `want`, or as they stand
 * when time runs out, for the caller's assertion to show the difference: findings are judged by the
 * event-time judge a round after the registry has been applied past them, not in the write's transaction.
 */
export async function settledFindings(
  harness: Harness,
  want: readonly Finding[],
  timeoutMs = 30_000,
): Promise<Record<string, unknown>[]> {
  const expected = JSON.stringify(want.map((f) => findingContent({ ...f })).sort(byFindingId));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = (await graphFindings(harness)).map(findingContent).sort(byFindingId);
    if (JSON.stringify(found) === expected || Date.now() > deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Waits until the event-time judge has judged every mark in the graph: what it found is recorded. */
export async function waitForJudged(harness: Harness, timeoutMs = 60_000): Promise<void> {
  await until(
    "the event-time judge to judge every mark",
    async () => {
      const [row] = await harness.graph().read(harness.config.neo4j.database, OLDEST_MARK, {});
      return row?.oldest === null || row?.oldest === undefined;
    },
    { timeoutMs, everyMs: 250 },
  );
}

export const byFindingId = (a: { finding_id?: unknown }, b: { finding_id?: unknown }): number =>
  String(a.finding_id) < String(b.finding_id) ? -1 : 1;

/** A finding's published fields, from a row of the graph's listing. */
const FIELDS = ["finding_id", "tenant_id", "kind", "source_agent_id", "target_agent_id", "resolves"] as const;
export const findingContent = (row: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(FIELDS.map((field) => [field, row[field]]));

/**
 * terminal-unreachable findings computed by hand (TERMINAL is the one control terminal):
 * - v1: A declares B, B declares T; D declares B and E, E declares T (D keeps a path without B);
 *   F declares B and G, G declares nothing (F's other way leads nowhere). Nothing reached T before
 *   any of it: no finding.
 * - B's v2 declares nothing: B, and A and F (upstream of B, no other way) lose T; D does not. Three
 *   findings, caused by (B, 2).
 * - B's v3 declares T again: they regain it. Three resolutions, caused by (B, 3), each resolving its
 *   agent's open finding.
 * - B's tombstone at v4: B is deregistered (no finding for itself); A and F lose T again: two
 *   findings, (B, 4).
 * Redelivered, every record is stale under the version guard or re-applies the same: nothing new.
 */
export const terminalScenario = (() => {
  const A = "tu-agt-001";
  const B = "tu-agt-002";
  const D = "tu-agt-004";
  const E = "tu-agt-005";
  const F = "tu-agt-006";
  const G = "tu-agt-007";
  const T = "tu-agt-900";
  const phases = (): ProjectorEvent[][] => [
    [
      snapshot(A, { escalation_path: [B] }),
      snapshot(B, { escalation_path: [T] }),
      snapshot(T, { escalation_path: [] }),
      snapshot(D, { escalation_path: [B, E] }),
      snapshot(E, { escalation_path: [T] }),
      snapshot(F, { escalation_path: [B, G] }),
      snapshot(G, { escalation_path: [] }),
    ],
    [snapshot(B, { registry_version: 2, escalation_path: [] })],
    [snapshot(B, { registry_version: 3, escalation_path: [T] })],
    [tombstone(B, 4)],
  ];
  /** What each phase records, in the order of phases(). */
  function expected(tenant: string): Finding[][] {
    const cause = (registry_version: number) => ({ agent_id: B, registry_version });
    const lost = [A, B, F].map((agent) => terminalFinding(tenant, agent, cause(2)));
    return [
      [],
      lost,
      lost.map((f) => terminalFinding(tenant, f.source_agent_id, cause(3), f.finding_id)),
      [A, F].map((agent) => terminalFinding(tenant, agent, cause(4))),
    ];
  }
  return { agents: { A, B, D, E, F, G }, terminal: T, phases, expected };
})();
