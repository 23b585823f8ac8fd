/**
 * What became of one record. A fate is a value, never an exception: one record's problem must not stop
 * its partition.
 */
/** Every reason a record is dead-lettered for; a value, so that metrics can start each series at 0. */
export const REJECT_REASONS = [
  "not-avro",
  "unknown-schema-id",
  // The schema id names a schema that is not Avro, or one the decoder cannot load.
  "unsupported-schema",
  "schema-mismatch",
  "undecodable",
  "invalid-field",
  "malformed-id",
  "unserved-tenant",
  "list-too-long",
  "value-too-long",
  "neo4j-rejected",
  "precondition-timeout",
  // A deferred record whose copy the retry topic would not take (record-sink.ts).
  "record-too-large",
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export const DEFER_REASONS = ["agent-missing", "outcome-missing", "producer-missing"] as const;
export type DeferReason = (typeof DEFER_REASONS)[number];

export type Fate =
  | { readonly kind: "applied" }
  | { readonly kind: "unchanged" }
  | { readonly kind: "stale" }
  | { readonly kind: "deferred"; readonly reason: DeferReason }
  | { readonly kind: "dead-lettered"; readonly reason: RejectReason; readonly message: string };

export type FateKind = Fate["kind"];

export const applied: Fate = { kind: "applied" };
export const unchanged: Fate = { kind: "unchanged" };
export const stale: Fate = { kind: "stale" };

/** Why a record was deferred or dead-lettered; empty for the fates that need no reason. */
export function fateReason(fate: Fate): string {
  return fate.kind === "deferred" || fate.kind === "dead-lettered" ? fate.reason : "";
}

export function deferred(reason: DeferReason): Fate {
  return { kind: "deferred", reason };
}

export function deadLettered(reason: RejectReason, message: string): Fate {
  return { kind: "dead-lettered", reason, message };
}

/** A record that can never apply, with the reason a dead-letter record carries. */
export class Rejection {
  constructor(
    readonly reason: RejectReason,
    readonly message: string,
  ) {}
}
