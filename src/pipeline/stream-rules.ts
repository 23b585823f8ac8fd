import type { EscalationEdge, OutcomeCreated, RegistryEvent } from "../model/events.js";
import { Rejection } from "../model/fate.js";
import {
  type ValidationRules,
  validateEscalationEdge,
  validateOutcomeCreated,
  validateRegistrySnapshot,
  validateRegistryTombstone,
} from "../model/validate.js";
import type { Decoder, SourceRecord } from "../ports.js";
import { projectEscalations } from "../projection/escalations.js";
import { projectOutcomes } from "../projection/outcomes.js";
import type { Indexed, Plan } from "../projection/plan.js";
import { projectRegistry } from "../projection/registry.js";
import { HEADER, headerString, type Stream } from "../topics.js";

/** The events each stream's records validate into. */
export interface StreamEvents {
  readonly "registry-mutation": RegistryEvent;
  readonly "outcome-created": OutcomeCreated;
  readonly "escalation-edge": EscalationEdge;
}

export type EventOf<S extends Stream> = StreamEvents[S];

/** What the pipeline does with one stream's records, from a decoded value to a plan of statements. */
export interface StreamRules<E> {
  /** The spec patterns its records go through, for the writes-by-pattern metric. */
  readonly patterns: readonly string[];
  /** A decoded Avro value → its event, or why it is refused. */
  validate(value: Record<string, unknown>, rules: ValidationRules): E | Rejection;
  /** A record with a null value (a tombstone) → its event, or why it is refused. */
  tombstone(record: SourceRecord, rules: ValidationRules): E | Rejection;
  /** A database's events of one batch → the statements that apply them (projection/). */
  project(events: readonly Indexed<E>[], scoped: boolean): Plan;
  /** The event's own time, from which its freshness is measured. */
  eventTime(event: E, record: SourceRecord): number;
}

const noTombstone = (): Rejection =>
  new Rejection("not-avro", "a null value (tombstone) is only meaningful on the registry topic");

/** One entry per stream: every per-stream choice of the pipeline is made here, and nowhere else. */
export const STREAM_RULES: { readonly [S in Stream]: StreamRules<EventOf<S>> } = {
  "registry-mutation": {
    patterns: ["3.1", "3.2"],
    validate: validateRegistrySnapshot,
    tombstone: (record, rules) => {
      const event = validateRegistryTombstone(
        record.key === null ? null : record.key.toString("utf8"),
        headerString(record.headers, HEADER.tenantId),
        headerString(record.headers, HEADER.registryVersion),
        rules,
      );
      const at = Number(record.timestamp);
      return event instanceof Rejection || !Number.isFinite(at) ? event : { ...event, occurred_at: at };
    },
    project: projectRegistry,
    eventTime: (event, record) => (event.kind === "registry-snapshot" ? event.occurred_at : Number(record.timestamp)),
  },
  "outcome-created": {
    patterns: ["outcome", "3.3"],
    validate: validateOutcomeCreated,
    tombstone: noTombstone,
    project: projectOutcomes,
    eventTime: (event) => event.created_at,
  },
  "escalation-edge": {
    patterns: ["escalated-to", "3.4"],
    validate: validateEscalationEdge,
    tombstone: noTombstone,
    project: projectEscalations,
    eventTime: (event) => event.observed_at,
  },
};

/**
 * One record of a stream read into its event, or the Rejection that dead-letters it: a tombstone is
 * validated from its key and headers, anything else decoded through the registry, then validated. The
 * consumer's batches and every reading of a topic to its end (reconciliation, rebuild) go through here.
 */
export async function toEvent<S extends Stream>(
  stream: S,
  record: SourceRecord,
  deps: { readonly decoder: Decoder; readonly rules: ValidationRules },
): Promise<EventOf<S> | Rejection> {
  const rules: StreamRules<EventOf<S>> = STREAM_RULES[stream];
  if (record.value === null) return rules.tombstone(record, deps.rules);
  const value = await deps.decoder.decode(stream, record.value);
  return value instanceof Rejection ? value : rules.validate(value, deps.rules);
}
