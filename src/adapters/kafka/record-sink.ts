import { promisify } from "node:util";
import { gzip as gzipCallback } from "node:zlib";
import kafkajs, { type IHeaders, type Producer } from "kafkajs";
import { encodeMark } from "../../pipeline/retry.js";
import type { Logger, RecordSink, SinkItem, SinkReport, SourceRecord } from "../../ports.js";
import { HEADER, type TopicNames } from "../../topics.js";
import { sendBatchAtLeastOnce } from "./client.js";
import { createHandedOnMemory, type HandedOn } from "./handed-on.js";

/** Kafka's default max.message.bytes, for a sink not told its topics' own limit. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;
/** agp-error-message is cut to this many UTF-8 bytes. */
export const MAX_ERROR_MESSAGE_BYTES = 4_000;
// What a record batch adds around its records, and a record around its key, value and headers
// (lengths, offsets and timestamps as varints), rounded up: estimates err on the large side.
const BATCH_OVERHEAD_BYTES = 128;
const RECORD_OVERHEAD_BYTES = 64;
const HEADER_OVERHEAD_BYTES = 10;
// kafkajs is CommonJS and Node's ESM loader does not see this export by name.
const { CompressionTypes } = kafkajs;
const gzip = promisify(gzipCallback);

interface OutgoingMessage {
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
}

export interface RecordSinkOptions {
  /** Called for each record written to a dead-letter topic, with the topic. */
  readonly onDeadLetter?: (topic: string) => void;
  /**
   * The topics' max.message.bytes as the broker applies them: one for all, or per topic (a topic not
   * named takes DEFAULT_MAX_MESSAGE_BYTES).
   */
  readonly maxMessageBytes?: number | ReadonlyMap<string, number>;
  readonly logger?: Logger;
  /** How many acknowledged copies of failed sends are remembered (handed-on.ts). */
  readonly handedOnCapacity?: number;
}

/**
 * The shapes a record's copy takes, each one used when the one before it does not fit: as it is (in
 * the retry or dead-letter topic its item names); a deferred record as a dead letter
 * (`record-too-large`); without its value; without its value and the producer's own headers.
 */
const FORMS = ["as-is", "dead-letter", "without-value", "bare"] as const;
type Form = (typeof FORMS)[number];

interface Outgoing {
  readonly item: SinkItem;
  readonly form: Form;
  readonly topic: string;
  readonly message: OutgoingMessage;
  readonly size: number;
}

/** The broker's answer to a record batch larger than the topic's max.message.bytes. */
const TOO_LARGE = new Set(["MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"]);

function isTooLarge(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== "object" || depth > 5) return false;
  const { type, cause } = error as { type?: unknown; cause?: unknown };
  if (typeof type === "string" && TOO_LARGE.has(type)) return true;
  return cause !== undefined && cause !== error && isTooLarge(cause, depth + 1);
}

/**
 * Writes deferred records to their stream's retry topic and dead-lettered records to its dead-letter
 * topic, keeping the original key, value and headers and adding where the record came from and why.
 * The producer waits for acks from all in-sync replicas: when send resolves, the records are
 * as durable as the source they came from, so the source offset may be committed. Copies are sent
 * gzip-compressed.
 *
 * No record's size stops a send. kafkajs puts a send's records for one partition into one record
 * batch, which the broker refuses whole when it is larger than the topic's max.message.bytes, so the
 * items are sent in successive requests each under its topic's limit. The error text is cut to
 * MAX_ERROR_MESSAGE_BYTES. The broker applies the limit to the batch as sent, compressed: a copy
 * larger than the limit goes as it is when gzip brings it under (compressedSize). A copy that would
 * not fit on its own — by that estimate, or because the broker refuses it — takes the next of FORMS: a deferred record is dead-lettered as
 * `record-too-large`, a dead letter goes without its value (`agp-value-omitted` gives its size), then
 * without the producer's headers. The source coordinates in its headers still find the record.
 *
 * A send that fails part-way throws, and its caller sends the same items again: the copies the
 * broker acknowledged before the failure — earlier chunks, and the partitions of the failed chunk
 * that were acknowledged — are not sent again (handed-on.ts), only the rest.
 */
export function createRecordSink(
  producer: Producer,
  names: TopicNames,
  serviceVersion: string,
  options: RecordSinkOptions = {},
): RecordSink {
  const { onDeadLetter = () => {}, maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES, logger } = options;
  const handedOn = createHandedOnMemory(options.handedOnCapacity);
  const budget = (topic: string) =>
    (typeof maxMessageBytes === "number"
      ? maxMessageBytes
      : (maxMessageBytes.get(topic) ?? DEFAULT_MAX_MESSAGE_BYTES)) - BATCH_OVERHEAD_BYTES;

  const tooLargeMessage = (item: SinkItem & { kind: "retry" }) =>
    `deferred (${item.reason}), but its copy is larger than ${names.retry[item.stream]} accepts (max.message.bytes ${budget(names.retry[item.stream]) + BATCH_OVERHEAD_BYTES})`;

  function build(item: SinkItem, form: Form): Outgoing {
    const { record } = item;
    const headers: IHeaders = form === "bare" ? {} : { ...record.headers };
    // The first hop names the real source; a record re-deferred from a retry topic keeps it.
    headers[HEADER.sourceTopic] = record.headers[HEADER.sourceTopic] ?? record.topic;
    headers[HEADER.sourcePartition] = record.headers[HEADER.sourcePartition] ?? String(record.partition);
    headers[HEADER.sourceOffset] = record.headers[HEADER.sourceOffset] ?? record.offset;
    headers[HEADER.sourceTimestamp] = record.headers[HEADER.sourceTimestamp] ?? record.timestamp;
    headers[HEADER.serviceVersion] = serviceVersion;
    const message: OutgoingMessage = { key: record.key, value: record.value, headers };
    let topic: string;
    if (item.kind === "retry" && form === "as-is") {
      topic = names.retry[item.stream];
      headers[HEADER.attempt] = String(item.attempt);
      headers[HEADER.notBefore] = String(item.notBefore);
      headers[HEADER.firstSeen] = String(item.firstSeen);
      headers[HEADER.deferReason] = item.reason;
      if (item.upstreamMark) headers[HEADER.upstreamMark] = encodeMark(item.upstreamMark);
    } else {
      topic = names.deadLetter[item.stream];
      const [reason, text] =
        item.kind === "dead-letter"
          ? [item.fate.reason, item.fate.message]
          : ["record-too-large", tooLargeMessage(item)];
      headers[HEADER.errorClass] = reason;
      headers[HEADER.errorMessage] = truncateUtf8(text, MAX_ERROR_MESSAGE_BYTES);
      if ((form === "without-value" || form === "bare") && record.value !== null) {
        headers[HEADER.valueOmitted] = String(record.value.length);
        message.value = null;
      }
    }
    return { item, form, topic, message, size: messageSize(message) };
  }

  /** The item's copy in the next form, or undefined when none is left. */
  function shrink(entry: Outgoing): Outgoing | undefined {
    const next = FORMS[FORMS.indexOf(entry.form) + 1];
    if (next === undefined) return undefined;
    return build(entry.item, entry.item.kind === "dead-letter" && next === "dead-letter" ? "without-value" : next);
  }

  /** Whether the broker would take the copy alone: its size, or else its gzipped size, within the limit. */
  async function fits(entry: Outgoing): Promise<boolean> {
    const limit = budget(entry.topic);
    return entry.size <= limit || (await compressedSize(entry.message)) <= limit;
  }

  /** The first form of the item's copy that fits its topic by our estimate (the last one regardless). */
  async function firstFitting(item: SinkItem): Promise<{ entry: Outgoing; fitting: boolean }> {
    let entry = build(item, "as-is");
    for (;;) {
      if (await fits(entry)) return { entry, fitting: true };
      const next = shrink(entry);
      if (!next) return { entry, fitting: false };
      entry = next;
    }
  }

  /** Counts the acknowledged copies of a chunk in `acked`, with how each ended. */
  function settle(entries: readonly Outgoing[], tooLarge: Map<SourceRecord, string>, acked: [SinkItem, HandedOn][]) {
    for (const { item, form, topic } of entries) {
      const ended: HandedOn = item.kind === "retry" && form !== "as-is" ? { tooLarge: tooLargeMessage(item) } : {};
      if (ended.tooLarge !== undefined) tooLarge.set(item.record, ended.tooLarge);
      if (item.kind === "dead-letter" || form !== "as-is") onDeadLetter(topic);
      acked.push([item, ended]);
    }
  }

  /**
   * Sends a chunk, adding each copy the broker acknowledged to `acked`, with how it ended. The chunk's
   * partitions are acknowledged one by one (sendBatchAtLeastOnce): when one fails, the copies of the
   * others are counted and never sent again, here or by the caller's retry.
   */
  async function deliver(
    chunk: readonly Outgoing[],
    tooLarge: Map<SourceRecord, string>,
    acked: [SinkItem, HandedOn][],
  ): Promise<void> {
    const topic = (chunk[0] as Outgoing).topic;
    const written = new Set<object>();
    try {
      await sendBatchAtLeastOnce(
        producer,
        {
          compression: CompressionTypes.GZIP,
          topicMessages: [{ topic, messages: chunk.map((entry) => entry.message) }],
        },
        {
          onAcknowledged: (messages) => {
            for (const message of messages) written.add(message);
          },
        },
      );
    } catch (error) {
      settle(
        chunk.filter((entry) => written.has(entry.message)),
        tooLarge,
        acked,
      );
      const rest = chunk.filter((entry) => !written.has(entry.message));
      if (!isTooLarge(error) || rest.length === 0) throw error;
      // Our estimate was wrong or the topic's limit changed: find the records refused, one by one.
      if (rest.length > 1) {
        for (const entry of rest) await deliver([entry], tooLarge, acked);
        return;
      }
      const entry = rest[0] as Outgoing;
      const smaller = shrink(entry);
      if (!smaller) throw error;
      logger?.warn(
        {
          topic,
          source: entry.message.headers[HEADER.sourceTopic]?.toString(),
          offset: entry.item.record.offset,
          form: smaller.form,
        },
        "the broker refused a copy as too large; sending a smaller one",
      );
      await deliver([smaller], tooLarge, acked);
      return;
    }
    settle(chunk, tooLarge, acked);
  }

  return {
    async send(items: readonly SinkItem[]): Promise<SinkReport> {
      const tooLarge = new Map<SourceRecord, string>();
      const byTopic = new Map<string, Outgoing[]>();
      let skipped = 0;
      for (const item of items) {
        const known = handedOn.get(item);
        if (known) {
          if (known.tooLarge !== undefined) tooLarge.set(item.record, known.tooLarge);
          skipped++;
          continue;
        }
        const { entry, fitting } = await firstFitting(item);
        if (entry.form !== "as-is" || !fitting)
          logger?.warn(
            {
              topic: entry.item.record.topic,
              partition: entry.item.record.partition,
              offset: entry.item.record.offset,
              bytes: item.record.value?.length ?? 0,
              to: entry.topic,
              form: entry.form,
            },
            "record too large to hand on as it is",
          );
        const entries = byTopic.get(entry.topic) ?? [];
        entries.push(entry);
        byTopic.set(entry.topic, entries);
      }
      if (skipped > 0)
        logger?.info({ skipped, items: items.length }, "copies acknowledged before a failed send are not sent again");
      const acked: [SinkItem, HandedOn][] = [];
      try {
        for (const [topic, entries] of byTopic)
          for (const chunk of chunksUnder(entries, budget(topic))) await deliver(chunk, tooLarge, acked);
      } catch (error) {
        for (const [item, ended] of acked) handedOn.remember(item, ended);
        throw error;
      }
      handedOn.forget(items);
      return { tooLarge };
    },
  };
}

/** An upper estimate of a message's bytes in a record batch. */
export function messageSize(message: OutgoingMessage): number {
  let size = RECORD_OVERHEAD_BYTES + (message.key?.length ?? 0) + (message.value?.length ?? 0);
  for (const [name, value] of Object.entries(message.headers)) {
    const bytes = value === undefined ? 0 : Buffer.byteLength(value as string | Buffer);
    size += HEADER_OVERHEAD_BYTES + Buffer.byteLength(name) + bytes;
  }
  return size;
}

/**
 * An upper estimate of a message's bytes in a gzip-compressed record batch of its own (the batch
 * frame aside, as in messageSize): each field's length, and key, value and headers gzipped together as the producer does
 * (kafkajs gzips a batch's encoded records with zlib's default level).
 */
export async function compressedSize(message: OutgoingMessage): Promise<number> {
  const parts: Buffer[] = [];
  let frame = RECORD_OVERHEAD_BYTES;
  if (message.key) parts.push(message.key);
  if (message.value) parts.push(message.value);
  for (const [name, value] of Object.entries(message.headers)) {
    frame += HEADER_OVERHEAD_BYTES;
    parts.push(Buffer.from(name));
    if (value !== undefined) parts.push(Buffer.isBuffer(value) ? value : Buffer.from(String(value)));
  }
  return frame + (await gzip(Buffer.concat(parts))).length;
}

/** Consecutive runs of items whose sizes add up to at most `budget` (an item larger alone goes alone). */
export function chunksUnder<T extends { size: number }>(items: readonly T[], budget: number): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let used = 0;
  for (const item of items) {
    if (current.length > 0 && used + item.size > budget) {
      chunks.push(current);
      current = [];
      used = 0;
    }
    current.push(item);
    used += item.size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** The longest prefix of `text` that is at most `maxBytes` in UTF-8, never splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let end = Math.min(text.length, maxBytes);
  while (end > 0 && Buffer.byteLength(text.slice(0, end)) > maxBytes) end--;
  // Do not leave half of a surrogate pair.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}
