import { OUTCOME_PROJECTION, PRODUCED } from "../cypher/s3_3-produced.js";
import type { Statement, StatementResult } from "../cypher/statement.js";
import type { OutcomeCreated } from "../model/events.js";
import { applied, deferred, type Fate, unchanged } from "../model/fate.js";
import { copyFateToDuplicates, type Indexed, type Plan } from "./plan.js";

/**
 * `outcome-created` → the Outcome node, then §3.3 PRODUCED. An outcome whose agent has no node yet is
 * deferred (its Outcome node is written already; the retry adds PRODUCED). The same outcome twice in a
 * batch is applied once, with the last event's values.
 */
export function projectOutcomes(events: readonly Indexed<OutcomeCreated>[]): Plan {
  const latest = new Map<string, Indexed<OutcomeCreated>>();
  const duplicates = new Map<number, number[]>();
  for (const item of events) {
    const previous = latest.get(item.event.outcome_id);
    if (previous) {
      const copies = duplicates.get(previous.i) ?? [];
      duplicates.delete(previous.i);
      duplicates.set(item.i, [...copies, previous.i]);
    }
    latest.set(item.event.outcome_id, item);
  }
  const rows = [...latest.values()].map(({ i, event }) => ({
    i,
    outcome_id: event.outcome_id,
    agent_id: event.agent_id,
    status: event.status,
    correlation_id: event.correlation_id,
    created_at: event.created_at,
  }));
  const statements: Statement[] =
    rows.length === 0
      ? []
      : [
          { name: "outcome", cypher: OUTCOME_PROJECTION, params: { rows } },
          { name: "3.3", cypher: PRODUCED, params: { rows } },
        ];
  return {
    statements,
    fates(results: readonly StatementResult[]) {
      const produced = new Map<number, boolean>();
      for (const record of results[1]?.records ?? []) produced.set(Number(record.i), record.existed === true);
      const fates = new Map<number, Fate>();
      for (const row of rows) {
        const existed = produced.get(row.i);
        fates.set(row.i, existed === undefined ? deferred("agent-missing") : existed ? unchanged : applied);
      }
      copyFateToDuplicates(fates, duplicates);
      return fates;
    },
  };
}
