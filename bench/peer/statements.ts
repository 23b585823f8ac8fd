/**
 * The peer's Cypher: one statement per topic for the connector's Cypher strategy
 * (`neo4j.cypher.topic.<topic>`), carrying the projector's own §3 statements (src/cypher) unchanged.
 *
 * The connector runs a topic's statement once per record, binding the record's value as `event`
 * (its default `neo4j.cypher.bind-value-as-event`), inside its own batch
 * (`UNWIND $events AS … CALL (…) { <statement> RETURN … }`), so a statement must not end in RETURN.
 * Each projector statement is taken as written, with its `UNWIND $rows AS row` replaced by the one
 * record and its final RETURN (which only reports fates to the projector) dropped; the statements of a
 * topic are chained with `WITH row`, so a step whose MATCH finds nothing ends the chain for that
 * record, as the projector's statements end the row.
 *
 * Differences from the projector are the connector's to have: it has no batch-level projection (a
 * registry batch is not collapsed per agent, an escalation's first/last observation is the record's
 * own), and a record whose precondition does not hold (an outcome before its agent, an escalation
 * before its outcomes) writes what it can and is not retried — the connector has no such notion.
 */
import { REGISTRY_PROJECTION } from "../../src/cypher/s3_1-registry-projection.js";
import { ESCALATION_DECLARED } from "../../src/cypher/s3_2-escalation-declared.js";
import { OUTCOME_WITH_PRODUCED } from "../../src/cypher/s3_3-produced.js";
import { escalatedToEdge, OBSERVED_HALF } from "../../src/cypher/s3_4-escalation-observed.js";
import { keyIndex } from "../../src/cypher/tenant.js";
import { readerSchema } from "../../src/model/schemas.js";
import type { Stream } from "../../src/topics.js";

const UNWIND = "UNWIND $rows AS row";

/** A projector statement without its UNWIND header and (if `cutAt` is absent) its final RETURN line. */
function body(statement: string, cutAt?: string): string {
  const text = statement.trim();
  if (!text.startsWith(UNWIND)) throw new Error(`statement does not start with "${UNWIND}": ${text.slice(0, 80)}`);
  let rest = text.slice(UNWIND.length);
  if (cutAt !== undefined) {
    const at = rest.indexOf(cutAt);
    if (at < 0) throw new Error(`statement has no "${cutAt}"`);
    rest = rest.slice(0, at);
  } else {
    const at = rest.lastIndexOf("\nRETURN ");
    if (at >= 0) rest = rest.slice(0, at);
  }
  return rest.trim();
}

/**
 * The record's value as the projector's row. Avro `timestamp-millis` fields reach Cypher as
 * LocalDateTime values (UTC) through the converter and the connector; the projector's rows carry
 * epoch milliseconds, so every such field of the stream's reader schema is turned back into those
 * (read from the schema, so that a statement starting to use another timestamp cannot be missed).
 */
const millis = (field: string) => `datetime({datetime: event.${field}, timezone: '+00:00'}).epochMillis`;

export function timestampFields(stream: Stream): string[] {
  const fields = (readerSchema(stream).fields ?? []) as { name: string; type: unknown }[];
  return fields
    .filter((field) => {
      const type = field.type as { logicalType?: string } | string;
      return typeof type === "object" && type !== null && type.logicalType === "timestamp-millis";
    })
    .map((field) => field.name);
}

const asRow = (stream: Stream, extra: string[] = []) =>
  `WITH event {.*, ${[...timestampFields(stream).map((field) => `${field}: ${millis(field)}`), ...extra].join(", ")}} AS row`;

export const PEER_STATEMENTS: Record<Stream, string> = {
  // §3.1 then §3.2, as the projector runs them for one snapshot (§3.2 only when §3.1 let it through).
  "registry-mutation": [
    asRow("registry-mutation"),
    body(REGISTRY_PROJECTION),
    "WITH row",
    body(ESCALATION_DECLARED),
  ].join("\n"),
  // The Outcome node and §3.3 PRODUCED: the one statement the projector runs for a record read in order.
  "outcome-created": [asRow("outcome-created"), body(OUTCOME_WITH_PRODUCED)].join("\n"),
  // ESCALATED_TO, then §3.4 (whose own MATCH keeps only outcomes produced by two different agents).
  "escalation-edge": [
    // An escalation's first and last observation are the record's own (the projector's come from its batch).
    asRow("escalation-edge", [
      `first_observed_at: ${millis("observed_at")}`,
      `last_observed_at: ${millis("observed_at")}`,
    ]),
    // The connector binds its own batch variable as `e`: ESCALATED_TO's `e` becomes `escalated`.
    escalatedToEdge(false)
      .replace("[e:ESCALATED_TO]", "[escalated:ESCALATED_TO]")
      .replace(/\be\.observed_at\b/g, "escalated.observed_at"),
    // §3.4 as the spec writes it: its own MATCH of the two outcomes' producers, then its MERGEs.
    "WITH row",
    "MATCH (source:Outcome {outcome_id: row.source_outcome_id})<-[:PRODUCED]-(from:Agent)",
    keyIndex(false, "source", "Outcome", "outcome_id"),
    "MATCH (target:Outcome {outcome_id: row.target_outcome_id})<-[:PRODUCED]-(to:Agent)",
    keyIndex(false, "target", "Outcome", "outcome_id"),
    "WHERE from <> to",
    // Its two agents write-locked in agent_id order before the count is read, as the projector does:
    // the connector's tasks write concurrently.
    "CALL (from, to) {",
    "  UNWIND [from, to] AS agent",
    "  WITH agent ORDER BY agent.agent_id",
    "  SET agent._LOCK_ = true",
    "  REMOVE agent._LOCK_",
    "}",
    OBSERVED_HALF,
  ].join("\n"),
};
