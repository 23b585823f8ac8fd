/**
 * Every failure the service meets falls in one retry class, decided here and nowhere else:
 * - `transient`: the infrastructure may recover (Neo4j deadlock, leader switch, lost connection, broker
 *   or registry unreachable). The batch is not acknowledged; its partition pauses and retries.
 * - `fatal`: configuration or programming faults (bad credentials, unknown database, a statement Neo4j
 *   cannot parse). Retrying cannot help; the service stops with the error.
 * - `rejected`: Neo4j refused the data itself (a key too large for its index, a value of the wrong
 *   type): the same records fail the same way every time. The batch is narrowed down to the records
 *   that fail and those are dead-lettered (pipeline/process-batch.ts); the rest is applied.
 * - `unknown`: nothing above recognises it. Retried a few times like a transient failure, then handled
 *   like a rejection, so that an error nobody foresaw cannot stop a partition for good.
 * Record-level problems found before Neo4j (undecodable bytes, invalid fields) are not errors: they are fates.
 * Whether a failed write is a record's or the infrastructure's is decided by `blame` below.
 */

import { redactUserinfo } from "./redact.js";

export type RetryClass = "transient" | "fatal" | "rejected" | "unknown";

export class TransientError extends Error {
  override readonly name = "TransientError";
}

export class FatalError extends Error {
  override readonly name = "FatalError";
}

const TRANSIENT_NEO4J_CODES = new Set([
  "ServiceUnavailable",
  "SessionExpired",
  "Neo.ClientError.Cluster.NotALeader",
  // The driver fetches a fresh token on the next connection: Neo4j's own drivers retry this one.
  "Neo.ClientError.Security.AuthorizationExpired",
  "Neo.ClientError.General.ForbiddenOnReadOnlyDatabase",
  "Neo.ClientError.Transaction.LockClientStopped",
  "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
  "Neo.DatabaseError.Transaction.TransactionCommitFailed",
]);

const FATAL_NEO4J_CODES = new Set([
  "Neo.ClientError.Security.Unauthorized",
  "Neo.ClientError.Security.AuthenticationRateLimit",
  "Neo.ClientError.Security.Forbidden",
  "Neo.ClientError.Database.DatabaseNotFound",
  "Neo.ClientError.Statement.SyntaxError",
  "Neo.ClientError.Statement.ParameterMissing",
]);

/**
 * Neo4j's client errors that a record's own values cause. Everything else under Neo.ClientError is
 * either listed above or a request the service got wrong, which no record can be blamed for.
 */
const REJECTED_NEO4J_CODE =
  /^Neo\.ClientError\.(Statement\.(TypeError|ArgumentError|ArithmeticError|EntityNotFound|PropertyNotFound|ConstraintVerificationFailed)|Schema\.(ConstraintValidationFailed|IndexEntrySizeExceeded|ConstraintViolation)|Transaction\.TransactionHookFailed)$/;

/**
 * The §6 schema cannot be put in place: a constraint the data already violates, a name another index
 * holds. The same request fails the same way until somebody changes the database.
 */
const FATAL_SCHEMA_CODE =
  /^Neo\.(ClientError\.Schema\.|DatabaseError\.Schema\.(Constraint|Index)(Creation|Drop)Failed$)/;

const TRANSIENT_NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
]);

/**
 * A server certificate we do not trust (or that is not for this host): waiting cannot cure it. Node's
 * TLS error codes, and their text where a client (the Neo4j driver) keeps only the message.
 */
const TLS_TRUST_CODES = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "CERT_UNTRUSTED",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);
const TLS_TRUST_TEXT =
  /self[- ]signed certificate|unable to verify the first certificate|unable to get (local )?issuer certificate|certificate has expired|does not match certificate's altnames|server certificate is not trusted/i;

export function isTlsTrustFailure(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== "object" || depth > 5) return false;
  const { code, message, cause } = error as { code?: unknown; message?: unknown; cause?: unknown };
  if (typeof code === "string" && TLS_TRUST_CODES.has(code)) return true;
  if (typeof message === "string" && TLS_TRUST_TEXT.test(message)) return true;
  return cause !== undefined && cause !== error && isTlsTrustFailure(cause, depth + 1);
}

/**
 * Neo4j refused the password: at connection time as `Unauthorized` (or the rate limit that follows
 * repeated refusals), on a pooled connection re-authenticating as a protocol error with the same text.
 */
export function isPasswordRefusal(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code === "Neo.ClientError.Security.Unauthorized" || code === "Neo.ClientError.Security.AuthenticationRateLimit")
    return true;
  return code === "ProtocolError" && /unauthorized due to authentication failure/i.test(String(message));
}

/** The Neo4j driver's failure to reach the server, reported as a protocol error around a network one. */
const NEO4J_CONNECT_FAILURE =
  /Failed to connect to server[\s\S]*Caused by: (write |read |connect )?(EPIPE|ECONNRESET|ECONNREFUSED|ETIMEDOUT)/;

/** Neo4j reports an index key over its size limit as a database error; the value is to blame. */
const INDEX_KEY_TOO_LARGE = /too large to index/i;

/**
 * A transient failure as a metric label: the last part of a Neo4j status code (`DeadlockDetected`,
 * `LockClientStopped`), else the driver's or the socket's code (`ServiceUnavailable`, `ECONNRESET`),
 * else the error's name. Each is one of a fixed set Neo4j, the driver and Node define, so the label
 * stays bounded; the message, which names locks and transactions, never goes in.
 */
export function retryReason(error: unknown): string {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  if (typeof code === "string" && code !== "")
    return code.startsWith("Neo.") ? code.slice(code.lastIndexOf(".") + 1) : code;
  return typeof name === "string" && name !== "" ? name : "unknown";
}

export function classify(error: unknown): RetryClass {
  if (error instanceof TransientError) return "transient";
  if (error instanceof FatalError) return "fatal";
  if (isTlsTrustFailure(error)) return "fatal";
  const { code, name, retriable, cause, message } = (error ?? {}) as {
    code?: unknown;
    message?: unknown;
    name?: unknown;
    retriable?: unknown;
    cause?: unknown;
  };
  if (typeof code === "string") {
    if (code.startsWith("Neo.TransientError.") || TRANSIENT_NEO4J_CODES.has(code)) return "transient";
    if (FATAL_NEO4J_CODES.has(code) || isPasswordRefusal(error)) return "fatal";
    if (code === "ProtocolError" && NEO4J_CONNECT_FAILURE.test(String(message))) return "transient";
    if (REJECTED_NEO4J_CODE.test(code)) return "rejected";
    if (FATAL_SCHEMA_CODE.test(code)) return "fatal";
    if (code === "Neo.DatabaseError.Statement.ExecutionFailed" && INDEX_KEY_TOO_LARGE.test(String(message)))
      return "rejected";
    if (TRANSIENT_NETWORK_CODES.has(code)) return "transient";
  }
  if (typeof name === "string" && name.startsWith("KafkaJS")) {
    // A lock timeout (kafkajs marks it non-retriable) means another request held one of the client's
    // locks — a metadata refresh, a connection — for the whole request timeout: a broker away, as
    // kafkajs itself reads it (cluster.findBroker refreshes metadata on it).
    if (retriable !== false || name === "KafkaJSNumberOfRetriesExceeded" || name === "KafkaJSLockTimeout")
      return "transient";
    // When an inner kafkajs retrier gives up (broker unreachable), the outer one wraps its
    // NumberOfRetriesExceeded in a NonRetriableError carrying the connection error's message; the
    // original cause decides, as it does for kafkajs's own consumer restarts.
    if (cause !== undefined && cause !== error) return classify(cause);
    return "fatal";
  }
  if (cause !== undefined && cause !== error) return classify(cause);
  return "unknown";
}

/**
 * Transient by Neo4j's classification, yet as often caused by what one transaction carries as by the
 * server: a transaction over `db.memory.transaction.max` (or one that fills the memory pool alone), one
 * that runs past its timeout. Retrying the same batch fails the same way when a record in it is too
 * heavy; retrying that record alone tells which it is.
 */
const LOAD_DEPENDENT_NEO4J_CODES = new Set([
  "Neo.TransientError.General.TransactionMemoryLimit",
  "Neo.TransientError.General.MemoryPoolOutOfMemoryError",
  "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
  "Neo.ClientError.Transaction.TransactionTimedOut",
  "Neo.TransientError.Transaction.TransactionTimedOut",
]);

/**
 * Who a failed batch write is blamed on; the one rule for blame. Every failure is judged by whether
 * retrying *the same record* can succeed:
 * - `service` (fatal): no retry can succeed; the service stops.
 * - `infrastructure` (transient, not load-dependent): Neo4j, the broker or the registry is away or
 *   busy; the partition pauses and retries from the same record.
 * - `records` (rejected): Neo4j refused the data; the batch is narrowed to the records that fail
 *   alone, which are dead-lettered, and the rest is applied.
 * - `records-while-up` (unknown, and the load-dependent transient failures above): narrowed the same
 *   way, but a lone record is blamed only while Neo4j answers a ping; else it is the infrastructure's.
 * So a failure that repeats once the batch is narrowed to one record, while the infrastructure answers,
 * is that record's: nothing one record carries can stop the service or pause a partition for good.
 */
export type Blame = "service" | "infrastructure" | "records" | "records-while-up";

export function blame(error: unknown): Blame {
  const retryClass = classify(error);
  if (retryClass === "fatal") return "service";
  if (retryClass === "rejected") return "records";
  if (retryClass === "unknown" || isLoadDependent(error)) return "records-while-up";
  return "infrastructure";
}

function isLoadDependent(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== "object" || depth > 5) return false;
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  if (typeof code === "string" && LOAD_DEPENDENT_NEO4J_CODES.has(code)) return true;
  return cause !== undefined && cause !== error && isLoadDependent(cause, depth + 1);
}

/** Neo4j's status code of an error, when it has one: what a dead-letter record names. */
export function neo4jCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("Neo.") ? code : undefined;
}

/** Error text bounded for headers and logs: Neo4j quotes the offending value, which may be huge. */
export function boundedText(text: string, max = 1_000): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

export function errorMessage(error: unknown): string {
  // A library's message may quote a URL as configured, credentials and all.
  return redactUserinfo(error instanceof Error ? error.message : String(error));
}
