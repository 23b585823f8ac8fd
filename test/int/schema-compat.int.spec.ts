import { afterAll, describe, expect, it } from "vitest";
import { COMPATIBILITY_LEVELS, compatibilityOf } from "../../src/adapters/registry/schema-registry.js";
import { readerSchema } from "../../src/model/schemas.js";
import { STREAMS, type Stream } from "../../src/topics.js";
import { escalation, outcome, snapshot } from "../support/builders.js";
import { Harness } from "../support/harness.js";

/** The registry's REST API as a producer's build would call it. */
async function registry(harness: Harness, method: string, path: string, body?: unknown) {
  const response = await fetch(`${harness.config.registry.url}${path}`, {
    method,
    headers: { "content-type": "application/vnd.schemaregistry.v1+json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as Record<string, unknown> | unknown[];
  if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/**
 * Producers own the schemas: they create the subjects, set the compatibility level they like and
 * register their own versions before the projector ever starts. At every level the projector must read their records (writer
 * schema by id, resolved to our reader schema) and leave the subjects exactly as it found them.
 */
describe("subjects a producer registered first, at every compatibility level", () => {
  const harnesses: Harness[] = [];
  afterAll(async () => {
    for (const harness of harnesses) await harness.close();
  });

  it.each(COMPATIBILITY_LEVELS)("%s: decoded through the producer's schemas, subjects untouched", async (level) => {
    const harness = await Harness.create(
      `compat-${level.toLowerCase()}`,
      { TOPIC_PARTITIONS: "1" },
      {
        registerSchemas: false,
      },
    );
    harnesses.push(harness);
    await harness.clearGraph();

    // The producer: v1 (our schema), its level, then v2 (one more optional field). Apicurio takes a
    // subject's level only once the subject exists.
    const v1 = {} as Record<Stream, number>;
    const v2 = {} as Record<Stream, number>;
    for (const stream of STREAMS) {
      const subject = encodeURIComponent(`${harness.names.source[stream]}-value`);
      const register = async (schema: object) =>
        (
          (await registry(harness, "POST", `/subjects/${subject}/versions`, { schema: JSON.stringify(schema) })) as {
            id: number;
          }
        ).id;
      const schema = readerSchema(stream);
      v1[stream] = await register(schema);
      await registry(harness, "PUT", `/config/${subject}`, { compatibility: level });
      v2[stream] = await register({
        ...schema,
        fields: [...(schema.fields as object[]), { name: "producer_note", type: ["null", "string"], default: null }],
      });
    }
    const versionsBefore = await Promise.all(
      STREAMS.map((stream) =>
        registry(harness, "GET", `/subjects/${encodeURIComponent(`${harness.names.source[stream]}-value`)}/versions`),
      ),
    );

    await harness.startProjector();
    // Agents written with v1, outcomes and escalations with v2 (carrying the extra field).
    harness.useSchemaIds(v1);
    await harness.publish([snapshot("cmp-agt-001"), snapshot("cmp-agt-002")]);
    harness.useSchemaIds(v2);
    const note = { producer_note: "from v2" };
    const encodeV2 = async (stream: Stream, event: ReturnType<typeof outcome> | ReturnType<typeof escalation>) => {
      const { kind: _kind, ...value } = event;
      return harness.registry.encode(v2[stream], { ...value, ...note });
    };
    await harness.sendRaw(harness.names.source["outcome-created"], [
      { key: "cmp-o1", value: await encodeV2("outcome-created", outcome("cmp-o1", "cmp-agt-001")) },
      { key: "cmp-o2", value: await encodeV2("outcome-created", outcome("cmp-o2", "cmp-agt-002")) },
    ]);
    await harness.waitForCaughtUp();
    await harness.sendRaw(harness.names.source["escalation-edge"], [
      { key: "cmp-o1", value: await encodeV2("escalation-edge", escalation("cmp-o1", "cmp-o2")) },
    ]);
    await harness.waitForCaughtUp();

    const graph = await harness.dump();
    expect(graph.relationships.filter((line) => line.includes("PRODUCED"))).toHaveLength(2);
    expect(graph.relationships.some((line) => line.startsWith("Outcome:cmp-o1 -[ESCALATED_TO]-> Outcome:cmp-o2"))).toBe(
      true,
    );
    expect(
      graph.relationships.some((line) => line.startsWith("Agent:cmp-agt-001 -[CAN_ESCALATE_TO]-> Agent:cmp-agt-002")),
    ).toBe(true);
    expect(await harness.deadLetters()).toEqual([]);

    for (const stream of STREAMS) {
      expect(await compatibilityOf(harness.config.registry, `${harness.names.source[stream]}-value`)).toBe(level);
    }
    const versionsAfter = await Promise.all(
      STREAMS.map((stream) =>
        registry(harness, "GET", `/subjects/${encodeURIComponent(`${harness.names.source[stream]}-value`)}/versions`),
      ),
    );
    expect(versionsAfter).toEqual(versionsBefore);
    await harness.stopProjectors();
  });
});
