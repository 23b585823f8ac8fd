import { readFileSync } from "node:fs";

/**
 * Credentials that rotate. Kubernetes updates the files of a mounted Secret in place (Strimzi's User
 * Operator, cert-manager and Vault agents all rotate that way), so a credential given as a file is read
 * again each time a connection authenticates — Kafka's SASL handshakes and re-authentications, Neo4j's
 * connection acquisitions, TLS handshakes — never only once at start. A file that cannot be read at
 * that moment (a Secret being swapped) keeps its last value; start-up has already checked it once.
 */
export function currentSecret(value: string, file: string | undefined): () => string {
  if (file === undefined) return () => value;
  let last = value;
  return () => {
    try {
      // Secret files usually end with a newline that is not part of the secret.
      last = readFileSync(file, "utf8").replace(/\r?\n$/, "");
    } catch {
      // keep the last value read
    }
    return last;
  };
}

/** A PEM file's current contents, read again on each call, with the same fallback as `currentSecret`. */
export function currentPem(file: string): () => string {
  return currentSecret(readFileSync(file, "utf8"), file);
}

/**
 * How long an authentication failure may be a rotation in progress rather than a wrong credential:
 * the server may learn the new password a little before or after the mounted file does (the kubelet
 * refreshes Secret volumes within about a minute and a half).
 */
export const ROTATION_GRACE_MS = 5 * 60_000;

/**
 * Decides whether a failed authentication is retried. Before any success (a wrong credential at
 * start-up) never: start-up stops at once naming the cause. After one, failures are retried — the
 * credential is read again on each attempt — for `graceMs` from the first failure with the same
 * credential; a different credential failing starts a new window. Past that, the failure is final and
 * the service stops with it instead of retrying a dead credential for ever.
 */
export class RotationGrace {
  private established = false;
  private failing: { credential: string; since: number } | undefined;

  constructor(
    private readonly graceMs = ROTATION_GRACE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  succeeded(): void {
    this.established = true;
    this.failing = undefined;
  }

  /** A failure with `credential` (compared, never logged): true while it is worth retrying. */
  failed(credential: string): boolean {
    if (!this.established) return false;
    const now = this.now();
    if (this.failing?.credential !== credential) this.failing = { credential, since: now };
    return now - this.failing.since < this.graceMs;
  }
}
