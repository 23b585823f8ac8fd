import type { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import avro from "avsc";
import { classify, errorMessage, TransientError } from "../../errors.js";
import { Rejection } from "../../model/fate.js";
import { readerSchema } from "../../model/schemas.js";
import type { Decoder, DecoderMetrics } from "../../ports.js";
import { STREAMS, type Stream } from "../../topics.js";
import { createMissMemory, MAX_SCHEMA_MISSES } from "./schema-misses.js";

/** The Confluent wire format: a zero magic byte, then the schema id as a 4-byte big-endian integer. */
const MAGIC_BYTE = 0;
const HEADER_BYTES = 5;

export interface DecoderOptions {
  /** How long an id the registry does not know is answered from memory before it is asked again. */
  readonly missTtlMs?: number;
  /** How many such ids are remembered at most; past it the oldest are forgotten. */
  readonly maxMisses?: number;
  readonly now?: () => number;
  readonly metrics?: DecoderMetrics;
}

/**
 * Decodes Confluent-framed Avro (magic byte 0, 4-byte schema id, body) with the writer schema the id
 * names, resolved to our reader schema: whatever the subjects' compatibility level, a producer's
 * schema is read as long as Avro's resolution rules map it onto ours. Writer schemas come from the
 * registry once per id (the client caches them); the resolver from writer to reader is cached per
 * stream and id, so the hot path does no registry call and no schema work. Ids the registry does not
 * know are remembered as misses for `missTtlMs`, so a flood of them costs one request per id per
 * TTL, not one per record. A value that starts with 0x00 without being Confluent-framed carries a
 * random "id": the misses are bounded by age and by `maxMisses` (oldest forgotten first), and the
 * requests for one id are shared by every stream asking at once.
 */
export function createAvroDecoder(registry: SchemaRegistry, options: DecoderOptions = {}): Decoder {
  const missTtlMs = options.missTtlMs ?? 60_000;
  const now = options.now ?? Date.now;
  const metrics = options.metrics;
  const readers = new Map(STREAMS.map((stream) => [stream, avro.Type.forSchema(readerSchema(stream) as avro.Schema)]));
  // Resolutions in progress are shared: a batch's records all ask for the same id at once. Keyed by
  // stream, then id: the lookup runs once per record, and a key string built for it would be garbage.
  const resolvers = new Map(STREAMS.map((stream) => [stream, new Map<number, avro.Resolver | Rejection>()]));
  const misses = createMissMemory(missTtlMs, options.maxMisses ?? MAX_SCHEMA_MISSES, now);
  // One registry request per id in flight, whichever streams ask.
  const lookups = new Map<number, Promise<avro.Type | Rejection>>();
  const pending = new Map<string, Promise<avro.Resolver | Rejection>>();

  function resolverFor(stream: Stream, id: number): avro.Resolver | Rejection | Promise<avro.Resolver | Rejection> {
    const cached = resolvers.get(stream)?.get(id);
    if (cached) return cached;
    const miss = misses.get(id);
    if (miss) return miss;
    const cacheKey = `${stream}:${id}`;
    let resolving = pending.get(cacheKey);
    if (!resolving) {
      resolving = resolve(stream, id).finally(() => pending.delete(cacheKey));
      pending.set(cacheKey, resolving);
    }
    return resolving;
  }

  function writerFor(id: number): Promise<avro.Type | Rejection> {
    let lookup = lookups.get(id);
    if (!lookup) {
      lookup = lookUp(id).finally(() => lookups.delete(id));
      lookups.set(id, lookup);
    }
    return lookup;
  }

  async function lookUp(id: number): Promise<avro.Type | Rejection> {
    let writer: unknown;
    try {
      writer = await registry.getSchema(id);
    } catch (error) {
      const failure = lookupFailure(id, error);
      if (!(failure instanceof Rejection)) throw failure;
      metrics?.recordSchemaIdLookupMiss();
      misses.add(id, failure);
      return failure;
    }
    if (isAvroType(writer)) return writer;
    const rejection = new Rejection("unsupported-schema", `schema id ${id} is not an Avro schema`);
    metrics?.recordSchemaIdLookupMiss();
    misses.add(id, rejection);
    return rejection;
  }

  async function resolve(stream: Stream, id: number): Promise<avro.Resolver | Rejection> {
    const writer = await writerFor(id);
    if (writer instanceof Rejection) return writer;
    let resolved: avro.Resolver | Rejection;
    try {
      resolved = (readers.get(stream) as avro.Type).createResolver(writer);
    } catch (error) {
      resolved = new Rejection(
        "schema-mismatch",
        `writer schema ${id} does not resolve to our ${stream} schema: ${(error as Error).message}`,
      );
    }
    resolvers.get(stream)?.set(id, resolved);
    return resolved;
  }

  return {
    async decode(stream, value) {
      if (value.length < HEADER_BYTES || value[0] !== MAGIC_BYTE) {
        return new Rejection("not-avro", "value does not start with the Confluent magic byte and a schema id");
      }
      const id = value.readInt32BE(1);
      const resolver = await resolverFor(stream, id);
      if (resolver instanceof Rejection) {
        // The resolvers keep only schema mismatches; every other rejection is a miss.
        if (resolver.reason !== "schema-mismatch") metrics?.recordSchemaIdMiss();
        return resolver;
      }
      try {
        // Read in place past the header (fromBuffer would need a Buffer view of the body per record),
        // with fromBuffer's two checks: the body is all there, and nothing follows it.
        const { value: decoded, offset } = (readers.get(stream) as avro.Type).decode(value, HEADER_BYTES, resolver);
        if (offset < 0) return undecodable(id, "truncated buffer");
        if (offset < value.length) return undecodable(id, "trailing data");
        return decoded as Record<string, unknown>;
      } catch (error) {
        return undecodable(id, (error as Error).message);
      }
    },
  };
}

/** A value whose body does not read with its writer schema; `why` in avsc's words. */
function undecodable(id: number, why: string): Rejection {
  return new Rejection("undecodable", `value does not decode with schema id ${id}: ${why}`);
}

/**
 * What a failed schema lookup means. The registry's own answers and failures to reach it arrive as
 * the client's ResponseError (with an HTTP status; unreachable and timed out count as 400) or as a
 * network error: an id it does not know is the record's problem (`unknown-schema-id`), anything else
 * the infrastructure's (a TransientError: the partition pauses). Any other error comes from loading
 * a schema the registry did return (a JSON Schema dialect or Protobuf file the client cannot compile,
 * a type it does not know): retrying cannot change an id's schema, so it is the record's
 * (`unsupported-schema`).
 */
export function lookupFailure(id: number, error: unknown): Rejection | TransientError {
  const { status, message } = (error ?? {}) as { status?: unknown; message?: unknown };
  if (status === 404 || /not found/i.test(String(message)))
    return new Rejection("unknown-schema-id", `schema id ${id} is not in the registry`);
  if (typeof status === "number" || classify(error) === "transient")
    return new TransientError(`schema registry unavailable while fetching schema id ${id}: ${errorMessage(error)}`, {
      cause: error,
    });
  return new Rejection("unsupported-schema", `schema id ${id} cannot be loaded as Avro: ${errorMessage(error)}`);
}

/** An avsc type, whichever copy of avsc made it (the registry client may bundle its own). */
function isAvroType(schema: unknown): schema is avro.Type {
  if (schema instanceof avro.Type) return true;
  const { typeName, createResolver } = (schema ?? {}) as { typeName?: unknown; createResolver?: unknown };
  return typeof typeName === "string" && typeof createResolver === "function";
}
