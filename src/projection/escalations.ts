import { escalation } from "../cypher/s3_4-escalation-observed.js";
import type { Statement, StatementResult } from "../cypher/statement.js";
import type { EscalationEdge } from "../model/events.js";
import { applied, deferred, type Fate, unchanged } from "../model/fate.js";
import { copyFateToDuplicates, type Indexed, type Plan } from "./plan.js";

// A type rather than an interface: the rows go into the statement's parameters as they are.
type PairRow = {
  readonly i: number;
  readonly tenant_id?: string;
  readonly source_outcome_id: string;
  readonly target_outcome_id: string;
  first_observed_at: number;
  last_observed_at: number;
};

/**
 * `escalation-edge` → ESCALATED_TO and, when the two outcomes' producers differ, §3.4. A repeated
 * source/target pair in one batch becomes one row carrying its earliest and latest observation, so it
 * counts once. A record whose outcomes or producers are not in the graph yet is deferred.
 */
export function projectEscalations(events: readonly Indexed<EscalationEdge>[], scoped = false): Plan {
  const pairs = new Map<string, PairRow>();
  const duplicates = new Map<number, number[]>();
  for (const { i, event } of events) {
    // Length-prefixed, so no two (tenant, source, target) triples share a key whatever their ids hold.
    const { tenant_id: tenant, source_outcome_id: source } = event;
    const key = `${tenant.length}:${tenant}${source.length}:${source}${event.target_outcome_id}`;
    const row = pairs.get(key);
    if (row) {
      row.first_observed_at = Math.min(row.first_observed_at, event.observed_at);
      row.last_observed_at = Math.max(row.last_observed_at, event.observed_at);
      duplicates.set(row.i, [...(duplicates.get(row.i) ?? []), i]);
      continue;
    }
    pairs.set(key, {
      i,
      ...(scoped ? { tenant_id: event.tenant_id } : {}),
      source_outcome_id: event.source_outcome_id,
      target_outcome_id: event.target_outcome_id,
      first_observed_at: event.observed_at,
      last_observed_at: event.observed_at,
    });
  }
  // Rows in target order: escalation-edge is keyed by source outcome, so partitions never share a
  // source but do share targets; locking the targets in one global order keeps concurrent partitions
  // from deadlocking. Each pair appears once, and every write is order-free (MERGE, min, max, +1 per
  // new marker), so row order changes nothing else.
  const rows = [...pairs.values()].sort((a, b) =>
    a.target_outcome_id < b.target_outcome_id ? -1 : a.target_outcome_id > b.target_outcome_id ? 1 : 0,
  );
  const statements: Statement[] =
    rows.length === 0 ? [] : [{ name: "3.4", cypher: escalation(scoped), params: { rows } }];
  // The rows §3.4 ran on: both outcomes produced, by two different agents. Whether an escalation was
  // authorised is decided later, at its own observed_at (pipeline/event-time-judge.ts): §3.4 marks it.
  const observed = (results: readonly StatementResult[]) =>
    (results[0]?.records ?? []).filter((record) => record.produced === true && record.same_agent === false);
  return {
    statements,
    fates(results: readonly StatementResult[]) {
      const outcomes = new Map<number, { produced: boolean; sameAgent: boolean }>();
      for (const record of results[0]?.records ?? []) {
        outcomes.set(Number(record.i), { produced: record.produced === true, sameAgent: record.same_agent === true });
      }
      const counted = new Map<number, boolean>();
      for (const record of observed(results)) counted.set(Number(record.i), record.already_counted === true);
      const fates = new Map<number, Fate>();
      for (const row of rows) {
        const found = outcomes.get(row.i);
        if (!found) fates.set(row.i, deferred("outcome-missing"));
        else if (!found.produced) fates.set(row.i, deferred("producer-missing"));
        else if (found.sameAgent) fates.set(row.i, applied);
        else fates.set(row.i, counted.get(row.i) === true ? unchanged : applied);
      }
      copyFateToDuplicates(fates, duplicates);
      return fates;
    },
  };
}
