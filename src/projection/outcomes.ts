import { outcomeProjectionLate, outcomeWithProduced, produced } from "../cypher/s3_3-produced.js";
import type { Statement, StatementResult } from "../cypher/statement.js";
import type { OutcomeCreated } from "../model/events.js";
import { applied, deferred, type Fate, stale, unchanged } from "../model/fate.js";
import { copyFateToDuplicates, type Indexed, type Plan } from "./plan.js";

/**
 * `outcome-created` → the Outcome node, then §3.3 PRODUCED, in one transaction (one statement for the
 * records read in order, two for late ones). An outcome whose agent has no node yet is deferred (its Outcome node is written already; the retry adds PRODUCED). A
 * redelivered event in the same batch is applied once; two different events for one outcome_id go to
 * successive rounds, so no key repeats inside an UNWIND and the later event's values win, as in order.
 * A late event (from a retry topic or re-driven) never overwrites the outcome; one whose agent the
 * outcome no longer names is stale.
 */
export function projectOutcomes(events: readonly Indexed<OutcomeCreated>[], scoped = false): Plan {
  const lateCypher = outcomeProjectionLate(scoped);
  const rounds: Indexed<OutcomeCreated>[][] = [];
  const depthOf = new Map<string, number>();
  const lastOf = new Map<string, Indexed<OutcomeCreated>>();
  const duplicates = new Map<number, number[]>();
  for (const item of events) {
    const key = `${item.event.tenant_id}\u0000${item.event.outcome_id}`;
    const last = lastOf.get(key);
    if (last && sameFact(last.event, item.event)) {
      duplicates.set(last.i, [...(duplicates.get(last.i) ?? []), item.i]);
      continue;
    }
    const depth = last === undefined ? 0 : (depthOf.get(key) ?? 0) + 1;
    depthOf.set(key, depth);
    lastOf.set(key, item);
    if (rounds[depth] === undefined) rounds[depth] = [];
    rounds[depth].push(item);
  }
  const statements: Statement[] = rounds.flatMap((round) => {
    // Rows in agent order: every transaction then locks the shared Agent nodes in one global order,
    // so concurrent partitions queue behind each other instead of deadlocking (and waiting out the
    // driver's retry backoff). Each outcome_id appears once per round, so row order changes nothing else.
    // Each statement gets only the fields it reads: parameter packing is most of the driver's CPU.
    // The rounds are this function's own arrays: sorted in place, split in one pass.
    round.sort(byAgent);
    const fresh: Record<string, unknown>[] = [];
    const late: Indexed<OutcomeCreated>[] = [];
    for (const item of round) {
      if (item.late === true) late.push(item);
      else fresh.push(outcomeRow(item, scoped));
    }
    const out: Statement[] = [];
    if (fresh.length > 0) out.push({ name: "3.3", cypher: outcomeWithProduced(scoped), params: { rows: fresh } });
    if (late.length > 0) {
      const rows = late.map((item) => outcomeRow(item, scoped));
      out.push({ name: "outcome", cypher: lateCypher, params: { rows } });
      const producedRows = late.map(({ i, event }) =>
        scoped ? { i, tenant_id: event.tenant_id, outcome_id: event.outcome_id } : { i, outcome_id: event.outcome_id },
      );
      out.push({ name: "3.3", cypher: produced(scoped), params: { rows: producedRows } });
    }
    return out;
  });
  return {
    statements,
    fates(results: readonly StatementResult[]) {
      const fates = new Map<number, Fate>();
      const superseded = new Set<number>();
      statements.forEach((statement, position) => {
        if (statement.cypher === lateCypher) {
          for (const record of results[position]?.records ?? [])
            if (record.current !== true) superseded.add(Number(record.i));
          return;
        }
        if (statement.name !== "3.3") return;
        const produced = new Map<number, boolean>();
        for (const record of results[position]?.records ?? []) produced.set(Number(record.i), record.existed === true);
        for (const row of statement.params.rows) {
          const i = Number(row.i);
          const existed = produced.get(i);
          if (superseded.has(i)) fates.set(i, stale);
          else fates.set(i, existed === undefined ? deferred("agent-missing") : existed ? unchanged : applied);
        }
      });
      copyFateToDuplicates(fates, duplicates);
      return fates;
    },
  };
}

/**
 * The row of an outcome statement: the record's index, its tenant where several share the database,
 * and the fields the Outcome node takes from the event. Written out rather than spread together: one
 * is built per record.
 */
function outcomeRow({ i, event }: Indexed<OutcomeCreated>, scoped: boolean): Record<string, unknown> {
  const { outcome_id, agent_id, status, correlation_id, created_at } = event;
  return scoped
    ? { i, tenant_id: event.tenant_id, outcome_id, agent_id, status, correlation_id, created_at }
    : { i, outcome_id, agent_id, status, correlation_id, created_at };
}

// The global order every transaction takes agent locks in (§3.4 locks its batch's agents in it too).
function byAgent(a: Indexed<OutcomeCreated>, b: Indexed<OutcomeCreated>): number {
  const { agent_id: x, tenant_id: s } = a.event;
  const { agent_id: y, tenant_id: t } = b.event;
  return x < y ? -1 : x > y ? 1 : s < t ? -1 : s > t ? 1 : 0;
}

function sameFact(a: OutcomeCreated, b: OutcomeCreated): boolean {
  return (
    a.agent_id === b.agent_id &&
    a.status === b.status &&
    a.correlation_id === b.correlation_id &&
    a.created_at === b.created_at
  );
}
