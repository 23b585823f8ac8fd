import type { Statement, StatementResult } from "../cypher/statement.js";
import type { Fate } from "../model/fate.js";
import type { FollowUp } from "../ports.js";

/** An event with its position in the batch, so fates can be handed back in batch order. */
export interface Indexed<E> {
  readonly i: number;
  readonly event: E;
  /** Read back from a retry topic or re-driven: a copy of a record its partition has moved past. */
  readonly late?: boolean;
}

/**
 * What a projection makes of a batch: statements to run in order in one transaction, and a pure
 * function that reads their results back into one fate per input event.
 */
export interface Plan {
  readonly statements: readonly Statement[];
  /** Statements derived from the others' results in the same transaction: the findings they caused. */
  readonly followUp?: FollowUp;
  fates(results: readonly StatementResult[]): ReadonlyMap<number, Fate>;
}

/** The `i` column of each returned record. */
export function returnedIndexes(result: StatementResult | undefined): Set<number> {
  return new Set((result?.records ?? []).map((record) => Number(record.i)));
}

/** Duplicates of a representative get its fate, except that only one of them counts as the application. */
export function copyFateToDuplicates(
  fates: Map<number, Fate>,
  duplicates: ReadonlyMap<number, readonly number[]>,
): void {
  for (const [representative, copies] of duplicates) {
    const fate = fates.get(representative);
    if (!fate) continue;
    for (const copy of copies) fates.set(copy, fate.kind === "applied" ? { kind: "unchanged" } : fate);
  }
}
