import { z } from "zod";

/**
 * The environment the service reads: every key with its parser, default and description. The
 * description is what docs/configuration.md shows (generated: npm run docs); config.ts turns the parsed
 * environment into the service's Config.
 */
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
    .describe(
      "A Confluent-compatible schema registry's base URL. Credentials written into it (`user:password@`) are redacted wherever the URL is logged or printed; prefer `SCHEMA_REGISTRY_USERNAME` and `SCHEMA_REGISTRY_PASSWORD_FILE`.",
    ),
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
  FINDINGS_JUDGE_INTERVAL_MS: int(1_000, 100, 600_000).describe(
    "How often `run` judges the escalations and registry changes applied since the last round, each at its own event time, once the registry has been applied past it (one instance per group judges: the owner of the registry topic's partition 0).",
  ),
  FINDINGS_ALLOWED_LATENESS_MS: int(5_000, 0, 3_600_000).describe(
    "How long after its `occurred_at` a registry change may reach its topic and still count as on time. An escalation is judged once the registry partitions were caught up at least this long after its `observed_at`, so it is also the least a finding waits; a change later than that brings its findings marked `late`.",
  ),
  FINDINGS_MAX_WAIT_MS: int(600_000, 1_000, 86_400_000).describe(
    "The longest an escalation waits for a registry partition that stays behind: then everything waiting is judged against the registry as applied, and what the partition brings later comes as `late` findings.",
  ),
  REGISTRY_HISTORY_RETENTION_MS: int(2_592_000_000, 0, 315_360_000_000).describe(
    "How much registry history (event time behind what the judge has decided) is kept whole: hourly, each agent's changes older than that are compacted to the one in force at the edge, and an escalation older than that is judged against it. `0` keeps every change.",
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
  SCHEMA_MISS_TTL_MS: int(60_000, 0, 86_400_000).describe(
    "How long an unknown schema id is answered from memory: one registry request per id per interval, shared by every stream; at most 10,000 ids are remembered (the expired, then the oldest, forgotten first).",
  ),
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
    "Write transactions in flight per stream in each instance; Neo4j sees the group's total (instances × this). Keep that total about Neo4j's core count: more mostly adds lock waits and deadlock retries.",
  ),
  FETCH_MAX_BYTES_PER_PARTITION: int(1_048_576, 1024, 1_073_741_824).describe(
    "kafkajs fetch limit per partition; bounds the memory of fetched batches.",
  ),
  FETCH_MAX_BYTES: int(10_485_760, 1024, 1_073_741_824).describe(
    "kafkajs fetch limit per fetch; bounds the memory of fetched batches.",
  ),
  KAFKA_SESSION_TIMEOUT_MS: int(10_000, 10_000, 300_000).describe(
    "Consumer group session timeout: an instance that sends no heartbeat for this long (heartbeats every 3 s, also while a batch is applied) loses its partitions. After a broker outage the group waits this long for the members from before it, so it bounds how soon the instances resume. Longer only for hosts whose event loop stalls for seconds.",
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
