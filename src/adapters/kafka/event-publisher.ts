import type { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import type { Message, Producer } from "kafkajs";
import type { ProjectorEvent } from "../../model/events.js";
import { registryKey } from "../../model/registry-key.js";
import { HEADER, type Stream, type TopicNames } from "../../topics.js";
import { sendBatchAtLeastOnce } from "./client.js";

export function streamOf(event: ProjectorEvent): Stream {
  switch (event.kind) {
    case "registry-snapshot":
    case "registry-tombstone":
      return "registry-mutation";
    case "outcome-created":
      return "outcome-created";
    case "escalation-edge":
      return "escalation-edge";
  }
}

/** The record key each topic is partitioned by; the compacted registry topic's names the tenant. */
export function keyOf(event: ProjectorEvent): string {
  switch (event.kind) {
    case "registry-snapshot":
    case "registry-tombstone":
      return registryKey(event.tenant_id, event.agent_id);
    case "outcome-created":
      return event.outcome_id;
    case "escalation-edge":
      return event.source_outcome_id;
  }
}

/** Encodes an event as its topic's Kafka message: Confluent-framed Avro, or a null value for a tombstone. */
export async function toMessage(
  registry: SchemaRegistry,
  schemaIds: Readonly<Record<Stream, number>>,
  event: ProjectorEvent,
): Promise<Message> {
  if (event.kind === "registry-tombstone") {
    return {
      key: keyOf(event),
      value: null,
      headers: { [HEADER.tenantId]: event.tenant_id, [HEADER.registryVersion]: String(event.registry_version) },
    };
  }
  const { kind: _kind, ...value } = event;
  return { key: keyOf(event), value: await registry.encode(schemaIds[streamOf(event)], value) };
}

/**
 * Publishes events in order, in chunks, to their source topics; order is kept per key, which is
 * all Kafka promises too. `onProgress` reports the running count.
 */
export async function publishEvents(
  producer: Producer,
  registry: SchemaRegistry,
  schemaIds: Readonly<Record<Stream, number>>,
  names: TopicNames,
  events: readonly ProjectorEvent[],
  onProgress: (published: number) => void = () => {},
  chunkSize = 2000,
): Promise<void> {
  for (let start = 0; start < events.length; start += chunkSize) {
    const chunk = events.slice(start, start + chunkSize);
    const byTopic = new Map<string, Message[]>();
    for (const event of chunk) {
      const topic = names.source[streamOf(event)];
      const messages = byTopic.get(topic) ?? [];
      messages.push(await toMessage(registry, schemaIds, event));
      byTopic.set(topic, messages);
    }
    await sendBatchAtLeastOnce(producer, {
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
    });
    onProgress(Math.min(start + chunkSize, events.length));
  }
}
