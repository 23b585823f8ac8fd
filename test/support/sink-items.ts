/** What the tests of the retry/dead-letter hand-off send: a source record, and its copy bound for the retry topic. */
import type { SinkItem, SourceRecord } from "../../src/ports.js";
import type { Stream } from "../../src/topics.js";

/** A source record at `offset`, its key `k-<offset>` unless given. */
export function sourceRecord(
  topic: string,
  offset: number,
  value: Buffer,
  options: { partition?: number; key?: string; headers?: Record<string, Buffer>; timestamp?: string } = {},
): SourceRecord {
  return {
    topic,
    partition: options.partition ?? 0,
    offset: String(offset),
    timestamp: options.timestamp ?? "1",
    key: Buffer.from(options.key ?? `k-${offset}`),
    value,
    headers: options.headers ?? {},
  };
}

/** The record deferred for the first time, its agent missing: due at once. */
export const retryItem = (stream: Stream, record: SourceRecord): SinkItem => ({
  kind: "retry",
  stream,
  attempt: 1,
  notBefore: 0,
  firstSeen: 0,
  reason: "agent-missing",
  record,
});
