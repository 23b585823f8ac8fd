import { existsSync, readFileSync } from "node:fs";
import { z } from "zod";

/** The service's whole configuration, parsed once from the environment at start-up. */
export type Config = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`${key}: ${message}`);
  }
}

const commaList = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value) =>
      value
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item.length > 0),
    );

const bool = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no"])
    .default(fallback ? "true" : "false")
    .transform((value) => value === "true" || value === "1" || value === "yes");

const int = (fallback: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(fallback);

const optionalSecret = z
  .string()
  .optional()
  .transform((value) => (value === "" ? undefined : value));

/** `tenant` or `tenant=database`; a bare tenant maps to NEO4J_DATABASE. */
export interface TenantRoute {
  readonly tenantId: string;
  readonly database: string;
}

const optionalFile = z
  .string()
  .optional()
  .transform((value) => (value === "" ? undefined : value));

/**
 * Secrets that may also come from a file (`<KEY>_FILE`, as Kubernetes and Docker secrets mount them):
 * read here once to check them, and again on every authentication (adapters/credentials.ts).
 */
export const FILE_SECRETS = ["KAFKA_SASL_PASSWORD", "NEO4J_PASSWORD", "SCHEMA_REGISTRY_PASSWORD"] as const;

export const envSchema = z.object({
  KAFKA_BROKERS: commaList("127.0.0.1:9092")
    .refine((list) => list.length > 0, "needs at least one host:port")
    .describe("Comma list of the brokers' `host:port`."),
  KAFKA_CLIENT_ID: z
    .string()
    .min(1)
    .default("agent-graph-projector")
    .describe("The Kafka client id, as brokers log it."),
  KAFKA_SSL: bool(false).describe("TLS to the brokers (also on when a `KAFKA_SSL_*_FILE` is set)."),
  KAFKA_SASL_MECHANISM: z
    .enum(["plain", "scram-sha-256", "scram-sha-512"])
    .optional()
    .describe("SASL mechanism; when set, `KAFKA_SASL_USERNAME` and the password are required."),
  KAFKA_SASL_USERNAME: z.string().optional().describe("SASL user name."),
  KAFKA_SASL_PASSWORD: optionalSecret.describe("SASL password (or `KAFKA_SASL_PASSWORD_FILE`)."),
  SCHEMA_REGISTRY_URL: z
    .url()
    .default("http://127.0.0.1:8081/apis/ccompat/v7")
    .describe("A Confluent-compatible schema registry's base URL."),
  SCHEMA_REGISTRY_USERNAME: z.string().optional().describe("Registry basic-auth user name."),
  SCHEMA_REGISTRY_PASSWORD: optionalSecret.describe(
    "Registry basic-auth password (or `SCHEMA_REGISTRY_PASSWORD_FILE`).",
  ),
  NEO4J_URI: z
    .string()
    .regex(/^(bolt|neo4j)(\+s|\+ssc)?:\/\/.+/, "must be a bolt://, neo4j://, bolt+s:// or neo4j+s:// URI")
    .default("bolt://127.0.0.1:7687")
    .describe("Neo4j URI: `bolt`, `neo4j`, `bolt+s`, `neo4j+s` (TLS) and `+ssc` schemes."),
  NEO4J_USER: z.string().min(1).default("neo4j").describe("Neo4j user."),
  NEO4J_PASSWORD: optionalSecret.describe("Neo4j password (or `NEO4J_PASSWORD_FILE`)."),
  NEO4J_DATABASE: z.string().min(1).default("neo4j").describe("The database of tenants listed without one."),
  CONSUMER_GROUP: z
    .string()
    .min(1)
    .default("agent-graph-projector")
    .describe("Kafka consumer group; instances with the same group share the partitions."),
  TOPIC_REGISTRY_MUTATION: z
    .string()
    .min(1)
    .default("registry-mutation")
    .describe("Source topic of registry mutations (compacted)."),
  TOPIC_OUTCOME_CREATED: z.string().min(1).default("outcome-created").describe("Source topic of created outcomes."),
  TOPIC_ESCALATION_EDGE: z.string().min(1).default("escalation-edge").describe("Source topic of observed escalations."),
  RETRY_TOPIC_SUFFIX: z
    .string()
    .min(1)
    .default(".retry")
    .describe("Suffix of each source topic's retry topic name (see `RETRY_DLQ_TOPIC_SCOPE`)."),
  DLQ_TOPIC_SUFFIX: z
    .string()
    .min(1)
    .default(".dlq")
    .describe("Suffix of each source topic's dead-letter topic name (see `RETRY_DLQ_TOPIC_SCOPE`)."),
  RETRY_DLQ_TOPIC_SCOPE: z
    .enum(["group", "source"])
    .default("group")
    .describe(
      "`group`: retry and dead-letter topics are `<source>.<CONSUMER_GROUP><suffix>`, so deployments on the same source topics (blue/green, staging on production topics) keep their deferred records and dead letters apart; `CONSUMER_GROUP` must then be a valid topic-name part (letters, digits, `.`, `_`, `-`). After an upgrade, start-up drains the old unscoped retry topics (docs/runbook.md). `source`: `<source><suffix>`, the names of earlier releases.",
    ),
  TOPIC_GOVERNANCE_FINDINGS: z
    .string()
    .min(1)
    .default("governance-findings")
    .describe(
      "Where governance findings are published (ours: created at start with `CREATE_TOPICS_ON_START`, kept 28 days).",
    ),
  FINDINGS_ENABLED: bool(true).describe(
    "`false`: no finding is judged, recorded or published; `run` needs no findings topic, subject or ACL, and `topics`, `schemas` and `acls` leave them out.",
  ),
  FINDINGS_SWEEP_INTERVAL_MS: int(30_000, 500, 3_600_000).describe(
    "How often `run` publishes any finding the graph holds unpublished that no commit asked for (a transaction whose answer was lost, the end of a stop's drain).",
  ),
  TENANTS: commaList("default")
    .refine((list) => list.length > 0, "needs at least one tenant")
    .describe("Comma list of `tenant` or `tenant=database`."),
  TERMINAL_AGENT_IDS: commaList("").describe(
    "The control terminals of the reachability report and of the terminal-unreachable findings, comma-separated. Empty (the default): reachability is not judged, so no terminal findings; `report` says no control terminals are configured (`null` in `--json`) and start-up logs a warning.",
  ),
  TOPIC_PARTITIONS: int(6, 1, 10_000).describe("Partitions of the topics `topics` (and start-up) creates."),
  TOPIC_REPLICATION_FACTOR: z.coerce
    .number()
    .int()
    .min(1)
    .max(10)
    .optional()
    .describe(
      "Replication of created topics. Unset: the cluster's `default.replication.factor` and `min.insync.replicas`; set: `min.insync.replicas` 2 (1 for one copy). Retry and dead-letter topics take their source topic's replication.",
    ),
  REGISTER_SCHEMAS: bool(false).describe(
    "`true`: `run` also registers our reader schemas under the producers' subjects (never changes a compatibility level). The findings subject (`<TOPIC_GOVERNANCE_FINDINGS>-value`) is ours: `run` registers it when it is missing either way, and only looks up one that already holds our schema.",
  ),
  MIGRATE_ON_START: bool(true).describe(
    "`false`: a principal without DDL rights runs the service; `run` then only checks that the §6 constraints exist (`migrate` creates them).",
  ),
  CREATE_TOPICS_ON_START: bool(true).describe(
    "`false`: a principal without topic-creation rights runs the service; `run` then only checks that the retry and dead-letter topics exist (`topics` creates them).",
  ),
  STARTUP_TIMEOUT_MS: int(60_000, 1_000, 3_600_000).describe(
    "How long `run` waits for unreachable servers before it exits 1.",
  ),
  SCHEMA_MISS_TTL_MS: int(60_000, 0, 86_400_000).describe("How long an unknown schema id is answered from memory."),
  METRICS_PORT: int(9464, 0, 65535).describe("Port of `/metrics`, `/startupz`, `/healthz` and `/readyz`."),
  METRICS_HOST: z
    .string()
    .min(1)
    .default("127.0.0.1")
    .describe("Address the HTTP server listens on; the image and the chart set `0.0.0.0`."),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .default("info")
    .describe("Level of the JSON log (pino) on stdout."),
  BATCH_MAX_RECORDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .optional()
    .describe(
      "Records per transaction at most while caught up (2,000 when unset). Set alone, it bounds a backlog's transactions too: an operator who set it (a transaction memory limit, a lock budget) keeps that bound.",
    ),
  BACKLOG_BATCH_MAX_RECORDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .optional()
    .describe(
      "Records per transaction at most while a partition has `BATCH_MAX_RECORDS` more waiting (a backlog, a replay), and always for the registry (5,000 when both are unset; `BATCH_MAX_RECORDS` when only that is set). At least `BATCH_MAX_RECORDS`; equal turns it off.",
    ),
  PARTITIONS_CONSUMED_CONCURRENTLY: int(6, 1, 256).describe(
    "Fetched batches kafkajs hands over at once; each partition's batches are applied in a lane of their own.",
  ),
  NEO4J_MAX_CONCURRENT_WRITES: int(2, 1, 256).describe(
    "Write transactions in flight per instance; about Neo4j's core count (more mostly adds lock waits and deadlock retries).",
  ),
  FETCH_MAX_BYTES_PER_PARTITION: int(1_048_576, 1024, 1_073_741_824).describe(
    "kafkajs fetch limit per partition; bounds the memory of fetched batches.",
  ),
  FETCH_MAX_BYTES: int(10_485_760, 1024, 1_073_741_824).describe(
    "kafkajs fetch limit per fetch; bounds the memory of fetched batches.",
  ),
  MAX_LIST_LENGTH: int(1000, 1, 1_000_000).describe(
    "Longer tools, workflows or escalation_path lists are dead-lettered.",
  ),
  MAX_ID_LENGTH: int(256, 1, 1_000_000).describe(
    "Longer ids (`*_id`, escalation path entries) are dead-lettered: ids are index keys, and Neo4j's range indexes refuse entries over about 8 KB (up to 4 bytes a character).",
  ),
  MAX_TEXT_LENGTH: int(4096, 1, 10_000_000).describe("Longer strings other than ids are dead-lettered."),
  RETRY_MAX_ATTEMPTS: int(0, 0, 1_000_000).describe("Caps a deferred record's attempts; 0: no cap (the window alone)."),
  RETRY_MAX_AGE_MS: int(3_600_000, 1000, 30 * 86_400_000).describe(
    "A deferred record's window; retry topics keep records this long plus 7 days.",
  ),
  RETRY_BACKOFF_MS: int(500, 10, 3_600_000).describe(
    "First backoff between a deferred record's attempts (exponential).",
  ),
  RETRY_BACKOFF_MAX_MS: int(60_000, 10, 86_400_000).describe(
    "Longest backoff between a deferred record's attempts; at least `RETRY_BACKOFF_MS`.",
  ),
  NEO4J_MAX_POOL_SIZE: int(20, 1, 1000).describe("Neo4j driver connection pool size."),
  NEO4J_TX_TIMEOUT_MS: int(30_000, 100, 3_600_000).describe(
    "The transaction timeout Neo4j enforces; an attempt with no answer this long plus 5 s after it began is ended on the client.",
  ),
  REBUILD_TX_TIMEOUT_MS: int(600_000, 100, 86_400_000).describe(
    "Timeout of `rebuild`'s one transaction per tenant, which may rightly run far longer than a batch.",
  ),
  LAG_REFRESH_MS: int(10_000, 500, 600_000).describe(
    "Longest wait between reads of consumer lag from the broker (every second while the catch-up hold is on); each read updates `agp_consumer_lag`.",
  ),
  CATCH_UP_HOLD_RECORDS: int(100, 0, 1_000_000_000).describe(
    "While the group lags more than this on registry (outcome) partitions that are behind, outcomes and escalations (escalations) wait; 0: off.",
  ),
  CATCH_UP_HOLD_SECONDS: int(5, 0, 86_400).describe(
    "A partition is behind while its oldest waiting record is older than this (a backlog met at start-up always is); 0: off.",
  ),
  SHUTDOWN_TIMEOUT_MS: int(25_000, 1000, 600_000).describe("Bound on a graceful stop; past it the process exits 1."),
  RECONCILE_INTERVAL_MS: int(0, 0, 7 * 86_400_000).describe(
    "Run `reconcile` (report only) on this schedule inside `run`; 0: off.",
  ),
  KAFKA_SSL_CA_FILE: optionalFile.describe(
    "PEM file of the CA to trust for the brokers (alone, instead of the system's); turns TLS on.",
  ),
  KAFKA_SSL_CERT_FILE: optionalFile.describe(
    "PEM client certificate for mutual TLS with the brokers; goes with `KAFKA_SSL_KEY_FILE`.",
  ),
  KAFKA_SSL_KEY_FILE: optionalFile.describe("PEM key of `KAFKA_SSL_CERT_FILE`."),
  KAFKA_ALLOW_PLAINTEXT_SASL_PLAIN: bool(false).describe(
    "SASL PLAIN without TLS sends the password in clear: refused unless `true`.",
  ),
  NEO4J_TRUSTED_CA_FILE: optionalFile.describe(
    "PEM file of the CA to trust for Neo4j, with a `bolt://` or `neo4j://` URI (the driver then encrypts).",
  ),
  NEO4J_CLIENT_CERT_FILE: optionalFile.describe(
    "PEM client certificate for mutual TLS with Neo4j; goes with `NEO4J_CLIENT_KEY_FILE`.",
  ),
  NEO4J_CLIENT_KEY_FILE: optionalFile.describe("PEM key of `NEO4J_CLIENT_CERT_FILE`."),
  SCHEMA_REGISTRY_CA_FILE: optionalFile.describe(
    "PEM file of the CA to trust for the registry, with an `https://` URL.",
  ),
  SCHEMA_REGISTRY_CERT_FILE: optionalFile.describe(
    "PEM client certificate for mutual TLS with the registry; goes with `SCHEMA_REGISTRY_KEY_FILE`.",
  ),
  SCHEMA_REGISTRY_KEY_FILE: optionalFile.describe("PEM key of `SCHEMA_REGISTRY_CERT_FILE`."),
  KAFKA_SASL_PASSWORD_FILE: optionalFile.describe(
    "Read the SASL password from this file (a mounted secret), again at each authentication; not with `KAFKA_SASL_PASSWORD`.",
  ),
  NEO4J_PASSWORD_FILE: optionalFile.describe(
    "Read the Neo4j password from this file (a mounted secret), again at each authentication; not with `NEO4J_PASSWORD`.",
  ),
  SCHEMA_REGISTRY_PASSWORD_FILE: optionalFile.describe(
    "Read the registry password from this file (a mounted secret), again at each authentication; not with `SCHEMA_REGISTRY_PASSWORD`.",
  ),
});

const configSchema = envSchema.transform((env) => ({
  kafka: {
    brokers: env.KAFKA_BROKERS,
    clientId: env.KAFKA_CLIENT_ID,
    ssl: env.KAFKA_SSL || env.KAFKA_SSL_CA_FILE !== undefined || env.KAFKA_SSL_CERT_FILE !== undefined,
    tls: { caFile: env.KAFKA_SSL_CA_FILE, certFile: env.KAFKA_SSL_CERT_FILE, keyFile: env.KAFKA_SSL_KEY_FILE },
    sasl:
      env.KAFKA_SASL_MECHANISM === undefined
        ? undefined
        : {
            mechanism: env.KAFKA_SASL_MECHANISM,
            username: env.KAFKA_SASL_USERNAME ?? "",
            password: env.KAFKA_SASL_PASSWORD ?? "",
            passwordFile: env.KAFKA_SASL_PASSWORD_FILE,
          },
    group: env.CONSUMER_GROUP,
    partitionsConsumedConcurrently: env.PARTITIONS_CONSUMED_CONCURRENTLY,
    fetchMaxBytesPerPartition: env.FETCH_MAX_BYTES_PER_PARTITION,
    fetchMaxBytes: env.FETCH_MAX_BYTES,
  },
  registry: {
    url: env.SCHEMA_REGISTRY_URL,
    missTtlMs: env.SCHEMA_MISS_TTL_MS,
    auth:
      env.SCHEMA_REGISTRY_USERNAME === undefined
        ? undefined
        : {
            username: env.SCHEMA_REGISTRY_USERNAME,
            password: env.SCHEMA_REGISTRY_PASSWORD ?? "",
            passwordFile: env.SCHEMA_REGISTRY_PASSWORD_FILE,
          },
    tls: {
      caFile: env.SCHEMA_REGISTRY_CA_FILE,
      certFile: env.SCHEMA_REGISTRY_CERT_FILE,
      keyFile: env.SCHEMA_REGISTRY_KEY_FILE,
    },
  },
  neo4j: {
    uri: env.NEO4J_URI,
    user: env.NEO4J_USER,
    password: env.NEO4J_PASSWORD,
    passwordFile: env.NEO4J_PASSWORD_FILE,
    database: databaseName(env.NEO4J_DATABASE),
    maxPoolSize: env.NEO4J_MAX_POOL_SIZE,
    maxConcurrentWrites: env.NEO4J_MAX_CONCURRENT_WRITES,
    txTimeoutMs: env.NEO4J_TX_TIMEOUT_MS,
    rebuildTxTimeoutMs: env.REBUILD_TX_TIMEOUT_MS,
    tls: {
      caFile: env.NEO4J_TRUSTED_CA_FILE,
      certFile: env.NEO4J_CLIENT_CERT_FILE,
      keyFile: env.NEO4J_CLIENT_KEY_FILE,
    },
  },
  topics: {
    registryMutation: env.TOPIC_REGISTRY_MUTATION,
    outcomeCreated: env.TOPIC_OUTCOME_CREATED,
    escalationEdge: env.TOPIC_ESCALATION_EDGE,
    retrySuffix: env.RETRY_TOPIC_SUFFIX,
    dlqSuffix: env.DLQ_TOPIC_SUFFIX,
    /** The consumer group the retry and dead-letter topics are named for; undefined: the source topic alone. */
    scope: env.RETRY_DLQ_TOPIC_SCOPE === "group" ? env.CONSUMER_GROUP : undefined,
    findings: env.TOPIC_GOVERNANCE_FINDINGS,
    partitions: env.TOPIC_PARTITIONS,
    replicationFactor: env.TOPIC_REPLICATION_FACTOR,
  },
  registerSchemas: env.REGISTER_SCHEMAS,
  migrateOnStart: env.MIGRATE_ON_START,
  createTopicsOnStart: env.CREATE_TOPICS_ON_START,
  startupTimeoutMs: env.STARTUP_TIMEOUT_MS,
  tenants: env.TENANTS.map((entry): TenantRoute => {
    const [tenantId = "", database] = entry.split("=").map((part) => part.trim());
    return { tenantId, database: databaseName(database || env.NEO4J_DATABASE) };
  }),
  terminalAgentIds: env.TERMINAL_AGENT_IDS,
  findingsEnabled: env.FINDINGS_ENABLED,
  findingsSweepIntervalMs: env.FINDINGS_SWEEP_INTERVAL_MS,
  metrics: { port: env.METRICS_PORT, host: env.METRICS_HOST },
  logLevel: env.LOG_LEVEL,
  batch: {
    maxRecords: env.BATCH_MAX_RECORDS ?? 2000,
    backlogMaxRecords: env.BACKLOG_BATCH_MAX_RECORDS ?? env.BATCH_MAX_RECORDS ?? 5000,
  },
  limits: { maxListLength: env.MAX_LIST_LENGTH, maxIdLength: env.MAX_ID_LENGTH, maxTextLength: env.MAX_TEXT_LENGTH },
  retry: {
    maxAttempts: env.RETRY_MAX_ATTEMPTS,
    maxAgeMs: env.RETRY_MAX_AGE_MS,
    backoffMs: env.RETRY_BACKOFF_MS,
    backoffMaxMs: env.RETRY_BACKOFF_MAX_MS,
  },
  lagRefreshMs: env.LAG_REFRESH_MS,
  catchUpHold: { records: env.CATCH_UP_HOLD_RECORDS, seconds: env.CATCH_UP_HOLD_SECONDS },
  shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
  reconcileIntervalMs: env.RECONCILE_INTERVAL_MS,
}));

/** The environment keys the service reads, for docs and consistency checks. */
export const CONFIG_KEYS: readonly string[] = Object.keys(envSchema.shape);

/**
 * Parses the environment into a frozen Config. Throws a ConfigError naming the first bad key;
 * cross-field rules (SASL needs credentials, tenants are unique and well formed) are checked here too.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const picked: Record<string, string | undefined> = Object.fromEntries(
    CONFIG_KEYS.filter((key) => env[key] !== undefined && env[key] !== "").map((key) => [key, env[key]]),
  );
  for (const key of FILE_SECRETS) {
    const file = picked[`${key}_FILE`];
    if (file === undefined) continue;
    if (picked[key] !== undefined) throw new ConfigError(`${key}_FILE`, `set either ${key} or ${key}_FILE, not both`);
    picked[key] = readSecretFile(`${key}_FILE`, file);
  }
  const parsed = configSchema.safeParse(picked);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = String(issue?.path[0] ?? "environment");
    throw new ConfigError(key, issue?.message ?? "invalid");
  }
  const config = parsed.data;
  if (config.kafka.sasl && (!picked.KAFKA_SASL_USERNAME || !picked.KAFKA_SASL_PASSWORD)) {
    throw new ConfigError("KAFKA_SASL_USERNAME", "KAFKA_SASL_MECHANISM is set, so username and password are required");
  }
  checkTls(config, picked);
  const seen = new Set<string>();
  for (const route of config.tenants) {
    if (!/^[A-Za-z0-9_.-]+$/.test(route.tenantId)) {
      throw new ConfigError("TENANTS", `"${route.tenantId}" is not a tenant id (letters, digits, . _ -)`);
    }
    if (seen.has(route.tenantId)) throw new ConfigError("TENANTS", `tenant "${route.tenantId}" is listed twice`);
    seen.add(route.tenantId);
  }
  if (config.batch.backlogMaxRecords < config.batch.maxRecords) {
    throw new ConfigError("BACKLOG_BATCH_MAX_RECORDS", "must be at least BATCH_MAX_RECORDS");
  }
  if (config.topics.scope !== undefined && !TOPIC_NAME.test(config.topics.scope)) {
    throw new ConfigError(
      "CONSUMER_GROUP",
      `"${config.topics.scope}" names the retry and dead-letter topics (RETRY_DLQ_TOPIC_SCOPE=group), so it may hold only letters, digits, . _ -`,
    );
  }
  if (config.retry.backoffMaxMs < config.retry.backoffMs) {
    throw new ConfigError("RETRY_BACKOFF_MAX_MS", "must be at least RETRY_BACKOFF_MS");
  }
  return deepFreeze(config);
}

/** The characters Kafka allows in a topic name. */
const TOPIC_NAME = /^[A-Za-z0-9._-]+$/;

/**
 * A database name as Neo4j knows it: names are case-insensitive and Neo4j keeps them in lower case,
 * so `NEO4J` and `neo4j` are one database. Every name the service compares goes through here.
 */
export function databaseName(name: string): string {
  return name.toLowerCase();
}

/** The databases that more than one served tenant maps to: there, every graph key carries the tenant. */
export function sharedDatabases(tenants: readonly TenantRoute[]): Set<string> {
  const seen = new Set<string>();
  const shared = new Set<string>();
  for (const route of tenants) {
    const database = databaseName(route.database);
    if (seen.has(database)) shared.add(database);
    seen.add(database);
  }
  return shared;
}

function readSecretFile(key: string, file: string): string {
  try {
    // Secret files usually end with a newline that is not part of the secret.
    return readFileSync(file, "utf8").replace(/\r?\n$/, "");
  } catch (error) {
    throw new ConfigError(key, `cannot read ${file}: ${(error as Error).message}`);
  }
}

/** TLS files exist, certificates come with their keys, and credentials never travel in clear by accident. */
function checkTls(config: Config, env: Record<string, string | undefined>): void {
  const groups: [string, string, string][] = [
    ["KAFKA_SSL_CA_FILE", "KAFKA_SSL_CERT_FILE", "KAFKA_SSL_KEY_FILE"],
    ["NEO4J_TRUSTED_CA_FILE", "NEO4J_CLIENT_CERT_FILE", "NEO4J_CLIENT_KEY_FILE"],
    ["SCHEMA_REGISTRY_CA_FILE", "SCHEMA_REGISTRY_CERT_FILE", "SCHEMA_REGISTRY_KEY_FILE"],
  ];
  for (const [ca, cert, key] of groups) {
    for (const name of [ca, cert, key]) {
      const file = env[name];
      if (file !== undefined && !existsSync(file)) throw new ConfigError(name, `file ${file} does not exist`);
    }
    if ((env[cert] === undefined) !== (env[key] === undefined)) {
      throw new ConfigError(env[cert] === undefined ? cert : key, `${cert} and ${key} go together (mutual TLS)`);
    }
  }
  if (config.kafka.sasl?.mechanism === "plain" && !config.kafka.ssl && !env.KAFKA_ALLOW_PLAINTEXT_SASL_PLAIN) {
    throw new ConfigError(
      "KAFKA_SASL_MECHANISM",
      "SASL PLAIN without TLS sends the password in clear; set KAFKA_SSL=true (or KAFKA_ALLOW_PLAINTEXT_SASL_PLAIN=true)",
    );
  }
  const neo4jTls = env.NEO4J_TRUSTED_CA_FILE !== undefined || env.NEO4J_CLIENT_CERT_FILE !== undefined;
  if (neo4jTls && /^(bolt|neo4j)\+/.test(config.neo4j.uri)) {
    throw new ConfigError(
      "NEO4J_URI",
      "with NEO4J_TRUSTED_CA_FILE or a client certificate use a bolt:// or neo4j:// URI: the driver then encrypts and trusts that CA",
    );
  }
  const registryTls = env.SCHEMA_REGISTRY_CA_FILE !== undefined || env.SCHEMA_REGISTRY_CERT_FILE !== undefined;
  if (registryTls && !config.registry.url.startsWith("https:")) {
    throw new ConfigError("SCHEMA_REGISTRY_URL", "TLS files are set for the registry, so its URL must be https://");
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
