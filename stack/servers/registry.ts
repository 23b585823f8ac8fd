import fs from "node:fs";
import https from "node:https";
import path from "node:path";
import { REPO_ROOT, type StackConfig } from "../config.js";
import { cachedStep, hashInputs, maven, run } from "../lib/build.js";
import { HOST } from "../lib/ports.js";
import { ensureStackTls, stackTlsPaths } from "../lib/tls.js";
import {
  cacheDir,
  javaOpts,
  ownerMarker,
  type Probe,
  type ServerContext,
  type ServerDef,
  serverPaths,
} from "./types.js";

const REGISTRY_DIR = path.join(REPO_ROOT, "stack", "registry");
const POM = path.join(REGISTRY_DIR, "pom.xml");
const ARCHIVE = path.join(REGISTRY_DIR, "target", "apicurio-registry-app-all.tar.gz");
const distDir = (cfg: StackConfig) => path.join(cacheDir(cfg), "apicurio-registry");

/** The Confluent-compatible API lives under this prefix on Apicurio. */
export const CCOMPAT_PATH = "/apis/ccompat/v7";
export const registryUrl = (cfg: StackConfig) => `http://${HOST}:${cfg.registryPort}${CCOMPAT_PATH}`;
/** Secured mode: the same API over HTTPS with the stack's certificate (no authentication, see stack/README.md). */
export const registryHttpsUrl = (cfg: StackConfig) => `https://${HOST}:${cfg.registryHttpsPort}${CCOMPAT_PATH}`;

/** Quarkus's HTTPS listener beside the plain one, with the stack's PEM certificate and key. */
function httpsArgs(cfg: StackConfig): string[] {
  if (!cfg.secure) return [];
  const tls = stackTlsPaths(cfg);
  return [
    `-Dquarkus.http.ssl-port=${cfg.registryHttpsPort}`,
    `-Dquarkus.http.ssl.certificate.files=${tls.serverCert}`,
    `-Dquarkus.http.ssl.certificate.key-files=${tls.serverKey}`,
    "-Dquarkus.http.insecure-requests=enabled",
  ];
}

function probeHttps(cfg: StackConfig): Promise<Probe> {
  return new Promise((resolve) => {
    const request = https.get(
      `${registryHttpsUrl(cfg)}/subjects`,
      { ca: fs.readFileSync(stackTlsPaths(cfg).caCert), timeout: 3000 },
      (res) => {
        res.resume();
        resolve(
          res.statusCode === 200 ? { ok: true } : { ok: false, reason: `HTTPS GET /subjects: ${res.statusCode}` },
        );
      },
    );
    request.on("timeout", () => request.destroy(new Error("HTTPS timeout")));
    request.on("error", (err) => resolve({ ok: false, reason: `HTTPS: ${err.message}` }));
  });
}

/** Apicurio 2.x ships a legacy runner jar; 3.x a quarkus-app/ layout. Accept both. */
function findRunnable(dir: string): string | undefined {
  const fastJar = path.join(dir, "quarkus-app", "quarkus-run.jar");
  if (fs.existsSync(fastJar)) return fastJar;
  const runner = fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => f.endsWith("-runner.jar")) : undefined;
  return runner ? path.join(dir, runner) : undefined;
}

export const registry: ServerDef = {
  name: "registry",
  label: "Schema registry (Apicurio)",
  readyTimeoutMs: 90_000,
  stopGraceMs: 15_000,

  ports: (cfg) => [
    { port: cfg.registryPort, role: "schema registry HTTP", env: "STACK_REGISTRY_PORT" },
    ...(cfg.secure
      ? [{ port: cfg.registryHttpsPort, role: "schema registry HTTPS", env: "STACK_REGISTRY_HTTPS_PORT" }]
      : []),
  ],
  endpoint: registryUrl,

  async prepare({ cfg, log }: ServerContext) {
    const dist = distDir(cfg);
    const fetched = await cachedStep({
      name: "apicurio-registry",
      stampDir: cacheDir(cfg),
      inputHash: hashInputs([POM]),
      outputs: [dist],
      run: async () => {
        log("registry: fetching Apicurio Registry with Maven");
        await maven(POM, ["dependency:copy"], cfg.mavenArgs, { cwd: REPO_ROOT });
        // Extract beside the target and swap in, so an interrupted extract
        // never passes for a complete one.
        const tmp = `${dist}.partial`;
        fs.rmSync(tmp, { recursive: true, force: true });
        fs.mkdirSync(tmp, { recursive: true });
        await run("tar", ["-xzf", ARCHIVE, "-C", tmp], { cwd: REPO_ROOT });
        fs.rmSync(dist, { recursive: true, force: true });
        fs.renameSync(tmp, dist);
      },
    });
    if (!fetched) log("registry: distribution up to date");
    if (!findRunnable(dist)) throw new Error(`no runnable jar found in ${dist}; delete it and retry`);
    fs.mkdirSync(serverPaths(cfg, "registry").dir, { recursive: true });
    if (cfg.secure) await ensureStackTls(cfg, log);
  },

  launch({ cfg }) {
    const jar = findRunnable(distDir(cfg));
    if (!jar) throw new Error("Apicurio Registry is not prepared");
    return {
      command: cfg.java,
      args: [
        ownerMarker(cfg, "registry"),
        ...javaOpts(cfg.heaps.registry),
        `-Dquarkus.http.host=${HOST}`,
        `-Dquarkus.http.port=${cfg.registryPort}`,
        // Ids handed out by ccompat register must be what GET /schemas/ids/{id}
        // resolves and what Confluent would give: one id per distinct schema
        // content (shared across subjects), not Apicurio's per-version global id.
        "-Dregistry.ccompat.legacy-id-mode.enabled=false",
        // Confluent dedupes by parsed schema, not by raw text; without this a
        // whitespace-only difference would create a new version and id.
        "-Dregistry.ccompat.use-canonical-hash=true",
        ...httpsArgs(cfg),
        "-jar",
        jar,
      ],
      cwd: serverPaths(cfg, "registry").dir,
    };
  },

  async probe(cfg): Promise<Probe> {
    try {
      const res = await fetch(`${registryUrl(cfg)}/subjects`, { signal: AbortSignal.timeout(3000) });
      await res.arrayBuffer();
      if (res.status !== 200) return { ok: false, reason: `GET /subjects returned ${res.status}` };
      return cfg.secure ? await probeHttps(cfg) : { ok: true };
    } catch (err) {
      return { ok: false, reason: (err as Error).message };
    }
  },
};
