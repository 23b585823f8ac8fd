import fs from "node:fs";
import path from "node:path";
import neo4jDriver from "neo4j-driver";
import { REPO_ROOT, type StackConfig } from "../config.js";
import { cachedStep, hashInputs, maven } from "../lib/build.js";
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

// stack/neo4j is maintained separately; this file only follows its documented
// build/run contract (see stack/neo4j/README.md).
const NEO4J_DIR = path.join(REPO_ROOT, "stack", "neo4j");
const POM = path.join(NEO4J_DIR, "pom.xml");
const JAR = path.join(NEO4J_DIR, "target", "neo4j-launcher.jar");
const LIB = path.join(NEO4J_DIR, "target", "lib");

export const neo4jUri = (cfg: StackConfig) => `bolt://${HOST}:${cfg.neo4jBoltPort}`;

export const neo4j: ServerDef = {
  name: "neo4j",
  label: "Neo4j",
  readyTimeoutMs: 180_000,
  // Until this line, Bolt may be up with only the default password applied;
  // probing earlier would just collect auth failures (and risk a login lockout).
  readyLine: "NEO4J READY",
  // Neo4j checkpoints on shutdown; killing it early only means recovery on the next start.
  stopGraceMs: 60_000,

  ports: (cfg) => [{ port: cfg.neo4jBoltPort, role: "Neo4j Bolt", env: "STACK_NEO4J_BOLT_PORT" }],
  endpoint: neo4jUri,

  async prepare({ cfg, log }: ServerContext) {
    if (!fs.existsSync(POM)) {
      throw new Error("stack/neo4j/pom.xml is missing: the Neo4j launcher is not in this checkout");
    }
    const built = await cachedStep({
      name: "neo4j-launcher",
      stampDir: cacheDir(cfg),
      // Sources are compiled, so they are inputs too; the README is not.
      inputHash: hashInputs([POM, path.join(NEO4J_DIR, "src")]),
      outputs: [JAR, LIB],
      run: async () => {
        log("neo4j: building the launcher with Maven");
        // copy-dependencies never deletes, so a changed pom (say, a Neo4j bump)
        // would leave two versions on the classpath; a source edit needs no wipe.
        const pomHash = hashInputs([POM]);
        const pomStamp = path.join(cacheDir(cfg), "neo4j-pom.stamp");
        if (!fs.existsSync(pomStamp) || fs.readFileSync(pomStamp, "utf8").trim() !== pomHash) {
          fs.rmSync(LIB, { recursive: true, force: true });
        }
        await maven(
          POM,
          ["package", "dependency:copy-dependencies", "-DoutputDirectory=target/lib", "-DincludeScope=runtime"],
          cfg.mavenArgs,
          { cwd: REPO_ROOT },
        );
        fs.mkdirSync(cacheDir(cfg), { recursive: true });
        fs.writeFileSync(pomStamp, `${pomHash}\n`);
      },
    });
    if (!built) log("neo4j: launcher up to date");
    if (cfg.secure) await ensureStackTls(cfg, log);
    fs.mkdirSync(serverPaths(cfg, "neo4j").data, { recursive: true });
  },

  launch({ cfg }) {
    const p = serverPaths(cfg, "neo4j");
    return {
      command: cfg.java,
      args: [
        ownerMarker(cfg, "neo4j"),
        ...javaOpts(cfg.heaps.neo4j),
        "-Xms512m",
        // What Neo4j's own launcher passes; without them the page cache falls
        // back to a slower mode.
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "--add-opens=java.base/java.io=ALL-UNNAMED",
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
        "-cp",
        `${JAR}${path.delimiter}${LIB}${path.sep}*`,
        "dev.agentgraph.stack.Neo4jLauncher",
        "--home",
        p.data,
        "--bolt-address",
        `${HOST}:${cfg.neo4jBoltPort}`,
        "--pagecache",
        cfg.neo4jPagecache,
        ...(cfg.secure ? ["--tls-dir", stackTlsPaths(cfg).dir] : []),
      ],
      // The password goes through the environment, readable only by its owner, never on the command
      // line where every user's `ps` shows it.
      env: { ...process.env, NEO4J_PASSWORD: cfg.neo4jPassword },
      cwd: p.dir,
    };
  },

  async probe(cfg): Promise<Probe> {
    const driver = neo4jDriver.driver(neo4jUri(cfg), neo4jDriver.auth.basic(cfg.neo4jUser, cfg.neo4jPassword), {
      connectionTimeout: 2000,
      maxConnectionPoolSize: 1,
      logging: { level: "error", logger: () => {} },
    });
    try {
      const session = driver.session();
      try {
        const res = await session.run("RETURN 1 AS one");
        return res.records[0]?.get("one")?.toNumber?.() === 1
          ? { ok: true }
          : { ok: false, reason: "RETURN 1 gave no 1" };
      } finally {
        await session.close();
      }
    } catch (err) {
      const e = err as { code?: string; message: string };
      // Only probed after the ready line, when the password has been applied:
      // an auth failure now is final, and repeating it gets the user locked out.
      if (
        e.code === "Neo.ClientError.Security.Unauthorized" ||
        e.code === "Neo.ClientError.Security.AuthenticationRateLimit"
      ) {
        return {
          ok: false,
          fatal: true,
          reason: `authentication failed for user neo4j (${e.message}); is something else listening on this port?`,
        };
      }
      return { ok: false, reason: e.message };
    } finally {
      await driver.close();
    }
  },
};
