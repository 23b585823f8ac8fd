import { COMPATIBILITY, SchemaType } from "@kafkajs/confluent-schema-registry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProjectorEvent } from "../../src/model/events.js";
import { readerSchema } from "../../src/model/schemas.js";
import { HEADER, type Stream } from "../../src/topics.js";
import { escalation, outcome, overlong, snapshot, tool, workflow } from "../support/builders.js";
import { type DeadLetter, Harness } from "../support/harness.js";

/**
 * A catalogue of inputs that can never apply. Each is published between two good records on the same
 * partition; each must reach the dead-letter topic with its reason and its original bytes, and the
 * good records around it must be applied. Poison only Neo4j recognises (values past its index limit,
 * a record too heavy for its transaction timeout) is catalogued in poison.int.spec.ts, records too
 * large to hand on as they are in handoff.int.spec.ts.
 */
describe("bad input goes to the dead-letter topic with a reason; the partition keeps flowing", () => {
  let harness: Harness;
  let schemaIds: Record<Stream, number>;

  beforeAll(async () => {
    harness = await Harness.create("badinput", {
      MAX_LIST_LENGTH: "5",
      RETRY_MAX_ATTEMPTS: "3",
      TOPIC_PARTITIONS: "1",
    });
    await harness.clearGraph();
    schemaIds = (harness as unknown as { schemaIds: Record<Stream, number> }).schemaIds;
    await harness.startProjector();
    await harness.publish([snapshot("fin-agt-001"), snapshot("fin-agt-002")]);
    await harness.waitForCaughtUp();
  });
  afterAll(() => harness?.close());

  const encode = (event: ProjectorEvent) => harness.encode(event);

  async function registerVariant(
    stream: Stream,
    mutate: (fields: Record<string, unknown>[]) => Record<string, unknown>[],
  ): Promise<number> {
    const schema = readerSchema(stream);
    const variant = { ...schema, fields: mutate(schema.fields as Record<string, unknown>[]) };
    const { id } = await harness.registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(variant) },
      { subject: `variant-${stream}-${Math.random().toString(36).slice(2)}-value`, compatibility: COMPATIBILITY.NONE },
    );
    return id;
  }

  /**
   * Registers a schema of another type (Apicurio's Confluent API takes `schemaType` on register) and
   * frames `body` with its id, as a producer using that format would.
   */
  async function framedWithForeignSchema(schemaType: "JSON" | "PROTOBUF", schema: string, body: Buffer) {
    const subject = `foreign-${schemaType.toLowerCase()}-${Math.random().toString(36).slice(2)}-value`;
    const response = await fetch(`${harness.config.registry.url}/subjects/${subject}/versions`, {
      method: "POST",
      headers: { "content-type": "application/vnd.schemaregistry.v1+json" },
      body: JSON.stringify({ schema, schemaType }),
    });
    const { id } = (await response.json()) as { id: number };
    expect(response.ok && typeof id === "number").toBe(true);
    const frame = Buffer.alloc(5);
    frame.writeInt32BE(id, 1);
    return Buffer.concat([frame, body]);
  }

  const deadLetters = () => harness.deadLetters();

  const cases: {
    name: string;
    stream: Stream;
    reason: string;
    bad: () => Promise<{ key: string | null; value: Buffer | null; headers?: Record<string, string> }>;
  }[] = [
    {
      name: "bytes without the magic byte",
      stream: "outcome-created",
      reason: "not-avro",
      bad: async () => ({ key: "k-not-avro", value: Buffer.from("plain text, not avro") }),
    },
    {
      name: "an unknown schema id",
      stream: "outcome-created",
      reason: "unknown-schema-id",
      bad: async () => ({
        key: "k-unknown-id",
        value: Buffer.concat([Buffer.from([0, 0x0f, 0x42, 0x40, 0x00]), Buffer.from([2, 65])]),
      }),
    },
    {
      name: "a writer schema missing a required field",
      stream: "outcome-created",
      reason: "schema-mismatch",
      bad: async () => {
        const id = await registerVariant("outcome-created", (fields) => fields.filter((f) => f.name !== "agent_id"));
        const { kind: _k, agent_id: _a, ...value } = outcome("o-missing-field", "fin-agt-001");
        return { key: "k-missing-field", value: await harness.registry.encode(id, value) };
      },
    },
    {
      name: "a mistyped field (registry_version as a string)",
      stream: "registry-mutation",
      reason: "schema-mismatch",
      bad: async () => {
        const id = await registerVariant("registry-mutation", (fields) =>
          fields.map((f) => (f.name === "registry_version" ? { ...f, type: "string" } : f)),
        );
        const { kind: _k, ...value } = snapshot("fin-agt-003");
        return { key: "fin-agt-003", value: await harness.registry.encode(id, { ...value, registry_version: "one" }) };
      },
    },
    ...(["http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema"] as const).map(
      (dialect) => ({
        // The client compiles a draft-07 schema and cannot compile a 2020-12 one: unsupported either way.
        name: `a record framed with the id of a JSON Schema (${dialect.includes("2020") ? "2020-12" : "draft-07"})`,
        stream: "outcome-created" as const,
        reason: "unsupported-schema",
        bad: async () => {
          const schema = JSON.stringify({
            $schema: dialect,
            type: "object",
            properties: { outcome_id: { type: "string" } },
          });
          const value = await framedWithForeignSchema("JSON", schema, Buffer.from('{"outcome_id":"o-json"}'));
          return { key: "k-json-schema", value };
        },
      }),
    ),
    {
      name: "a record framed with the id of a Protobuf schema",
      stream: "registry-mutation",
      reason: "unsupported-schema",
      bad: async () => {
        const schema = 'syntax = "proto3";\npackage agp.test;\nmessage Agent { string agent_id = 1; }\n';
        // Confluent's Protobuf framing: after the id, the message indexes ([0] as a single 0 byte).
        const value = await framedWithForeignSchema("PROTOBUF", schema, Buffer.from([0, 0x0a, 3, 0x61, 0x62, 0x63]));
        return { key: "fin-agt-proto", value };
      },
    },
    {
      name: "a truncated Avro body",
      stream: "escalation-edge",
      reason: "undecodable",
      bad: async () => {
        const message = await encode(escalation("o-a", "o-b"));
        return { key: "k-truncated", value: (message.value as Buffer).subarray(0, 9) };
      },
    },
    {
      name: "a registry agent_id off the <prefix>-agt-NNN convention",
      stream: "registry-mutation",
      reason: "malformed-id",
      bad: async () => (await encode(snapshot("agent-7"))) as never,
    },
    {
      name: "a tenant this deployment does not serve",
      stream: "outcome-created",
      reason: "unserved-tenant",
      bad: async () => (await encode(outcome("o-foreign", "fin-agt-001", { tenant_id: "acme" }))) as never,
    },
    {
      name: "a tools list past MAX_LIST_LENGTH",
      stream: "registry-mutation",
      reason: "list-too-long",
      bad: async () =>
        (await encode(snapshot("fin-agt-004", { tools: ["a", "b", "c", "d", "e", "f"].map(tool) }))) as never,
    },
    {
      name: "an empty event_id",
      stream: "outcome-created",
      reason: "invalid-field",
      bad: async () => (await encode(outcome("o-empty-event", "fin-agt-001", { event_id: "" }))) as never,
    },
    {
      name: "an outcome escalating to itself",
      stream: "escalation-edge",
      reason: "invalid-field",
      bad: async () => (await encode(escalation("o-self", "o-self"))) as never,
    },
    {
      name: "a null value on the outcome topic",
      stream: "outcome-created",
      reason: "not-avro",
      bad: async () => ({ key: "k-null", value: null }),
    },
    {
      name: "an agent_id of 40,000 characters",
      stream: "registry-mutation",
      reason: "value-too-long",
      bad: async () => (await encode(snapshot(overlong("-agt-001")))) as never,
    },
    {
      name: "a tool_id of 40,000 characters",
      stream: "registry-mutation",
      reason: "value-too-long",
      bad: async () => (await encode(snapshot("fin-agt-005", { tools: [tool(overlong("-tool"))] }))) as never,
    },
    {
      name: "a workflow_id of 40,000 characters",
      stream: "registry-mutation",
      reason: "value-too-long",
      bad: async () =>
        (await encode(snapshot("fin-agt-006", { owned_workflows: [workflow(overlong("-wf"))] }))) as never,
    },
    {
      name: "an outcome_id of 40,000 characters",
      stream: "outcome-created",
      reason: "value-too-long",
      bad: async () => (await encode(outcome(overlong("-o"), "fin-agt-001"))) as never,
    },
    {
      name: "escalation outcome ids of 40,000 characters",
      stream: "escalation-edge",
      reason: "value-too-long",
      bad: async () => (await encode(escalation(overlong("-src"), overlong("-dst")))) as never,
    },
    {
      name: "an outcome whose agent never registers within the retry bound",
      stream: "outcome-created",
      reason: "precondition-timeout",
      bad: async () => (await encode(outcome("o-orphan", "ghost-agt-404"))) as never,
    },
  ];

  it.each(cases)("$name → $reason", async ({ stream, reason, bad }) => {
    const topic = harness.names.source[stream];
    const tag = reason + Math.random().toString(36).slice(2, 8);
    const good = (n: number): ProjectorEvent =>
      stream === "registry-mutation"
        ? snapshot(`good${tag}-agt-${n}`)
        : stream === "outcome-created"
          ? outcome(`good-${tag}-${n}`, "fin-agt-001")
          : escalation(`good-${tag}-src-${n}`, `good-${tag}-dst-${n}`);
    if (stream === "escalation-edge") {
      await harness.publish(
        [1, 2].flatMap((n) => [
          outcome(`good-${tag}-src-${n}`, "fin-agt-001"),
          outcome(`good-${tag}-dst-${n}`, "fin-agt-002"),
        ]),
      );
      await harness.waitForCaughtUp();
    }
    const poison = await bad();
    await harness.sendRaw(topic, [
      await encode(good(1)),
      { key: poison.key, value: poison.value, headers: { ...poison.headers, "x-trace": tag } },
      await encode(good(2)),
    ] as never);
    await harness.waitForCaughtUp();

    const letters = (await deadLetters()).filter((letter) => letter.headers["x-trace"] === tag);
    expect(letters).toHaveLength(1);
    const [letter] = letters as [DeadLetter];
    expect(letter.headers[HEADER.errorClass]).toBe(reason);
    expect(letter.headers[HEADER.errorMessage]?.length).toBeGreaterThan(0);
    expect(letter.headers[HEADER.sourceTopic]).toBe(topic);
    expect(letter.headers[HEADER.sourcePartition]).toBe("0");
    expect(Number(letter.headers[HEADER.sourceOffset])).toBeGreaterThanOrEqual(0);
    expect(letter.headers[HEADER.sourceTimestamp]).toMatch(/^\d+$/);
    expect(letter.headers[HEADER.serviceVersion]).toMatch(/^\d+\.\d+\.\d+/);
    expect(letter.key).toBe(poison.key);
    expect(letter.value === null ? null : Buffer.from(letter.value).equals(poison.value as Buffer)).toBe(
      poison.value === null ? null : true,
    );

    const graph = await harness.dump();
    const applied = (n: number) => {
      const event = good(n);
      if (event.kind === "registry-snapshot")
        return graph.nodes.some((line) => line.startsWith(`Agent:${event.agent_id} `) && line.includes('"status"'));
      if (event.kind === "outcome-created")
        return graph.relationships.some(
          (line) =>
            line.startsWith("Agent:fin-agt-001 -[PRODUCED]-> ") && line.includes(`Outcome:${event.outcome_id} `),
        );
      return graph.relationships.some((line) => line.startsWith(`Outcome:good-${tag}-src-${n} -[OBSERVED]->`));
    };
    expect([applied(1), applied(2)]).toEqual([true, true]);
  });

  it("a foreign tenant's snapshot for an existing agent id changes nothing", async () => {
    const before = await harness.dump();
    await harness.publish([
      snapshot("fin-agt-001", { tenant_id: "acme", registry_version: 99, name: "hijacked", tools: [tool("t-evil")] }),
    ]);
    await harness.waitForCaughtUp();
    expect(await harness.dump()).toEqual(before);
    const letters = await deadLetters();
    expect(
      letters.some((l) => l.key === "acme/fin-agt-001" && l.headers[HEADER.errorClass] === "unserved-tenant"),
    ).toBe(true);
  });

  it("a producer on a newer backward-compatible schema (one more optional field) is read through our reader schema", async () => {
    const schema = readerSchema("outcome-created");
    const v2 = {
      ...schema,
      fields: [...(schema.fields as object[]), { name: "priority", type: ["null", "string"], default: null }],
    };
    const id = await harness.registerVersion("outcome-created", v2);
    expect(id).not.toBe(schemaIds["outcome-created"]);
    const { kind: _k, ...value } = outcome("o-v2", "fin-agt-002");
    await harness.sendRaw(harness.names.source["outcome-created"], [
      { key: "o-v2", value: await harness.registry.encode(id, { ...value, priority: "high" }) },
    ]);
    await harness.waitForCaughtUp();
    const graph = await harness.dump();
    expect(graph.relationships.some((line) => line.startsWith("Agent:fin-agt-002 -[PRODUCED]-> Outcome:o-v2 "))).toBe(
      true,
    );
  });
});
