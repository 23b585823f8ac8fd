import { createHash } from "node:crypto";

/**
 * Governance findings: the §4 "undeclared escalations" question answered when its answer changes.
 *
 * - `undeclared-escalation`: a CAN_ESCALATE_TO edge gained its first observation (§3.4) while the
 *   registry had not declared it.
 * - `undeclared-escalation-resolved`: §3.2 later declared that edge.
 *
 * Each transition happens at most once per edge (observed_count never goes back to 0, and a
 * resolution needs the open finding), so a finding's id is its tenant, kind and the edge's two agents:
 * the same whatever order, batching or number of deliveries the records came in, and whichever
 * instance wrote it. Everything a finding says follows from its id, so two writes of it never differ.
 */
export type FindingKind = "undeclared-escalation" | "undeclared-escalation-resolved";

export const FINDING_KINDS: readonly FindingKind[] = ["undeclared-escalation", "undeclared-escalation-resolved"];

export interface Finding {
  readonly finding_id: string;
  readonly tenant_id: string;
  readonly kind: FindingKind;
  readonly source_agent_id: string;
  readonly target_agent_id: string;
  /** On a resolution: the id of the finding it resolves. */
  readonly resolves: string | null;
}

/** The deterministic id: a SHA-256 over the canonical JSON of what identifies the transition. */
export function findingId(tenant: string, kind: FindingKind, source: string, target: string): string {
  return createHash("sha256")
    .update(JSON.stringify([tenant, kind, source, target]))
    .digest("hex")
    .slice(0, 32);
}

export function finding(tenant: string, kind: FindingKind, source: string, target: string): Finding {
  return {
    finding_id: findingId(tenant, kind, source, target),
    tenant_id: tenant,
    kind,
    source_agent_id: source,
    target_agent_id: target,
    resolves:
      kind === "undeclared-escalation-resolved" ? findingId(tenant, "undeclared-escalation", source, target) : null,
  };
}

/** One row §3.4 returned, with the tenant of the event it came from. */
export interface ObservedRow {
  readonly tenant_id: string;
  readonly already_counted: boolean;
  readonly from_agent: string;
  readonly to_agent: string;
  readonly observed_count: number;
  readonly declared: boolean;
}

/**
 * The edges whose first observation this transaction counted while undeclared. Several rows of one
 * statement may count on the same edge; the last row Neo4j projected saw every increment, so the
 * highest observed_count among them is the edge's count after the statement, and the count before it
 * is that minus the rows this statement counted. Only when that is 0 did the edge gain its first
 * observation here. A concurrent transaction counting on the same edge waits for the edge's lock and
 * sees this one's increments, so only one of them finds the count started at 0.
 */
export function undeclaredEscalations(rows: readonly ObservedRow[]): Finding[] {
  const edges = new Map<string, { row: ObservedRow; counted: number; highest: number }>();
  for (const row of rows) {
    const key = JSON.stringify([row.tenant_id, row.from_agent, row.to_agent]);
    const edge = edges.get(key) ?? { row, counted: 0, highest: 0 };
    if (!row.already_counted) edge.counted += 1;
    edge.highest = Math.max(edge.highest, row.observed_count);
    edges.set(key, edge);
  }
  const found: Finding[] = [];
  for (const { row, counted, highest } of edges.values()) {
    if (counted > 0 && highest - counted === 0 && row.declared === false)
      found.push(finding(row.tenant_id, "undeclared-escalation", row.from_agent, row.to_agent));
  }
  return found;
}

/** One §3.2 row: an agent and the targets it declared that were undeclared and already observed. */
export interface DeclaredRow {
  readonly tenant_id: string;
  readonly agent_id: string;
  readonly declared_observed: readonly string[];
}

/**
 * The resolutions §3.2's declarations may bring: one per edge it declared that had observations.
 * Written only where the open finding exists (cypher/findings.ts), so an edge declared before it was
 * ever observed, or declared again by a rebuild, resolves nothing.
 */
export function escalationResolutions(rows: readonly DeclaredRow[]): Finding[] {
  const found = new Map<string, Finding>();
  for (const row of rows)
    for (const target of row.declared_observed) {
      const resolution = finding(row.tenant_id, "undeclared-escalation-resolved", row.agent_id, target);
      found.set(resolution.finding_id, resolution);
    }
  return [...found.values()];
}
