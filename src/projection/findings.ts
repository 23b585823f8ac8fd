import { recordFindings, recordResolutions } from "../cypher/findings.js";
import type { Statement, StatementResult } from "../cypher/statement.js";
import type { Finding, FindingKind } from "../model/findings.js";

/**
 * The statements recording findings in the outbox, in the transaction that caused them: standalone
 * findings, then resolutions (which need the finding they resolve). Rows in id order, so two
 * transactions writing the same findings lock them in one order.
 */
export function findingStatements(findings: readonly Finding[], scoped: boolean): Statement[] {
  const byId = (a: Finding, b: Finding) => (a.finding_id < b.finding_id ? -1 : a.finding_id > b.finding_id ? 1 : 0);
  const row = (f: Finding) => ({ ...f });
  const standalone = findings.filter((f) => f.resolves === null).sort(byId);
  const resolutions = findings.filter((f) => f.resolves !== null).sort(byId);
  const statements: Statement[] = [];
  if (standalone.length > 0)
    statements.push({ name: "findings", cypher: recordFindings(scoped), params: { rows: standalone.map(row) } });
  if (resolutions.length > 0)
    statements.push({ name: "findings", cypher: recordResolutions(scoped), params: { rows: resolutions.map(row) } });
  return statements;
}

/** The findings a committed transaction recorded for the first time, by tenant and kind. */
export function recordedFindings(results: readonly StatementResult[]): { tenant: string; kind: FindingKind }[] {
  return results
    .filter((result) => result.name === "findings")
    .flatMap((result) => result.records)
    .filter((record) => record.existed === false)
    .map((record) => ({ tenant: String(record.tenant_id), kind: record.kind as FindingKind }));
}
