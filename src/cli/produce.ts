import { readFileSync } from "node:fs";
import avro from "avsc";
import type { Command } from "commander";
import { createKafka, createProducer } from "../adapters/kafka/client.js";
import { publishEvents } from "../adapters/kafka/event-publisher.js";
import { createSchemaRegistry, registerSchemas } from "../adapters/registry/schema-registry.js";
import type { ProjectorEvent } from "../model/events.js";
import { readerSchema } from "../model/schemas.js";
import { STREAMS, type Stream, topicNames } from "../topics.js";
import { action, cliContext } from "./context.js";
import { printDocument } from "./output.js";

const KIND_OF_STREAM: Record<Stream, ProjectorEvent["kind"]> = {
  "registry-mutation": "registry-snapshot",
  "outcome-created": "outcome-created",
  "escalation-edge": "escalation-edge",
};

/**
 * Parses events from JSON (an array) or NDJSON (one object a line). Each object names its topic in
 * `type` ("registry-mutation", "outcome-created", "escalation-edge") and carries the schema's fields;
 * timestamps may be ISO strings or epoch milliseconds. `{"type":"registry-mutation","agent_id":…,
 * "registry_version":N,"tombstone":true}` publishes a tombstone (N: the version of the deletion). Every object is checked against the Avro schema first, and
 * nothing is published if any fails.
 */
export function parseEventFile(text: string): ProjectorEvent[] {
  const trimmed = text.trim();
  const objects: unknown[] = trimmed.startsWith("[")
    ? (JSON.parse(trimmed) as unknown[])
    : trimmed
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line, n) => {
          try {
            return JSON.parse(line);
          } catch (error) {
            throw new Error(`line ${n + 1}: not JSON: ${(error as Error).message}`);
          }
        });
  const types = new Map(STREAMS.map((stream) => [stream, avro.Type.forSchema(readerSchema(stream) as avro.Schema)]));
  const problems: string[] = [];
  const events = objects.map((object, n) => {
    const { type, tombstone, ...fields } = object as Record<string, unknown>;
    const stream = type as Stream;
    const schema = types.get(stream);
    if (!schema) {
      problems.push(`#${n + 1}: "type" must be one of ${STREAMS.join(", ")}`);
      return undefined;
    }
    if (tombstone === true && stream === "registry-mutation") {
      const version = Number(fields.registry_version);
      if (!Number.isSafeInteger(version) || version < 0) {
        problems.push(`#${n + 1}: a tombstone needs registry_version, the version of the deletion`);
        return undefined;
      }
      return {
        kind: "registry-tombstone",
        agent_id: String(fields.agent_id),
        tenant_id: String(fields.tenant_id ?? "default"),
        registry_version: version,
      } as ProjectorEvent;
    }
    for (const field of ["occurred_at", "created_at", "observed_at"]) {
      if (typeof fields[field] === "string") fields[field] = Date.parse(fields[field] as string);
    }
    // Optional fields may be left out: fill in their schema defaults before checking.
    const value: Record<string, unknown> = { ...fields };
    for (const field of (schema as avro.types.RecordType).fields) {
      if (value[field.name] === undefined && field.defaultValue() !== undefined)
        value[field.name] = field.defaultValue();
    }
    const paths: string[] = [];
    if (!schema.isValid(value, { errorHook: (path) => paths.push(path.join(".")) })) {
      problems.push(`#${n + 1}: invalid ${stream} event at ${paths.join(", ") || "(root)"}`);
      return undefined;
    }
    return { kind: KIND_OF_STREAM[stream], ...value } as ProjectorEvent;
  });
  if (problems.length > 0) throw new Error(`nothing published; fix these first:\n  ${problems.join("\n  ")}`);
  return events as ProjectorEvent[];
}

export function registerProduce(program: Command): void {
  program
    .command("produce")
    .description("publish events from a JSON or NDJSON file, validated against the Avro schemas")
    .argument("<file>", "JSON array or NDJSON; '-' reads standard input")
    .option("--json", "print JSON: one document { published }")
    .action(
      action(async (file: string, options: { json?: boolean }) => {
        const { config, logger } = cliContext();
        const events = parseEventFile(readFileSync(file === "-" ? 0 : file, "utf8"));
        const names = topicNames(config.topics);
        const registry = createSchemaRegistry(config.registry);
        const ids = await registerSchemas(config.registry, names.source);
        const producer = createProducer(createKafka(config.kafka, logger));
        await producer.connect();
        try {
          await publishEvents(producer, registry, ids, names, events);
        } finally {
          await producer.disconnect();
        }
        if (options.json) printDocument({ published: events.length });
        else process.stdout.write(`published ${events.length} event(s)\n`);
      }),
    );
}
