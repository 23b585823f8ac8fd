import { HEADER, headerString } from "../pipeline/headers.js";
import type { Decoder, SourceRecord, Stream } from "../ports.js";
import type { ProjectorEvent } from "./events.js";
import { Rejection } from "./fate.js";
import {
  type ValidationRules,
  validateEscalationEdge,
  validateOutcomeCreated,
  validateRegistrySnapshot,
  validateRegistryTombstone,
} from "./validate.js";

/**
 * One record of a stream read into its event, or the Rejection that dead-letters it: a tombstone is
 * validated from its key and headers, anything else decoded through the registry, then validated. The
 * consumer's batches and every reading of a topic to its end (reconciliation, rebuild) go through here.
 */
export async function toEvent(
  stream: Stream,
  record: SourceRecord,
  deps: { readonly decoder: Decoder; readonly rules: ValidationRules },
): Promise<ProjectorEvent | Rejection> {
  const key = record.key === null ? null : record.key.toString("utf8");
  if (record.value === null) {
    if (stream !== "registry-mutation")
      return new Rejection("not-avro", "a null value (tombstone) is only meaningful on the registry topic");
    const tenant = headerString(record.headers, HEADER.tenantId);
    return validateRegistryTombstone(key, tenant, headerString(record.headers, HEADER.registryVersion), deps.rules);
  }
  const value = await deps.decoder.decode(stream, record.value);
  if (value instanceof Rejection) return value;
  switch (stream) {
    case "registry-mutation":
      return validateRegistrySnapshot(value, deps.rules);
    case "outcome-created":
      return validateOutcomeCreated(value, deps.rules);
    case "escalation-edge":
      return validateEscalationEdge(value, deps.rules);
  }
}
