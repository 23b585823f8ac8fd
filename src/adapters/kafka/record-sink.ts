import type { IHeaders, Producer } from "kafkajs";
import { encodeMark } from "../../pipeline/retry.js";
import type { RecordSink, SinkItem } from "../../ports.js";
import { HEADER, type TopicNames } from "../../topics.js";
import { sendBatchAtLeastOnce } from "./client.js";

/** Kafka's default max.message.bytes, for a sink not told its topics' own limit. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;
/** agp-error-message is cut to this many UTF-8 bytes. */
export const MAX_ERROR_MESSAGE_BYTES = 4_000;
// What a record batch adds around its records, and a record around its key, value and headers
// (lengths, offsets and timestamps as varints), rounded up: estimates err on the large side.
const BATCH_OVERHEAD_BYTES = 128;
const RECORD_OVERHEAD_BYTES = 64;
const HEADER_OVERHEAD_BYTES = 10;

interface OutgoingMessage {
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
}

/**
 * Writes deferred records to their stream's retry topic and dead-lettered records to its dead-letter
 * topic, keeping the original key, value and headers and adding where the record came from and why.
 * The producer waits for acks from all in-sync replicas: when send resolves, the records are
 * as durable as the source they came from, so the source offset may be committed.
 *
 * Nothing it sends exceeds `maxMessageBytes` (the topics' max.message.bytes): kafkajs puts a send's
 * records for one partition into one record batch, which the broker refuses whole when it is larger,
 * so the items are sent in successive requests each under the limit. The error text is cut to
 * MAX_ERROR_MESSAGE_BYTES, and a dead-lettered record that would still not fit on its own (a value
 * near the source topic's own limit) is dead-lettered without its value, with `agp-value-omitted`
 * giving its size: the source coordinates in its headers still find it.
 */
export function createRecordSink(
  producer: Producer,
  names: TopicNames,
  serviceVersion: string,
  onDeadLetter: (topic: string) => void = () => {},
  maxMessageBytes: number = DEFAULT_MAX_MESSAGE_BYTES,
): RecordSink {
  const budget = maxMessageBytes - BATCH_OVERHEAD_BYTES;
  return {
    async send(items: readonly SinkItem[]) {
      const outgoing: { topic: string; message: OutgoingMessage; size: number }[] = [];
      for (const item of items) {
        const { record } = item;
        const headers: IHeaders = { ...record.headers };
        // The first hop names the real source; a record re-deferred from a retry topic keeps it.
        headers[HEADER.sourceTopic] ??= record.topic;
        headers[HEADER.sourcePartition] ??= String(record.partition);
        headers[HEADER.sourceOffset] ??= record.offset;
        headers[HEADER.sourceTimestamp] ??= record.timestamp;
        headers[HEADER.serviceVersion] = serviceVersion;
        let topic: string;
        const message: OutgoingMessage = { key: record.key, value: record.value, headers };
        if (item.kind === "retry") {
          topic = names.retry[item.stream];
          headers[HEADER.attempt] = String(item.attempt);
          headers[HEADER.notBefore] = String(item.notBefore);
          headers[HEADER.firstSeen] = String(item.firstSeen);
          headers[HEADER.deferReason] = item.reason;
          if (item.upstreamMark) headers[HEADER.upstreamMark] = encodeMark(item.upstreamMark);
        } else {
          topic = names.deadLetter[item.stream];
          headers[HEADER.errorClass] = item.fate.reason;
          headers[HEADER.errorMessage] = truncateUtf8(item.fate.message, MAX_ERROR_MESSAGE_BYTES);
          if (messageSize(message) > budget && message.value !== null) {
            headers[HEADER.valueOmitted] = String(message.value.length);
            message.value = null;
          }
          onDeadLetter(topic);
        }
        outgoing.push({ topic, message, size: messageSize(message) });
      }
      for (const chunk of chunksUnder(outgoing, budget)) {
        const byTopic = new Map<string, OutgoingMessage[]>();
        for (const { topic, message } of chunk) {
          const messages = byTopic.get(topic) ?? [];
          messages.push(message);
          byTopic.set(topic, messages);
        }
        await sendBatchAtLeastOnce(producer, {
          topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
        });
      }
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
