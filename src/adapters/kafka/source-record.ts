import type { IHeaders, KafkaMessage } from "kafkajs";
import type { SourceRecord } from "../../ports.js";

/**
 * kafkajs headers as the core reads them: one Buffer per name. kafkajs gives a name that occurs more
 * than once as an array, and a producer may have set a string; the first value is the one that counts.
 */
export function normaliseHeaders(headers: IHeaders | undefined): Record<string, Buffer | undefined> {
  const out: Record<string, Buffer | undefined> = {};
  // for…in rather than Object.entries: run once per fetched record, mostly on an empty object.
  for (const name in headers) {
    if (!Object.hasOwn(headers, name)) continue;
    const value = headers[name];
    const first = Array.isArray(value) ? value[0] : value;
    out[name] = first === undefined ? undefined : Buffer.isBuffer(first) ? first : Buffer.from(String(first));
  }
  return out;
}

/** A fetched kafkajs message as the core sees it: the consumer and every topic reader build it here. */
export function toSourceRecord(topic: string, partition: number, message: KafkaMessage): SourceRecord {
  return {
    topic,
    partition,
    offset: message.offset,
    timestamp: message.timestamp,
    key: message.key ?? null,
    value: message.value ?? null,
    headers: normaliseHeaders(message.headers),
  };
}
