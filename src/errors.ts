/**
 * Every failure the service meets falls in one retry class, decided here and nowhere else:
 * - `transient`: the infrastructure may recover (Neo4j deadlock, leader switch, lost connection, broker
 *   or registry unreachable). The batch is not acknowledged; its partition pauses and retries.
 * - `fatal`: configuration or programming faults (bad credentials, unknown database). Retrying cannot
 *   help; the service stops with the error.
 * Record-level problems (undecodable bytes, invalid fields) are not errors at all: they are fates.
 */
export type RetryClass = "transient" | "fatal";

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

export function classify(error: unknown): RetryClass {
  if (error instanceof TransientError) return "transient";
  if (error instanceof FatalError) return "fatal";
  const { code, name, retriable, cause } = (error ?? {}) as {
    code?: unknown;
    name?: unknown;
    retriable?: unknown;
    cause?: unknown;
  };
  if (typeof code === "string") {
    if (code.startsWith("Neo.TransientError.") || TRANSIENT_NEO4J_CODES.has(code)) return "transient";
    if (FATAL_NEO4J_CODES.has(code)) return "fatal";
    if (TRANSIENT_NETWORK_CODES.has(code)) return "transient";
  }
  if (typeof name === "string" && name.startsWith("KafkaJS")) {
    if (retriable !== false || name === "KafkaJSNumberOfRetriesExceeded") return "transient";
    // When an inner kafkajs retrier gives up (broker unreachable), the outer one wraps its
    // NumberOfRetriesExceeded in a NonRetriableError carrying the connection error's message; the
    // original cause decides, as it does for kafkajs's own consumer restarts.
    if (cause !== undefined && cause !== error) return classify(cause);
    return "fatal";
  }
  if (cause !== undefined && cause !== error) return classify(cause);
  return "transient";
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
