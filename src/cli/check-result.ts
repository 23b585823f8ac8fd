import { classify, errorMessage, isPasswordRefusal, isTlsTrustFailure } from "../errors.js";
import { EXIT_CODES, type ExitName } from "./exit-codes.js";

/** One of `check`'s checks: passed, failed with its class, or skipped because one it needs failed. */
export interface CheckRow {
  readonly check: string;
  readonly status: "ok" | "failed" | "skipped";
  readonly detail: string;
  /** The failure class (an EXIT_CODES name) of a failed check. */
  readonly failure?: ExitName;
}

/** The server a check talks to, and the class of a failure that is neither reachability nor credentials. */
export type Server = "kafka" | "registry" | "neo4j";

const UNREACHABLE: Record<Server, ExitName> = {
  kafka: "kafkaUnreachable",
  registry: "registryUnreachable",
  neo4j: "neo4jUnreachable",
};

/** The registry adapter's FatalError for HTTP 401/403; Kafka's SASL refusal; Neo4j's password refusal. */
const REGISTRY_REFUSAL = /refused our credentials/;

function refusedCredentials(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== "object" || depth > 5) return false;
  if (isPasswordRefusal(error) || isTlsTrustFailure(error)) return true;
  const { name, message, cause } = error as { name?: unknown; message?: unknown; cause?: unknown };
  if (name === "KafkaJSSASLAuthenticationError" || REGISTRY_REFUSAL.test(String(message))) return true;
  return cause !== undefined && cause !== error && refusedCredentials(cause, depth + 1);
}

/**
 * A failed check's class, by the one rule for failures (errors.ts): refused credentials or TLS trust
 * are their own class; what waiting may cure (transient, unknown) is the server being away; what it
 * cannot (fatal: a topic, constraint or subject that is not there) is `absent`.
 */
export function failureClass(error: unknown, server: Server, absent: ExitName): ExitName {
  if (refusedCredentials(error)) return "credentialsRefused";
  const retryClass = classify(error);
  return retryClass === "fatal" || retryClass === "rejected" ? absent : UNREACHABLE[server];
}

export function failedRow(check: string, error: unknown, server: Server, absent: ExitName): CheckRow {
  return { check, status: "failed", detail: errorMessage(error), failure: failureClass(error, server, absent) };
}

/** The whole run: ok when every check passed; else the exit code of the first failure class in EXIT_CODES' order. */
export function checkOutcome(rows: readonly CheckRow[]): { ok: boolean; exitCode: number; failure?: ExitName } {
  const failures = new Set(rows.flatMap((row) => (row.failure ? [row.failure] : [])));
  const first = (Object.keys(EXIT_CODES) as ExitName[]).find((name) => failures.has(name));
  return first === undefined
    ? { ok: true, exitCode: EXIT_CODES.ok.code }
    : { ok: false, exitCode: EXIT_CODES[first].code, failure: first };
}
