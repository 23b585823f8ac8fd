/**
 * Builds the benchmark's peer — the Neo4j Connector for Apache Kafka (sink) running in a Kafka Connect
 * worker — from source and Maven Central only, cached like the stack's other artifacts
 * (stack/lib/build.ts `cachedStep`): nothing is rebuilt while its inputs are unchanged.
 *
 * The connector's releases are not on Maven Central, so it is built from a source checkout this
 * script obtains or is pointed at (its code is not part of this repository):
 *   - PEER_CONNECTOR_SRC: a directory holding the connector's sources — a checked-out work tree, or a
 *     git directory (bare clone or `.git`), from which PEER_CONNECTOR_REF is archived;
 *   - otherwise PEER_CONNECTOR_GIT (default the public GitHub repository) is cloned at PEER_CONNECTOR_REF.
 * The connector needs two libraries of Neo4j's that the Maven Central reachable here does not carry in
 * the versions it pins: the CDC client (org.neo4j.connectors:cdc, not there at all) and caniuse
 * (org.neo4j:caniuse-core, only up to 1.3.0). Both are built the same way (PEER_CDC_CLIENT_SRC /
 * _GIT / _REF, PEER_CANIUSE_SRC / _GIT / _REF) and installed into the local Maven repository.
 *
 * Tests are skipped, and the POMs of the build copy (never the sources) are patched: test-scope
 * dependencies (Confluent's, which live outside Maven Central), the `testing` module and extra
 * repositories are removed, so that Maven resolves nothing beyond Maven Central.
 *
 * Kafka Connect itself is org.apache.kafka:connect-runtime at the stack's Kafka version
 * (bench/peer/connect/pom.xml); Avro records are decoded by Apicurio's Connect converter
 * (bench/peer/apicurio-converter/pom.xml), configured for the Confluent wire format in worker.ts.
 */
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { cachedStep, hashInputs, maven, run } from "../../stack/lib/build.js";

const PEER_DIR = path.dirname(fileURLToPath(import.meta.url));
const CONNECT_POM = path.join(PEER_DIR, "connect", "pom.xml");
const CONVERTER_POM = path.join(PEER_DIR, "apicurio-converter", "pom.xml");

/** Neo4j's build resources (license texts for the license plugins): a version Maven Central has. */
const BUILD_RESOURCES = "2026.07.1";

/**
 * Release 5.5.2 pins the CDC client 1.2.2, which has no tag; its v1.2.1 is built instead. The Neo4j
 * Java driver 4.4.x pinned by the connector and its libraries is not on Maven Central here in every
 * patch version: 4.4.26 is, and is used throughout. Build resources (license texts) likewise.
 */
const DEFAULT_CONNECTOR_MAVEN_ARGS = [
  "-Dcdc.version=1.2.1",
  "-Dneo4j-java-driver.version=4.4.26",
  `-Dbuild-resources.version=${BUILD_RESOURCES}`,
];
const LIBRARY_MAVEN_ARGS = [
  "-Dneo4j-java-driver.version=4.4.26",
  "-Dneo4j-java-driver-slim.version=4.4.26",
  `-Dbuild-resources.version=${BUILD_RESOURCES}`,
];

/** Skips everything but compiling and packaging (tests, license headers, formatting, POM order). */
const SKIPS = [
  "-Dmaven.test.skip=true",
  "-DskipTests",
  "-Denforcer.skip=true",
  "-Dlicense.skip=true",
  "-Dsort.skip=true",
  "-Dspotless.check.skip=true",
  "-Dspotless.apply.skip=true",
  // Compile Kotlin in Maven's own JVM: the default daemon outlives the build by two hours, busy on
  // the cores the benchmark then measures. kotlin-maven-plugin 2.3+ reads kotlin.compiler.daemon
  // (its useDaemon); the execution-strategy property is the older plugins' spelling.
  "-Dkotlin.compiler.daemon=false",
  "-Dkotlin.compiler.execution.strategy=in-process",
];

const envSchema = z.object({
  PEER_CONNECTOR_SRC: z.string().min(1).optional(),
  PEER_CONNECTOR_GIT: z.string().min(1).default("https://github.com/neo4j/neo4j-kafka-connector.git"),
  PEER_CONNECTOR_REF: z.string().min(1).default("5.5.2"),
  PEER_CDC_CLIENT_SRC: z.string().min(1).optional(),
  PEER_CDC_CLIENT_GIT: z.string().min(1).default("https://github.com/neo4j/neo4j-cdc-client.git"),
  PEER_CDC_CLIENT_REF: z.string().min(1).default("v1.2.1"),
  PEER_CANIUSE_SRC: z.string().min(1).optional(),
  PEER_CANIUSE_GIT: z.string().min(1).default("https://github.com/neo4j/caniuse.git"),
  PEER_CANIUSE_REF: z.string().min(1).default("v1.4.0"),
  PEER_CONNECTOR_MAVEN_ARGS: z.string().optional(),
});

export type PeerBuildConfig = z.infer<typeof envSchema>;

export function loadPeerBuildConfig(env: NodeJS.ProcessEnv): PeerBuildConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid ${String(issue?.path[0])}: ${issue?.message}`);
  }
  return parsed.data;
}

export interface PeerArtifacts {
  /** Kafka Connect's runtime jars (the worker's class path). */
  readonly connectLib: string;
  /** Connect's plugin.path: the connector's jar and the converter, one directory each. */
  readonly pluginPath: string;
  readonly connectorJar: string;
  /** e.g. "5.5.2 (7fe0636)". */
  readonly connectorVersion: string;
}

interface Source {
  readonly name: string;
  readonly dir?: string;
  readonly git: string;
  readonly ref: string;
}

const isGitDir = (dir: string) =>
  fs.existsSync(path.join(dir, "HEAD")) &&
  fs.existsSync(path.join(dir, "objects")) &&
  !fs.existsSync(path.join(dir, "pom.xml"));

/** A stable identity of a source: the commit a git source resolves to, else a hash of the tree. */
function sourceId(source: Source): string {
  if (source.dir && !isGitDir(source.dir))
    return `tree:${hashInputs([source.dir], ["target", ".git", "node_modules"])}`;
  if (source.dir) {
    const commit = execFileSync("git", ["--git-dir", source.dir, "rev-parse", `${source.ref}^{commit}`], {
      encoding: "utf8",
    }).trim();
    return `commit:${commit}`;
  }
  return `git:${source.git}@${source.ref}`;
}

/** Puts a fresh copy of the sources in `into` (the copy is patched; the original is never touched). */
async function materialise(source: Source, into: string): Promise<void> {
  fs.rmSync(into, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(into), { recursive: true });
  if (source.dir && !isGitDir(source.dir)) {
    fs.cpSync(source.dir, into, {
      recursive: true,
      filter: (p) => !["target", ".git", "node_modules"].includes(path.basename(p)),
    });
    return;
  }
  if (source.dir) {
    fs.mkdirSync(into, { recursive: true });
    const tar = path.join(path.dirname(into), `${source.name}.tar`);
    await run("git", ["--git-dir", source.dir, "archive", "--format=tar", "-o", tar, source.ref], { cwd: into });
    await run("tar", ["-xf", tar], { cwd: into });
    fs.rmSync(tar);
    return;
  }
  await run("git", ["clone", "--quiet", "--depth", "1", "--branch", source.ref, source.git, into], {
    cwd: path.dirname(into),
  });
}

/**
 * Removes what would make Maven leave Maven Central: test-scope dependencies, the `testing` module
 * (test support only) and declared repositories; pins Neo4j's build resources, which some POMs name
 * by a literal version, to one Maven Central has. Every POM of the copy, top level and modules.
 */
export function patchPom(xml: string): string {
  return xml
    .replace(
      /(<groupId>org\.neo4j\.build<\/groupId>\s*<artifactId>resources<\/artifactId>\s*<version>)[^<]*(<\/version>)/g,
      `$1${BUILD_RESOURCES}$2`,
    )
    .replace(
      /<dependency>(?:(?!<\/dependency>)[\s\S])*?<scope>test<\/scope>(?:(?!<\/dependency>)[\s\S])*?<\/dependency>/g,
      "",
    )
    .replace(/<module>testing<\/module>/g, "")
    .replace(/<repositories>[\s\S]*?<\/repositories>/g, "")
    .replace(/<pluginRepositories>[\s\S]*?<\/pluginRepositories>/g, "");
}

function patchPoms(root: string): void {
  const poms = [path.join(root, "pom.xml")];
  for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
    const pom = path.join(root, entry.name, "pom.xml");
    if (entry.isDirectory() && fs.existsSync(pom)) poms.push(pom);
  }
  for (const pom of poms) fs.writeFileSync(pom, patchPom(fs.readFileSync(pom, "utf8")));
}

/** Builds (or finds cached) everything the peer needs; `cacheDir` is the stack's cache directory. */
export async function buildPeer(opts: {
  cacheDir: string;
  mavenArgs: string[];
  env?: NodeJS.ProcessEnv;
  log: (line: string) => void;
}): Promise<PeerArtifacts> {
  const cfg = loadPeerBuildConfig(opts.env ?? process.env);
  const root = path.join(opts.cacheDir, "peer");
  const connectLib = path.join(root, "connect-lib");
  const pluginPath = path.join(root, "plugins");
  const connectorDir = path.join(pluginPath, "neo4j-kafka-connector");
  const converterDir = path.join(pluginPath, "apicurio-converter");
  const stampDir = root;
  const connectorArgs = cfg.PEER_CONNECTOR_MAVEN_ARGS?.split(/\s+/).filter(Boolean) ?? DEFAULT_CONNECTOR_MAVEN_ARGS;

  const connectBuilt = await cachedStep({
    name: "connect-runtime",
    stampDir,
    inputHash: hashInputs([CONNECT_POM]),
    outputs: [connectLib],
    run: async () => {
      opts.log("peer: resolving Kafka Connect (connect-runtime) with Maven");
      fs.rmSync(connectLib, { recursive: true, force: true });
      await maven(
        CONNECT_POM,
        ["dependency:copy-dependencies", `-DoutputDirectory=${connectLib}`, "-DincludeScope=runtime"],
        opts.mavenArgs,
        { cwd: PEER_DIR },
      );
    },
  });
  const converterBuilt = await cachedStep({
    name: "apicurio-converter",
    stampDir,
    inputHash: hashInputs([CONVERTER_POM]),
    outputs: [converterDir],
    run: async () => {
      opts.log("peer: resolving Apicurio's Kafka Connect converter with Maven");
      fs.rmSync(converterDir, { recursive: true, force: true });
      await maven(
        CONVERTER_POM,
        [
          "dependency:copy-dependencies",
          `-DoutputDirectory=${converterDir}`,
          "-DincludeScope=runtime",
          // The worker provides Kafka's own classes; a second copy in a plugin only confuses.
          "-DexcludeGroupIds=org.apache.kafka",
        ],
        opts.mavenArgs,
        { cwd: PEER_DIR },
      );
    },
  });

  const libraries: Source[] = [
    { name: "cdc-client", dir: cfg.PEER_CDC_CLIENT_SRC, git: cfg.PEER_CDC_CLIENT_GIT, ref: cfg.PEER_CDC_CLIENT_REF },
    { name: "caniuse", dir: cfg.PEER_CANIUSE_SRC, git: cfg.PEER_CANIUSE_GIT, ref: cfg.PEER_CANIUSE_REF },
  ];
  const connector: Source = {
    name: "connector",
    dir: cfg.PEER_CONNECTOR_SRC,
    git: cfg.PEER_CONNECTOR_GIT,
    ref: cfg.PEER_CONNECTOR_REF,
  };
  const connectorId = sourceId(connector);
  const inputHash = crypto
    .createHash("sha256")
    .update([...libraries.map(sourceId), connectorId, ...connectorArgs, patchPom.toString()].join("\n"))
    .digest("hex");
  const versionFile = path.join(connectorDir, "VERSION");
  const connectorBuilt = await cachedStep({
    name: "neo4j-kafka-connector",
    stampDir,
    inputHash,
    outputs: [connectorDir, versionFile],
    run: async () => {
      const work = path.join(root, "build");
      const logFile = path.join(root, "build.log");
      fs.mkdirSync(root, { recursive: true });
      fs.writeFileSync(logFile, "");
      for (const library of libraries) {
        opts.log(`peer: building Neo4j's ${library.name} ${library.ref} from source (log: ${logFile})`);
        const dir = path.join(work, library.name);
        await materialise(library, dir);
        patchPoms(dir);
        await run("mvn", ["-B", "-q", ...SKIPS, ...LIBRARY_MAVEN_ARGS, ...opts.mavenArgs, "install"], {
          cwd: dir,
          logFile,
        });
      }
      opts.log(`peer: building the Neo4j Connector for Apache Kafka ${connector.ref} from source (a few minutes)`);
      const srcDir = path.join(work, "connector");
      await materialise(connector, srcDir);
      patchPoms(srcDir);
      await run(
        "mvn",
        ["-B", "-q", ...SKIPS, ...connectorArgs, ...opts.mavenArgs, "-pl", "packaging", "-am", "package"],
        { cwd: srcDir, logFile },
      );
      const target = path.join(srcDir, "packaging", "target");
      const jar = fs.readdirSync(target).find((f) => /^neo4j-kafka-connect-neo4j-.*\.jar$/.test(f));
      if (!jar) throw new Error(`no connector jar in ${target}`);
      fs.rmSync(connectorDir, { recursive: true, force: true });
      fs.mkdirSync(connectorDir, { recursive: true });
      fs.copyFileSync(path.join(target, jar), path.join(connectorDir, jar));
      const version = /^neo4j-kafka-connect-neo4j-(.*)\.jar$/.exec(jar)?.[1] ?? "?";
      fs.writeFileSync(versionFile, `${version} (${connectorId.replace(/^commit:/, "").slice(0, 12)})\n`);
      fs.rmSync(work, { recursive: true, force: true });
    },
  });
  if (!connectBuilt && !converterBuilt && !connectorBuilt)
    opts.log("peer: Connect, converter and connector up to date");
  const connectorJar = fs.readdirSync(connectorDir).find((f) => f.endsWith(".jar"));
  if (!connectorJar) throw new Error(`no connector jar in ${connectorDir}`);
  return {
    connectLib,
    pluginPath,
    connectorJar: path.join(connectorDir, connectorJar),
    connectorVersion: fs.readFileSync(versionFile, "utf8").trim(),
  };
}
