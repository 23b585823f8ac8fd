import avro from "avsc";
import { describe, expect, it } from "vitest";
import { createMissMemory } from "../../src/adapters/registry/schema-misses.js";
import { createAvroDecoder } from "../../src/adapters/registry/schema-registry.js";
import { TransientError } from "../../src/errors.js";
import { Rejection } from "../../src/model/fate.js";
import { readerSchema } from "../../src/model/schemas.js";

const outcome = {
  event_id: "e",
  tenant_id: "default",
  outcome_id: "o",
  agent_id: "fin-agt-001",
  status: "ok",
  correlation_id: null,
  created_at: 5,
};
const frame = (id: number, body: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, 0, id]), body]);

/** The decoder over an in-memory schema lookup: framing, caching by id, and how lookup failures are classed. */
function decoderWith(schemas: Map<number, avro.Type>, failure?: unknown, clock?: { now: number }) {
  let lookups = 0;
  const registry = {
    async getSchema(id: number) {
      lookups += 1;
      if (failure) throw failure;
      const schema = schemas.get(id);
      if (!schema) throw Object.assign(new Error(`Schema ${id} not found`), { status: 404 });
      return schema;
    },
  };
  const options = clock ? { missTtlMs: 60_000, now: () => clock.now } : {};
  return { decoder: createAvroDecoder(registry as never, options), lookups: () => lookups };
}

describe("the Avro decoder", () => {
  const reader = avro.Type.forSchema(readerSchema("outcome-created") as avro.Schema);

  it("decodes through our reader schema and asks the registry once per schema id", async () => {
    const { decoder, lookups } = decoderWith(new Map([[7, reader]]));
    for (let n = 0; n < 3; n++)
      expect(await decoder.decode("outcome-created", frame(7, reader.toBuffer(outcome)))).toEqual(outcome);
    expect(lookups()).toBe(1);
  });

  it("reads a newer writer schema with an extra optional field", async () => {
    const schema = readerSchema("outcome-created");
    const writer = avro.Type.forSchema({
      ...schema,
      fields: [...(schema.fields as object[]), { name: "priority", type: ["null", "string"], default: null }],
    } as avro.Schema);
    const { decoder } = decoderWith(new Map([[8, writer]]));
    expect(
      await decoder.decode("outcome-created", frame(8, writer.toBuffer({ ...outcome, priority: "high" }))),
    ).toEqual(outcome);
  });

  it.each([
    ["no magic byte", Buffer.from("hello world"), "not-avro"],
    ["too short", Buffer.from([0, 0]), "not-avro"],
    ["unknown id", frame(99, Buffer.from([1])), "unknown-schema-id"],
    ["truncated body", frame(7, reader.toBuffer(outcome).subarray(0, 4)), "undecodable"],
    ["trailing bytes", frame(7, Buffer.concat([reader.toBuffer(outcome), Buffer.from([1, 2, 3])])), "undecodable"],
  ])("rejects %s as %s", async (_name, bytes, reason) => {
    const { decoder } = decoderWith(new Map([[7, reader]]));
    const result = await decoder.decode("outcome-created", bytes);
    expect(result).toBeInstanceOf(Rejection);
    expect((result as Rejection).reason).toBe(reason);
  });

  it("rejects a writer schema that cannot resolve to ours, once, and caches the verdict", async () => {
    const schema = readerSchema("outcome-created");
    const writer = avro.Type.forSchema({
      ...schema,
      fields: (schema.fields as { name: string }[]).filter((f) => f.name !== "agent_id"),
    } as avro.Schema);
    const { decoder, lookups } = decoderWith(new Map([[9, writer]]));
    const { agent_id: _drop, ...rest } = outcome;
    for (let n = 0; n < 2; n++)
      expect((await decoder.decode("outcome-created", frame(9, writer.toBuffer(rest)))) as Rejection).toMatchObject({
        reason: "schema-mismatch",
      });
    expect(lookups()).toBe(1);
  });

  it("throws a TransientError when the registry cannot be reached, so the partition pauses", async () => {
    const { decoder } = decoderWith(
      new Map(),
      Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
    );
    await expect(decoder.decode("outcome-created", frame(7, reader.toBuffer(outcome)))).rejects.toBeInstanceOf(
      TransientError,
    );
  });

  it.each([
    ["a schema the client cannot compile (a JSON Schema dialect)", new Error('no schema with key or ref "x"')],
    [
      "a schema type the client does not know",
      Object.assign(new Error("invalid schemaType"), { name: "ArgumentError" }),
    ],
  ])("rejects %s as unsupported-schema, remembered as a miss", async (_name, failure) => {
    const { decoder, lookups } = decoderWith(new Map(), failure);
    for (let n = 0; n < 20; n++) {
      const result = await decoder.decode("outcome-created", frame(7, Buffer.from("{}")));
      expect(result).toMatchObject({ reason: "unsupported-schema" });
    }
    expect(lookups()).toBe(1);
  });

  it("rejects a schema the client loads that is not Avro (JSON Schema, Protobuf) as unsupported-schema", async () => {
    const jsonSchema = { validate: () => true };
    const { decoder, lookups } = decoderWith(new Map([[7, jsonSchema as unknown as avro.Type]]));
    for (let n = 0; n < 5; n++)
      expect(await decoder.decode("outcome-created", frame(7, Buffer.from("{}")))).toMatchObject({
        reason: "unsupported-schema",
      });
    expect(lookups()).toBe(1);
  });

  it.each([
    ["unreachable (the client's ResponseError, status 400)", { name: "ResponseError", status: 400 }],
    ["answering 500", { name: "ResponseError", status: 500 }],
    ["refusing our credentials", { name: "ResponseError", status: 401 }],
  ])("a registry %s is an infrastructure failure", async (_name, fields) => {
    const { decoder } = decoderWith(new Map(), Object.assign(new Error("registry trouble"), fields));
    await expect(decoder.decode("outcome-created", frame(7, reader.toBuffer(outcome)))).rejects.toBeInstanceOf(
      TransientError,
    );
  });

  it("remembers an unknown schema id as a miss for a while: a flood of them asks the registry once", async () => {
    const clock = { now: 0 };
    const { decoder, lookups } = decoderWith(new Map(), undefined, clock);
    const unknown = frame(9, reader.toBuffer(outcome));
    for (let n = 0; n < 50; n++) {
      const result = await decoder.decode("outcome-created", unknown);
      expect(result).toBeInstanceOf(Rejection);
      expect((result as Rejection).reason).toBe("unknown-schema-id");
    }
    expect(lookups()).toBe(1);
    clock.now = 60_001;
    await decoder.decode("outcome-created", unknown);
    expect(lookups()).toBe(2);
  });
});

describe("the decoder's memory of unknown schema ids", () => {
  const reader = avro.Type.forSchema(readerSchema("outcome-created") as avro.Schema);
  /** A value that starts with 0x00 without being Confluent-framed: its "id" is whatever follows. */
  const framedAs = (id: number) => {
    const value = Buffer.alloc(9);
    value.writeInt32BE(id, 1);
    return value;
  };

  function flooded(options: { maxMisses?: number } = {}) {
    const clock = { now: 0 };
    const asked: number[] = [];
    const registry = {
      async getSchema(id: number) {
        asked.push(id);
        await new Promise((resolve) => setTimeout(resolve, 1));
        if (id === 7) return reader;
        throw Object.assign(new Error(`Schema ${id} not found`), { status: 404 });
      },
    };
    const counted = { misses: 0, lookups: 0 };
    const metrics = {
      recordSchemaIdMiss: () => counted.misses++,
      recordSchemaIdLookupMiss: () => counted.lookups++,
    };
    const decoder = createAvroDecoder(registry as never, {
      missTtlMs: 60_000,
      now: () => clock.now,
      metrics,
      ...options,
    });
    return { decoder, clock, asked, counted };
  }

  it("a flood asks the registry once per id per TTL, whichever streams ask at once, and counts every miss", async () => {
    const { decoder, clock, asked, counted } = flooded();
    const ids = [101, 102, 103];
    const flood = () =>
      Promise.all(
        Array.from({ length: 300 }, (_, n) =>
          decoder.decode(n % 2 ? "outcome-created" : "escalation-edge", framedAs(ids[n % 3] as number)),
        ),
      );
    for (const result of await flood()) expect(result).toMatchObject({ reason: "unknown-schema-id" });
    expect(asked.sort()).toEqual(ids);
    expect(counted).toEqual({ misses: 300, lookups: 3 });

    clock.now = 59_999;
    await flood();
    expect(asked).toHaveLength(3);
    clock.now = 60_001;
    await flood();
    expect(asked).toHaveLength(6);
    expect(counted).toEqual({ misses: 900, lookups: 6 });
    // A known id is no miss.
    expect(await decoder.decode("outcome-created", frame(7, reader.toBuffer(outcome)))).toEqual(outcome);
    expect(counted.misses).toBe(900);
  });

  it("a flood of distinct ids is answered, one request each, while the memory stays within its bound", async () => {
    const { decoder, asked, counted } = flooded({ maxMisses: 50 });
    for (let id = 1_000; id < 1_500; id++)
      expect(await decoder.decode("outcome-created", framedAs(id))).toMatchObject({ reason: "unknown-schema-id" });
    expect(asked).toHaveLength(500);
    expect(counted).toEqual({ misses: 500, lookups: 500 });
    // The newest are remembered; the oldest were forgotten to make room and are asked again.
    await decoder.decode("outcome-created", framedAs(1_499));
    expect(asked).toHaveLength(500);
    await decoder.decode("outcome-created", framedAs(1_000));
    expect(asked).toHaveLength(501);
  });

  it("holds at most its capacity and drops expired ids as new ones come", () => {
    const clock = { now: 0 };
    const memory = createMissMemory(1_000, 100, () => clock.now);
    const miss = new Rejection("unknown-schema-id", "x");
    for (let id = 0; id < 10_000; id++) memory.add(id, miss);
    expect(memory.size).toBe(100);
    expect(memory.get(9_999)).toBe(miss);
    expect(memory.get(0)).toBeUndefined();

    clock.now = 1_001;
    expect(memory.get(9_999)).toBeUndefined();
    memory.add(1, miss);
    // Every entry older than the TTL went with the first add after it.
    expect(memory.size).toBe(1);
    expect(memory.get(1)).toBe(miss);
  });
});
