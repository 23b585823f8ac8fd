import type { IHeaders, Producer } from "kafkajs";
import { HEADER } from "../../pipeline/headers.js";
import { encodeMark } from "../../pipeline/retry-window.js";
import type { RecordSink, SinkItem } from "../../ports.js";
import type { TopicNames } from "../../topics.js";

/**
 * Writes deferred records to their stream's retry topic and dead-lettered records to its dead-letter
 * topic, keeping the original key, value and headers and adding where the record came from and why.
 * The producer waits for acks from all in-sync replicas: when send resolves, the records are
 * as durable as the source they came from, so the source offset may be committed.
 */
export function createRecordSink(
  producer: Producer,
  names: TopicNames,
  serviceVersion: string,
  onDeadLetter: (topic: string) => void = () => {},
): RecordSink {
  return {
    async send(items: readonly SinkItem[]) {
      const byTopic = new Map<string, { key: Buffer | null; value: Buffer | null; headers: IHeaders }[]>();
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
          headers[HEADER.errorMessage] = item.fate.message.slice(0, 4000);
          onDeadLetter(topic);
        }
        const messages = byTopic.get(topic) ?? [];
        messages.push({ key: record.key, value: record.value, headers });
        byTopic.set(topic, messages);
      }
      await producer.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
    },
  };
}
