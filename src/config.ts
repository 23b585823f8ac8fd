import { existsSync, readFileSync } from "node:fs";
import type { z } from "zod";
import { envSchema, FILE_SECRETS } from "./config-env.js";

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

/** `tenant` or `tenant=database`; a bare tenant maps to NEO4J_DATABASE. */
export interface TenantRoute {
  readonly tenantId: string;
  readonly database: string;
}

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
    sessionTimeoutMs: env.KAFKA_SESSION_TIMEOUT_MS,
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
  findingsJudge: {
    intervalMs: env.FINDINGS_JUDGE_INTERVAL_MS,
    allowedLatenessMs: env.FINDINGS_ALLOWED_LATENESS_MS,
    maxWaitMs: env.FINDINGS_MAX_WAIT_MS,
    historyRetentionMs: env.REGISTRY_HISTORY_RETENTION_MS,
  },
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

export { envSchema, FILE_SECRETS };

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
