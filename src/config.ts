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

const envSchema = z.object({
  KAFKA_BROKERS: commaList("127.0.0.1:9092").refine((list) => list.length > 0, "needs at least one host:port"),
  KAFKA_CLIENT_ID: z.string().min(1).default("agent-graph-projector"),
  KAFKA_SSL: bool(false),
  KAFKA_SASL_MECHANISM: z.enum(["plain", "scram-sha-256", "scram-sha-512"]).optional(),
  KAFKA_SASL_USERNAME: z.string().optional(),
  KAFKA_SASL_PASSWORD: optionalSecret,
  SCHEMA_REGISTRY_URL: z.url().default("http://127.0.0.1:8081/apis/ccompat/v7"),
  SCHEMA_REGISTRY_USERNAME: z.string().optional(),
  SCHEMA_REGISTRY_PASSWORD: optionalSecret,
  NEO4J_URI: z
    .string()
    .regex(/^(bolt|neo4j)(\+s|\+ssc)?:\/\/.+/, "must be a bolt://, neo4j://, bolt+s:// or neo4j+s:// URI")
    .default("bolt://127.0.0.1:7687"),
  NEO4J_USER: z.string().min(1).default("neo4j"),
  NEO4J_PASSWORD: optionalSecret,
  NEO4J_DATABASE: z.string().min(1).default("neo4j"),
  CONSUMER_GROUP: z.string().min(1).default("agent-graph-projector"),
  TOPIC_REGISTRY_MUTATION: z.string().min(1).default("registry-mutation"),
  TOPIC_OUTCOME_CREATED: z.string().min(1).default("outcome-created"),
  TOPIC_ESCALATION_EDGE: z.string().min(1).default("escalation-edge"),
  RETRY_TOPIC_SUFFIX: z.string().min(1).default(".retry"),
  DLQ_TOPIC_SUFFIX: z.string().min(1).default(".dlq"),
  TOPIC_GOVERNANCE_FINDINGS: z.string().min(1).default("governance-findings"),
  // Off: no findings are judged, recorded or published — no findings topic, subject or write access to them.
  FINDINGS_ENABLED: bool(true),
  // How often `run` publishes whatever findings the graph holds unpublished, asked for by no commit.
  FINDINGS_SWEEP_INTERVAL_MS: int(30_000, 500, 3_600_000),
  TENANTS: commaList("default").refine((list) => list.length > 0, "needs at least one tenant"),
  TERMINAL_AGENT_IDS: commaList("os-agt-001,os-agt-004"),
  TOPIC_PARTITIONS: int(6, 1, 10_000),
  // Unset: the cluster's default.replication.factor and min.insync.replicas (see replicationFor).
  TOPIC_REPLICATION_FACTOR: z.coerce.number().int().min(1).max(10).optional(),
  REGISTER_SCHEMAS: bool(false),
  // Off: a principal without DDL or topic-creation rights runs the service; start-up then only checks
  // that the constraints (`migrate`) and the retry and dead-letter topics (`topics`) exist.
  MIGRATE_ON_START: bool(true),
  CREATE_TOPICS_ON_START: bool(true),
  STARTUP_TIMEOUT_MS: int(60_000, 1_000, 3_600_000),
  SCHEMA_MISS_TTL_MS: int(60_000, 0, 86_400_000),
  METRICS_PORT: int(9464, 0, 65535),
  METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  // Both unset: 2,000 caught up, 5,000 behind. BATCH_MAX_RECORDS alone bounds both: an operator who
  // set it (a transaction memory limit, a lock budget) keeps that bound on a backlog too.
  BATCH_MAX_RECORDS: z.coerce.number().int().min(1).max(100_000).optional(),
  BACKLOG_BATCH_MAX_RECORDS: z.coerce.number().int().min(1).max(100_000).optional(),
  PARTITIONS_CONSUMED_CONCURRENTLY: int(6, 1, 256),
  NEO4J_MAX_CONCURRENT_WRITES: int(2, 1, 256),
  FETCH_MAX_BYTES_PER_PARTITION: int(1_048_576, 1024, 1_073_741_824),
  FETCH_MAX_BYTES: int(10_485_760, 1024, 1_073_741_824),
  MAX_LIST_LENGTH: int(1000, 1, 1_000_000),
  // Ids are index keys; Neo4j's range indexes refuse entries over about 8 KB (up to 4 bytes a character).
  MAX_ID_LENGTH: int(256, 1, 1_000_000),
  MAX_TEXT_LENGTH: int(4096, 1, 10_000_000),
  RETRY_MAX_ATTEMPTS: int(0, 0, 1_000_000),
  RETRY_MAX_AGE_MS: int(3_600_000, 1000, 30 * 86_400_000),
  RETRY_BACKOFF_MS: int(500, 10, 3_600_000),
  RETRY_BACKOFF_MAX_MS: int(60_000, 10, 86_400_000),
  NEO4J_MAX_POOL_SIZE: int(20, 1, 1000),
  NEO4J_TX_TIMEOUT_MS: int(30_000, 100, 3_600_000),
  // `rebuild` writes a whole tenant in one transaction, which may rightly run far longer than a batch.
  REBUILD_TX_TIMEOUT_MS: int(600_000, 100, 86_400_000),
  LAG_REFRESH_MS: int(10_000, 500, 600_000),
  CATCH_UP_HOLD_RECORDS: int(100, 0, 1_000_000_000),
  CATCH_UP_HOLD_SECONDS: int(5, 0, 86_400),
  SHUTDOWN_TIMEOUT_MS: int(25_000, 1000, 600_000),
  RECONCILE_INTERVAL_MS: int(0, 0, 7 * 86_400_000),
  // TLS material for real clusters: PEM files. A CA file trusts that CA (alone); a certificate and its
  // key authenticate the client (mutual TLS).
  KAFKA_SSL_CA_FILE: optionalFile,
  KAFKA_SSL_CERT_FILE: optionalFile,
  KAFKA_SSL_KEY_FILE: optionalFile,
  KAFKA_ALLOW_PLAINTEXT_SASL_PLAIN: bool(false),
  NEO4J_TRUSTED_CA_FILE: optionalFile,
  NEO4J_CLIENT_CERT_FILE: optionalFile,
  NEO4J_CLIENT_KEY_FILE: optionalFile,
  SCHEMA_REGISTRY_CA_FILE: optionalFile,
  SCHEMA_REGISTRY_CERT_FILE: optionalFile,
  SCHEMA_REGISTRY_KEY_FILE: optionalFile,
  KAFKA_SASL_PASSWORD_FILE: optionalFile,
  NEO4J_PASSWORD_FILE: optionalFile,
  SCHEMA_REGISTRY_PASSWORD_FILE: optionalFile,
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
  if (config.retry.backoffMaxMs < config.retry.backoffMs) {
    throw new ConfigError("RETRY_BACKOFF_MAX_MS", "must be at least RETRY_BACKOFF_MS");
  }
  return deepFreeze(config);
}

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
