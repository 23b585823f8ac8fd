import type { RecordPublisher, SourceRecord, TopicReader } from "../ports.js";
import { HEADER, headerString, STREAMS, type Stream, type TopicNames } from "../topics.js";

/** A dead-lettered record as `dlq list` shows it; `dlq` is the id `dlq redrive` takes. */
export type DeadLetterRow = {
  readonly dlq: string;
  readonly source: string;
  readonly key: string | null;
  readonly reason: string;
  readonly message: string;
};

export function describeDeadLetter(record: SourceRecord): DeadLetterRow {
  const header = (name: string) => headerString(record.headers, name);
  return {
    dlq: `${record.topic}:${record.partition}:${record.offset}`,
    source: `${header(HEADER.sourceTopic) ?? "?"}:${header(HEADER.sourcePartition) ?? "?"}:${header(HEADER.sourceOffset) ?? "?"}`,
    key: record.key?.toString() ?? null,
    reason: header(HEADER.errorClass) ?? "?",
    message: header(HEADER.errorMessage) ?? "",
  };
}

/** Where a record came from, which a re-driven record keeps: it is a late copy of that record. */
const KEPT_HEADERS = new Set<string>([
  HEADER.sourceTopic,
  HEADER.sourcePartition,
  HEADER.sourceOffset,
  HEADER.sourceTimestamp,
]);

/** Headers of a re-driven record: the original ones and its source, without the dead-letter verdict. */
export function redriveHeaders(record: SourceRecord): Record<string, Buffer> {
  const headers: Record<string, Buffer> = {};
  for (const [name, value] of Object.entries(record.headers)) {
    if ((!name.startsWith("agp-") || KEPT_HEADERS.has(name)) && value !== undefined) headers[name] = value;
  }
  return headers;
}

/**
 * The stream whose retry topic a dead-lettered record goes back through: the one its source topic (a
 * source or a retry topic) belongs to. To the retry topic, never the source: on the compacted
 * registry topic an old snapshot would become its key's latest value, what a rebuild or
 * reconciliation reads as the registry. From the retry topic it is applied once, fenced like any
 * late record.
 */
export function redriveStream(record: SourceRecord, names: TopicNames): Stream {
  const topic = headerString(record.headers, HEADER.sourceTopic);
  const stream = STREAMS.find((s) => names.source[s] === topic || names.retry[s] === topic);
  if (!stream)
    throw new Error(`record ${describeDeadLetter(record).dlq} names no known source topic (${topic ?? "none"})`);
  return stream;
}

/** Which dead-lettered records to re-drive: ids from `dlq list`, a reason, or all of them. */
export interface RedriveSelection {
  readonly ids?: ReadonlySet<string>;
  readonly reason?: string;
  readonly all?: boolean;
}

export function isSelected(row: DeadLetterRow, selection: RedriveSelection): boolean {
  return (
    selection.all === true ||
    selection.ids?.has(row.dlq) === true ||
    (selection.reason !== undefined && selection.reason !== "" && row.reason === selection.reason)
  );
}

/** Every record on the dead-letter topics, optionally only those of one reason. */
export async function listDeadLetters(
  reader: TopicReader,
  names: TopicNames,
  reason?: string,
): Promise<DeadLetterRow[]> {
  const rows: DeadLetterRow[] = [];
  await reader.readToEnd(
    STREAMS.map((s) => names.deadLetter[s]),
    (record) => {
      const row = describeDeadLetter(record);
      if (!reason || row.reason === reason) rows.push(row);
    },
  );
  return rows;
}

/** A chosen record `dlq redrive` did not publish, and why. */
export type NotRedriven = DeadLetterRow & { readonly why: string };

/**
 * Why a dead-lettered record cannot be re-driven as it is, or undefined when it can. A record whose
 * value was too large for the dead-letter topic was kept without it (`agp-value-omitted`): published
 * again, its null value would read as a tombstone on the registry stream (deregistering the agent
 * when its headers carry a registry version) and as an unreadable record elsewhere. Only its source
 * still has it.
 */
export function notRedrivable(record: SourceRecord): string | undefined {
  const omitted = headerString(record.headers, HEADER.valueOmitted);
  if (omitted === undefined) return undefined;
  return `its value (${omitted} bytes) was too large to keep on the dead-letter topic; publish it again from its source ${describeDeadLetter(record).source}`;
}

/** A chosen record `dlq redrive` would publish, and the retry topic it would go to. */
export type ToRedrive = DeadLetterRow & { readonly to: string };

/**
 * Which dead-lettered records a re-drive chooses, in the order read: those it would publish (with
 * their retry topic) and those it would leave, with why. Reads only; `dlq redrive --dry-run` prints it.
 */
export async function planRedrive(
  reader: TopicReader,
  names: TopicNames,
  selection: RedriveSelection,
): Promise<{ chosen: SourceRecord[]; toRedrive: ToRedrive[]; notRedriven: NotRedriven[] }> {
  const chosen: SourceRecord[] = [];
  const toRedrive: ToRedrive[] = [];
  const notRedriven: NotRedriven[] = [];
  await reader.readToEnd(
    STREAMS.map((s) => names.deadLetter[s]),
    (record) => {
      const row = describeDeadLetter(record);
      if (!isSelected(row, selection)) return;
      const why = notRedrivable(record);
      if (why !== undefined) notRedriven.push({ ...row, why });
      else {
        chosen.push(record);
        toRedrive.push({ ...row, to: names.retry[redriveStream(record, names)] });
      }
    },
  );
  return { chosen, toRedrive, notRedriven };
}

/**
 * Publishes the chosen dead-lettered records again, one at a time in the order read, to their
 * stream's retry topic with their original key, value and headers. A chosen record that cannot be
 * re-driven (notRedrivable) is left where it is and returned with the reason.
 */
export async function redriveDeadLetters(
  reader: TopicReader,
  publisher: RecordPublisher,
  names: TopicNames,
  selection: RedriveSelection,
): Promise<{ redriven: number; notRedriven: NotRedriven[] }> {
  const { chosen, notRedriven } = await planRedrive(reader, names, selection);
  for (const record of chosen) {
    await publisher.publish(names.retry[redriveStream(record, names)], {
      key: record.key,
      value: record.value,
      headers: redriveHeaders(record),
    });
  }
  return { redriven: chosen.length, notRedriven };
}
