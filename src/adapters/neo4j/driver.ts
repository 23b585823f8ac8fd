import neo4j, {
  type AuthToken,
  type AuthTokenManager,
  type ClientCertificateProvider,
  type Driver,
} from "neo4j-driver";
import type { Config } from "../../config.js";
import { isPasswordRefusal, TransientError } from "../../errors.js";
import { currentPem, currentSecret, RotationGrace } from "../credentials.js";

const rotations = new WeakMap<Driver, { readonly grace: RotationGrace; readonly password: () => string }>();

/**
 * The driver, with its password and client certificate read again as connections are made (see
 * adapters/credentials.ts). Call `credentialsAccepted` once the first query has succeeded: from then
 * on, a refused password is retried for a while as a rotation in progress (start-up fails at once).
 */
export function createDriver(config: Config["neo4j"], grace = new RotationGrace()): Driver {
  const password = currentSecret(config.password ?? "", config.passwordFile);
  const driver = neo4j.driver(config.uri, rotatingAuth(config.user, password), {
    maxConnectionPoolSize: config.maxPoolSize,
    connectionAcquisitionTimeout: 30_000,
    // Managed transactions (pings) only; reads and writes retry in graph-writer.ts.
    maxTransactionRetryTime: 15_000,
    userAgent: "agent-graph-projector",
    disableLosslessIntegers: false,
    ...neo4jTls(config.tls),
  });
  rotations.set(driver, { grace, password });
  return driver;
}

export function credentialsAccepted(driver: Driver): void {
  rotations.get(driver)?.grace.succeeded();
}

/**
 * A refused password, once the password has worked, is a rotation in progress for a while (the server
 * and the mounted file change a little apart): transient, so the write is retried with the file read
 * again; past the grace, or before any success, it stays the final error it is.
 */
export function duringRotation(driver: Driver, error: unknown): unknown {
  const rotation = rotations.get(driver);
  if (!rotation || !isPasswordRefusal(error) || !rotation.grace.failed(rotation.password())) return error;
  return new TransientError("Neo4j refused the password; retried while it may be rotating (its file is read again)", {
    cause: error,
  });
}

/**
 * Basic auth whose password is read from its file for every connection the pool hands out: when it
 * changed, the driver re-authenticates pooled connections with it. Refusals are judged by the writer
 * (duringRotation), not here: the driver does not report those met while opening a connection.
 */
function rotatingAuth(user: string, password: () => string): AuthTokenManager {
  let token: AuthToken = neo4j.auth.basic(user, password());
  return {
    getToken() {
      const current = password();
      if (current !== token.credentials) token = neo4j.auth.basic(user, current);
      return token;
    },
    handleSecurityException: () => false,
  };
}

/**
 * With a CA file (and/or a client certificate for mutual TLS) on a bolt:// or neo4j:// URI, the driver
 * encrypts and trusts only that CA; without, the URI's scheme decides (`+s`: system CAs).
 */
function neo4jTls(tls: Config["neo4j"]["tls"]): Partial<Parameters<typeof neo4j.driver>[2]> {
  if (!tls.caFile && !tls.certFile) return {};
  return {
    encrypted: "ENCRYPTION_ON",
    ...(tls.caFile
      ? { trust: "TRUST_CUSTOM_CA_SIGNED_CERTIFICATES", trustedCertificates: [tls.caFile] }
      : { trust: "TRUST_SYSTEM_CA_SIGNED_CERTIFICATES" }),
    ...(tls.certFile && tls.keyFile ? { clientCertificate: rotatingCertificate(tls.certFile, tls.keyFile) } : {}),
  };
}

/** The client certificate, loaded again by the driver for new connections whenever its files changed. */
function rotatingCertificate(certfile: string, keyfile: string): ClientCertificateProvider {
  const cert = currentPem(certfile);
  const key = currentPem(keyfile);
  let loaded = "";
  return {
    hasUpdate: () => cert() + key() !== loaded,
    getClientCertificate() {
      loaded = cert() + key();
      return { certfile, keyfile };
    },
  };
}
