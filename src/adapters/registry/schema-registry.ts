import http from "node:http";
import https from "node:https";
import { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import { TimeoutMiddleware } from "mappersmith/middleware/timeout";
import type { Config } from "../../config.js";
import { FatalError, isTlsTrustFailure, TransientError } from "../../errors.js";
import { readerSchema } from "../../model/schemas.js";
import { systemSleep } from "../../ports.js";
import { redactUserinfo } from "../../redact.js";
import { STREAMS, type Stream } from "../../topics.js";
import { currentPem, currentSecret } from "../credentials.js";

export { createAvroDecoder, type DecoderOptions, lookupFailure } from "./avro-decoder.js";

/** How often a registration answered 409 is asked again (see registerSubject). */
const REGISTER_CONFLICT_RETRIES = 3;

/**
 * The registry client. Every request has a deadline: a registry that accepts connections but never
 * answers must surface as a transient failure (the partition pauses and retries), not hang a batch.
 */
export function createSchemaRegistry(config: Config["registry"], timeoutMs = 5_000): SchemaRegistry {
  const agent = agentFor(config);
  return new SchemaRegistry({
    host: config.url,
    ...(config.auth ? { auth: authFor(config.auth) } : {}),
    ...(agent ? { agent } : {}),
    retry: { retries: 2, maxRetryTimeInSecs: 2 },
    // The client and this import see mappersmith through different (CJS/ESM) type declarations.
    middlewares: [TimeoutMiddleware(timeoutMs) as never],
  });
}

type RegistryAuth = NonNullable<Config["registry"]["auth"]>;
const auths = new WeakMap<RegistryAuth, { readonly username: string; readonly password: string }>();

/**
 * Basic-auth credentials whose password is read from its file for every request (the client copies
 * them into each request), so a rotated password is used without a restart.
 */
function authFor(auth: RegistryAuth): { readonly username: string; readonly password: string } {
  let current = auths.get(auth);
  if (!current) {
    const password = currentSecret(auth.password, auth.passwordFile);
    current = Object.defineProperty({ username: auth.username }, "password", { enumerable: true, get: password }) as {
      username: string;
      password: string;
    };
    auths.set(auth, current);
  }
  return current;
}

const agents = new WeakMap<Config["registry"], https.Agent | undefined>();

/** The registry's TLS agent, made once per configuration. */
function agentFor(config: Config["registry"]): https.Agent | undefined {
  if (!agents.has(config)) agents.set(config, registryAgent(config));
  return agents.get(config);
}

/**
 * An HTTPS agent trusting the configured CA file (and presenting the client certificate), if any. The
 * files are read again for each new connection, so renewed certificates are used without a restart.
 */
function registryAgent(config: Config["registry"]): https.Agent | undefined {
  const { caFile, certFile, keyFile } = config.tls;
  if (!caFile && !certFile) return undefined;
  const ca = caFile ? currentPem(caFile) : undefined;
  const pair = certFile && keyFile ? { cert: currentPem(certFile), key: currentPem(keyFile) } : undefined;
  class RotatingAgent extends https.Agent {
    override createConnection(...[options, callback]: Parameters<https.Agent["createConnection"]>) {
      const fresh = {
        ...options,
        ...(ca ? { ca: ca() } : {}),
        ...(pair ? { cert: pair.cert(), key: pair.key() } : {}),
      };
      return super.createConnection(fresh, callback);
    }
  }
  return new RotatingAgent({ keepAlive: true });
}

/** Readiness: the same authenticated `GET /subjects` as start-up, answered 2xx within `timeoutMs`. */
export function createRegistryPing(config: Config["registry"], timeoutMs: number): () => Promise<boolean> {
  return () =>
    checkRegistry(config, timeoutMs).then(
      () => true,
      () => false,
    );
}

/** The compatibility levels a Confluent-compatible registry knows. */
export const COMPATIBILITY_LEVELS = [
  "NONE",
  "BACKWARD",
  "BACKWARD_TRANSITIVE",
  "FORWARD",
  "FORWARD_TRANSITIVE",
  "FULL",
  "FULL_TRANSITIVE",
] as const;
export type CompatibilityLevel = (typeof COMPATIBILITY_LEVELS)[number];

interface RegistryAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/**
 * One request to the registry's REST API, for what the client library cannot do the way we need:
 * registering without touching a subject's compatibility, and a health check with our credentials.
 * Unreachable or 5xx is a TransientError; refused credentials a FatalError; other answers are returned.
 */
async function registryRequest(
  config: Config["registry"],
  method: "GET" | "POST" | "PUT",
  path: string,
  body?: unknown,
  timeoutMs = 5_000,
): Promise<RegistryAnswer> {
  const headers: Record<string, string> = { accept: "application/vnd.schemaregistry.v1+json, application/json" };
  const payload = body === undefined ? undefined : JSON.stringify(body);
  if (payload !== undefined) {
    headers["content-type"] = "application/vnd.schemaregistry.v1+json";
    headers["content-length"] = String(Buffer.byteLength(payload));
  }
  if (config.auth) {
    const { username, password } = authFor(config.auth);
    const token = Buffer.from(`${username}:${password}`).toString("base64");
    headers.authorization = `Basic ${token}`;
  }
  const url = `${config.url.replace(/\/$/, "")}${path}`;
  const shown = redactUserinfo(config.url);
  const agent = agentFor(config);
  const client = url.startsWith("https:") ? https : http;
  let status: number;
  let text: string;
  try {
    ({ status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = client.request(
        url,
        { method, headers, timeout: timeoutMs, ...(agent ? { agent } : {}) },
        (response) => {
          let data = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => (data += chunk));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, text: data }));
          response.on("error", reject);
        },
      );
      request.on("timeout", () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.on("error", reject);
      request.end(payload);
    }));
  } catch (error) {
    if (isTlsTrustFailure(error)) {
      throw new FatalError(`schema registry at ${shown}: TLS: ${(error as Error).message}`, { cause: error });
    }
    throw new TransientError(`schema registry at ${shown} unreachable: ${(error as Error).message}`, {
      cause: error,
    });
  }
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    parsed = { message: text.slice(0, 500) };
  }
  if (status === 401 || status === 403) {
    throw new FatalError(`schema registry at ${shown} refused our credentials (HTTP ${status})`);
  }
  if (status >= 500) {
    throw new TransientError(`schema registry at ${shown} answered HTTP ${status}: ${String(parsed.message ?? "")}`);
  }
  return { status, body: parsed };
}

/** Resolves when the registry answers an authenticated request; readiness and start-up ask it. */
export async function checkRegistry(config: Config["registry"], timeoutMs = 2_000): Promise<void> {
  const { status } = await registryRequest(config, "GET", "/subjects", undefined, timeoutMs);
  if (status !== 200)
    throw new TransientError(`schema registry at ${redactUserinfo(config.url)} answered HTTP ${status} to /subjects`);
}

/** A subject's own compatibility level, or the registry's global one when the subject has none. */
export async function compatibilityOf(config: Config["registry"], subject: string): Promise<string> {
  const own = await registryRequest(config, "GET", `/config/${encodeURIComponent(subject)}`);
  if (own.status === 200) return String(own.body.compatibilityLevel ?? own.body.compatibility ?? "");
  const global = await registryRequest(config, "GET", "/config");
  return String(global.body.compatibilityLevel ?? global.body.compatibility ?? "");
}

/**
 * Registers our reader schemas under `<topic>-value` (TopicNameStrategy) and returns their ids. The
 * subjects' compatibility levels are the producers' business and stay as they are, unless
 * `compatibility` is given: then each subject is set to it first (an operator's explicit choice,
 * `schemas --compatibility`). A registration the registry refuses is a FatalError naming the subject
 * and its level.
 */
export async function registerSchemas(
  config: Config["registry"],
  topics: Readonly<Record<Stream, string>>,
  options: { compatibility?: CompatibilityLevel } = {},
): Promise<Record<Stream, number>> {
  const ids = {} as Record<Stream, number>;
  for (const stream of STREAMS) {
    const subject = `${topics[stream]}-value`;
    if (options.compatibility) {
      const set = await registryRequest(config, "PUT", `/config/${encodeURIComponent(subject)}`, {
        compatibility: options.compatibility,
      });
      if (set.status !== 200) {
        throw new FatalError(
          `setting subject ${subject} to ${options.compatibility} was refused (HTTP ${set.status}: ${String(set.body.message ?? "")})`,
        );
      }
    }
    ids[stream] = await registerSubject(config, subject, readerSchema(stream), `our ${stream} schema`);
  }
  return ids;
}

/**
 * Registers `schema` under `subject` (the registry answers an already registered one with its id).
 * Instances starting together race to create a new subject, and the registry can answer the loser
 * 409 ("already exists", Apicurio) although the schema is the same: a 409 is asked again a few times,
 * and only one that stays is a refusal (an incompatible schema stays 409).
 */
export async function registerSubject(
  config: Config["registry"],
  subject: string,
  schema: object,
  what: string,
): Promise<number> {
  const path = `/subjects/${encodeURIComponent(subject)}/versions`;
  let answer = await registryRequest(config, "POST", path, { schema: JSON.stringify(schema) });
  for (let attempt = 1; answer.status === 409 && attempt <= REGISTER_CONFLICT_RETRIES; attempt++) {
    await systemSleep(100 * attempt);
    answer = await registryRequest(config, "POST", path, { schema: JSON.stringify(schema) });
  }
  if (answer.status !== 200 || typeof answer.body.id !== "number") {
    const level = await compatibilityOf(config, subject).catch(() => "unknown");
    throw new FatalError(
      `registering ${what} under subject ${subject} (compatibility ${level}) was refused: HTTP ${answer.status} ${String(answer.body.message ?? "")}`.trim(),
    );
  }
  return answer.body.id;
}

/**
 * The id `schema` has under `subject`, or undefined when the subject does not hold it: the registry's
 * lookup (`POST /subjects/{subject}`), which reads and never registers, so a read-only principal may
 * ask it.
 */
export async function registeredId(
  config: Config["registry"],
  subject: string,
  schema: object,
): Promise<number | undefined> {
  const answer = await registryRequest(config, "POST", `/subjects/${encodeURIComponent(subject)}`, {
    schema: JSON.stringify(schema),
  });
  if (answer.status === 404) return undefined;
  if (answer.status !== 200 || typeof answer.body.id !== "number") {
    throw new FatalError(
      `looking up subject ${subject} was refused: HTTP ${answer.status} ${String(answer.body.message ?? "")}`.trim(),
    );
  }
  return answer.body.id;
}
