/**
 * Reads a load's findings topic from its start while the load runs: each finding decoded through the
 * schema registry, with its record's Kafka timestamp (the moment the projector published it), for
 * lib/findings-freshness.ts.
 */
import type { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import type { Kafka } from "kafkajs";
import type { PublishedFinding } from "./findings-freshness.js";

export interface FindingsReader {
  readonly findings: PublishedFinding[];
  /** Records that did not decode as findings. */
  readonly undecoded: number;
  stop(): Promise<void>;
}

/** A timestamp-millis field as avsc gives it (a Date), or a plain number; null stays null. */
function millis(value: unknown): number | null {
  if (value instanceof Date) return value.getTime();
  if (typeof value === "number") return value;
  return null;
}

export async function readFindings(
  kafka: Kafka,
  registry: SchemaRegistry,
  topic: string,
  groupId: string,
): Promise<FindingsReader> {
  const findings: PublishedFinding[] = [];
  let undecoded = 0;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      try {
        if (!message.value) throw new Error("no value");
        const value = (await registry.decode(message.value)) as Record<string, unknown>;
        findings.push({
          findingId: String(value.finding_id),
          kind: String(value.kind),
          observedAtMs: millis(value.observed_at),
          registryOccurredAtMs: millis(value.registry_occurred_at),
          detectedAtMs: millis(value.detected_at) ?? 0,
          publishedAtMs: Number(message.timestamp),
        });
      } catch {
        undecoded += 1;
      }
    },
  });
  return {
    findings,
    get undecoded() {
      return undecoded;
    },
    stop: () => consumer.disconnect(),
  };
}
