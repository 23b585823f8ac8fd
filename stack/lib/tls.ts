import fs from "node:fs";
import path from "node:path";
import type { StackConfig } from "../config.js";
import { run } from "./build.js";

/** The secured stack's certificate authority and the one server certificate every server presents. */
export interface StackTls {
  dir: string;
  /** PEM: what clients trust. */
  caCert: string;
  /** PEM, PKCS#8, unencrypted: Neo4j and the registry read these. */
  serverCert: string;
  serverKey: string;
  /** PKCS#12 with the key, the certificate and the CA: Kafka's keystore. */
  serverP12: string;
  p12Password: string;
}

const P12_PASSWORD = "stack-keystore-pw";

export function stackTlsPaths(cfg: StackConfig): StackTls {
  const dir = path.join(cfg.home, "tls");
  return {
    dir,
    caCert: path.join(dir, "ca.crt"),
    serverCert: path.join(dir, "server.crt"),
    serverKey: path.join(dir, "server.key"),
    serverP12: path.join(dir, "server.p12"),
    p12Password: P12_PASSWORD,
  };
}

/**
 * Generates, once per STACK_HOME, a CA and a server certificate for 127.0.0.1 and localhost signed by
 * it (openssl). Idempotent: kept while all files exist; delete STACK_HOME/tls to renew them.
 */
export async function ensureStackTls(cfg: StackConfig, log: (line: string) => void): Promise<StackTls> {
  const tls = stackTlsPaths(cfg);
  if ([tls.caCert, tls.serverCert, tls.serverKey, tls.serverP12].every((file) => fs.existsSync(file))) return tls;
  fs.rmSync(tls.dir, { recursive: true, force: true });
  log("tls: generating the stack's CA and server certificate with openssl");
  fs.mkdirSync(tls.dir, { recursive: true, mode: 0o700 });
  const at = (name: string) => path.join(tls.dir, name);
  const openssl = (args: string[]) => run("openssl", args, { cwd: tls.dir });
  await openssl([
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "825",
    "-subj",
    "/CN=agent-graph-projector local stack CA",
    "-keyout",
    at("ca.key"),
    "-out",
    tls.caCert,
  ]);
  await openssl([
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=localhost",
    "-keyout",
    tls.serverKey,
    "-out",
    at("server.csr"),
  ]);
  fs.writeFileSync(at("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  await openssl([
    "x509",
    "-req",
    "-days",
    "825",
    "-in",
    at("server.csr"),
    "-CA",
    tls.caCert,
    "-CAkey",
    at("ca.key"),
    "-CAcreateserial",
    "-extfile",
    at("server.ext"),
    "-out",
    tls.serverCert,
  ]);
  await openssl([
    "pkcs12",
    "-export",
    "-in",
    tls.serverCert,
    "-inkey",
    tls.serverKey,
    "-certfile",
    tls.caCert,
    "-passout",
    `pass:${P12_PASSWORD}`,
    "-out",
    tls.serverP12,
  ]);
  // Neo4j's SSL policy looks for these beside its key and certificate.
  fs.mkdirSync(at("trusted"), { recursive: true });
  fs.mkdirSync(at("revoked"), { recursive: true });
  fs.copyFileSync(tls.caCert, path.join(at("trusted"), "ca.crt"));
  return tls;
}
