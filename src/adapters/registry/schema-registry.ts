import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { COMPATIBILITY, SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import avro from "avsc";
import { TimeoutMiddleware } from "mappersmith/middleware/timeout";
import type { Config } from "../../config.js";
import { TransientError } from "../../errors.js";
import { Rejection } from "../../model/fate.js";
import { readerSchema, STREAMS } from "../../model/schemas.js";
import type { Decoder, Stream } from "../../ports.js";

const MAGIC_BYTE = 0;
const HEADER_BYTES = 5;

/**
 * The registry client. Every request has a deadline: a registry that accepts connections but never
 * answers must surface as a transient failure (the partition pauses and retries), not hang a batch.
 */
export function createSchemaRegistry(config: Config["registry"], timeoutMs = 5_000): SchemaRegistry {
  const agent = registryAgent(config);
  return new SchemaRegistry({
    host: config.url,
    ...(config.auth ? { auth: config.auth } : {}),
    ...(agent ? { agent } : {}),
    retry: { retries: 2, maxRetryTimeInSecs: 2 },
    // The client and this import see mappersmith through different (CJS/ESM) type declarations.
    middlewares: [TimeoutMiddleware(timeoutMs) as never],
  });
}

/** An HTTPS agent trusting the configured CA file (and presenting the client certificate), if any. */
function registryAgent(config: Config["registry"]): https.Agent | undefined {
  const { caFile, certFile, keyFile } = config.tls;
  if (!caFile && !certFile) return undefined;
  return new https.Agent({
    keepAlive: true,
    ...(caFile ? { ca: readFileSync(caFile, "utf8") } : {}),
    ...(certFile && keyFile ? { cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8") } : {}),
  });
}

/** Readiness: `GET /subjects` answers 2xx within `timeoutMs`, with the same TLS and credentials as the client. */
export function createRegistryPing(config: Config["registry"], timeoutMs: number): () => Promise<boolean> {
  const agent = registryAgent(config);
  const url = `${config.url.replace(/\/$/, "")}/subjects`;
  const headers: Record<string, string> = config.auth
    ? { authorization: `Basic ${Buffer.from(`${config.auth.username}:${config.auth.password}`).toString("base64")}` }
    : {};
  const client = url.startsWith("https:") ? https : http;
  return () =>
    new Promise((resolve) => {
      const request = client.get(url, { headers, timeout: timeoutMs, ...(agent ? { agent } : {}) }, (response) => {
        response.resume();
        const status = response.statusCode ?? 0;
        resolve(status >= 200 && status < 300);
      });
      request.on("timeout", () => request.destroy(new Error("timeout")));
      request.on("error", () => resolve(false));
    });
}

/**
 * Decodes Confluent-framed Avro (magic byte 0, 4-byte schema id, body) through our reader schema, so a
 * producer on a newer backward-compatible schema is read as we expect. Writer schemas come from the
 * registry once per id (the client caches them); the resolver from writer to reader is cached per
 * stream and id, so the hot path does no registry call and no schema work.
 */
export function createAvroDecoder(registry: SchemaRegistry): Decoder {
  const readers = new Map(STREAMS.map((stream) => [stream, avro.Type.forSchema(readerSchema(stream) as avro.Schema)]));
  // Resolutions in progress are shared: a batch's records all ask for the same id at once.
  const resolvers = new Map<string, avro.Resolver | Rejection>();
  const pending = new Map<string, Promise<avro.Resolver | Rejection>>();

  function resolverFor(stream: Stream, id: number): avro.Resolver | Rejection | Promise<avro.Resolver | Rejection> {
    const cacheKey = `${stream}:${id}`;
    const cached = resolvers.get(cacheKey);
    if (cached) return cached;
    let resolving = pending.get(cacheKey);
    if (!resolving) {
      resolving = resolve(stream, id, cacheKey).finally(() => pending.delete(cacheKey));
      pending.set(cacheKey, resolving);
    }
    return resolving;
  }

  async function resolve(stream: Stream, id: number, cacheKey: string): Promise<avro.Resolver | Rejection> {
    let writer: avro.Type;
    try {
      writer = (await registry.getSchema(id)) as unknown as avro.Type;
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status === 404 || /not found/i.test(String((error as Error).message))) {
        return new Rejection("unknown-schema-id", `schema id ${id} is not in the registry`);
      }
      throw new TransientError(
        `schema registry unavailable while fetching schema id ${id}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    let resolved: avro.Resolver | Rejection;
    try {
      resolved = (readers.get(stream) as avro.Type).createResolver(writer);
    } catch (error) {
      resolved = new Rejection(
        "schema-mismatch",
        `writer schema ${id} does not resolve to our ${stream} schema: ${(error as Error).message}`,
      );
    }
    resolvers.set(cacheKey, resolved);
    return resolved;
  }

  return {
    async decode(stream, value) {
      if (value.length < HEADER_BYTES || value[0] !== MAGIC_BYTE) {
        return new Rejection("not-avro", "value does not start with the Confluent magic byte and a schema id");
      }
      const id = value.readInt32BE(1);
      const resolver = await resolverFor(stream, id);
      if (resolver instanceof Rejection) return resolver;
      try {
        return (readers.get(stream) as avro.Type).fromBuffer(value.subarray(HEADER_BYTES), resolver) as Record<
          string,
          unknown
        >;
      } catch (error) {
        return new Rejection("undecodable", `value does not decode with schema id ${id}: ${(error as Error).message}`);
      }
    },
  };
}

/** Registers our schemas under `<topic>-value` (TopicNameStrategy) with BACKWARD compatibility. */
export async function registerSchemas(
  registry: SchemaRegistry,
  topics: Readonly<Record<Stream, string>>,
): Promise<Record<Stream, number>> {
  const ids = {} as Record<Stream, number>;
  for (const stream of STREAMS) {
    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(readerSchema(stream)) },
      { subject: `${topics[stream]}-value`, compatibility: COMPATIBILITY.BACKWARD },
    );
    ids[stream] = id;
  }
  return ids;
}
