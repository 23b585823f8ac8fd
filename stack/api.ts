import fs from "node:fs";
import path from "node:path";
import { loadConfig, SERVER_NAMES, type ServerName, type StackConfig } from "./config.js";
import { CommandError } from "./lib/build.js";
import { portIsFree } from "./lib/ports.js";
import { commandLine, isAlive, readPid, rssKiB, sleep, spawnDetached, tail, terminate } from "./lib/process.js";
import { type KafkaQuorum, kafkaDefs, kafkaEndpoints, kafkaNodeDef, kafkaQuorum } from "./servers/kafka.js";
import { neo4j, neo4jUri } from "./servers/neo4j.js";
import { registry, registryUrl } from "./servers/registry.js";
import { ownerMarker, type ServerContext, type ServerDef, serverPaths, unitOf } from "./servers/types.js";

export type { ServerName, StackConfig } from "./config.js";
export { loadConfig, StackConfigError } from "./config.js";
export type { KafkaQuorum } from "./servers/kafka.js";

const SERVERS: Record<Exclude<ServerName, "kafka">, ServerDef> = { registry, neo4j };

/** The processes of a server under this config: one, or for Kafka one per node. */
function defsOf(cfg: StackConfig, name: ServerName): ServerDef[] {
  return name === "kafka" ? kafkaDefs(cfg) : [SERVERS[name]];
}

/**
 * Kafka nodes that have a directory under STACK_HOME, whatever layout the current config asks for:
 * `down`, `status` and `reset` must find a cluster started with STACK_KAFKA_BROKERS=3 also when the
 * variable is not set now (and the single node when it is).
 */
function knownKafkaDefs(cfg: StackConfig): ServerDef[] {
  const defs = new Map(kafkaDefs(cfg).map((def) => [unitOf(def), def]));
  const entries = fs.existsSync(cfg.home) ? fs.readdirSync(cfg.home) : [];
  for (const entry of entries) {
    const id = entry === "kafka" ? 1 : Number(/^kafka-(\d+)$/.exec(entry)?.[1] ?? Number.NaN);
    if (!Number.isInteger(id) || defs.has(entry)) continue;
    const def = kafkaNodeDef(id, entry === "kafka" ? 1 : Math.max(3, id));
    defs.set(entry, def);
  }
  return [...defs.values()];
}

function knownDefsOf(cfg: StackConfig, name: ServerName): ServerDef[] {
  return name === "kafka" ? knownKafkaDefs(cfg) : [SERVERS[name]];
}

export interface StackEndpoints {
  kafkaBrokers: string[];
  neo4jUri: string;
  neo4jUser: string;
  neo4jPassword: string;
  schemaRegistryUrl: string;
}

export interface StackUpResult extends StackEndpoints {
  /** Servers this call launched; empty when everything was already up. */
  started: ServerName[];
  startedAnything: boolean;
}

export interface StackOptions {
  /** Environment to read STACK_* and NEO4J_PASSWORD from; defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Subset of servers; defaults to STACK_SERVICES or all three. */
  services?: ServerName[];
  /** Progress messages; defaults to silence. */
  log?: (msg: string) => void;
}

export interface ServerStatus {
  name: ServerName;
  /** The process: the server's name, or a Kafka node's ("kafka-2"). */
  unit: string;
  label: string;
  pid: number | undefined;
  alive: boolean;
  answering: boolean;
  reason: string | undefined;
  endpoint: string;
  rssKiB: number | undefined;
  logFile: string;
}

export interface StackStatus {
  home: string;
  servers: ServerStatus[];
  endpoints: StackEndpoints;
}

export class StackError extends Error {
  override name = "StackError";
  constructor(
    message: string,
    /** Log tails and similar context, printed by the CLI under the message. */
    readonly details = "",
  ) {
    super(message);
  }
}

export function stackEndpoints(opts: StackOptions = {}): StackEndpoints {
  return endpointsOf(loadConfig(opts.env));
}

function endpointsOf(cfg: StackConfig): StackEndpoints {
  return {
    kafkaBrokers: kafkaEndpoints(cfg),
    neo4jUri: neo4jUri(cfg),
    neo4jUser: cfg.neo4jUser,
    neo4jPassword: cfg.neo4jPassword,
    schemaRegistryUrl: registryUrl(cfg),
  };
}

/** The env lines a shell or the projector reads; only for the selected servers. */
export function envLines(e: StackEndpoints, services: readonly ServerName[] = SERVER_NAMES): string[] {
  const lines: string[] = [];
  if (services.includes("kafka")) lines.push(`KAFKA_BROKERS=${e.kafkaBrokers.join(",")}`);
  if (services.includes("registry")) lines.push(`SCHEMA_REGISTRY_URL=${e.schemaRegistryUrl}`);
  if (services.includes("neo4j")) {
    lines.push(`NEO4J_URI=${e.neo4jUri}`, `NEO4J_USER=${e.neo4jUser}`, `NEO4J_PASSWORD=${e.neo4jPassword}`);
  }
  return lines;
}

/** Settings a running server was launched with that clients depend on. */
type Launched = Pick<
  StackConfig,
  | "kafkaPort"
  | "kafkaControllerPort"
  | "kafkaBrokers"
  | "kafkaPortStep"
  | "registryPort"
  | "neo4jBoltPort"
  | "neo4jPassword"
  | "secure"
  | "kafkaSaslSslPort"
  | "registryHttpsPort"
>;

const launchedPath = (cfg: StackConfig, unit: string) => path.join(serverPaths(cfg, unit).dir, "launched.json");

function recordLaunch(cfg: StackConfig, unit: string) {
  const { kafkaPort, kafkaControllerPort, kafkaBrokers, kafkaPortStep, registryPort, neo4jBoltPort, neo4jPassword } =
    cfg;
  const { secure, kafkaSaslSslPort, registryHttpsPort } = cfg;
  const launched: Launched = {
    kafkaPort,
    kafkaControllerPort,
    kafkaBrokers,
    kafkaPortStep,
    registryPort,
    neo4jBoltPort,
    neo4jPassword,
    secure,
    kafkaSaslSslPort,
    registryHttpsPort,
  };
  fs.writeFileSync(launchedPath(cfg, unit), `${JSON.stringify(launched, null, 2)}\n`);
}

/**
 * The config a running server really has: the env of a later command may name
 * other ports, and probing those would check (or report on) the wrong process.
 */
function asLaunched(cfg: StackConfig, unit: string): StackConfig {
  try {
    const launched = JSON.parse(fs.readFileSync(launchedPath(cfg, unit), "utf8")) as Partial<Launched>;
    // Written before Kafka could run as a cluster: one node.
    return { ...cfg, kafkaBrokers: 1, ...launched };
  } catch {
    return cfg;
  }
}

/** What must match for a running server to serve the requested config. */
function fingerprint(cfg: StackConfig, def: ServerDef): string {
  return JSON.stringify({
    ports: def.ports(cfg).map((p) => p.port),
    password: def.name === "neo4j" ? cfg.neo4jPassword : undefined,
    secure: cfg.secure,
  });
}

/** Pid of our live server process, cleaning up a pid file that no longer proves anything. */
async function ownedPid(cfg: StackConfig, def: ServerDef): Promise<number | undefined> {
  const { pidFile } = serverPaths(cfg, unitOf(def));
  const pid = readPid(pidFile);
  if (pid === undefined) return undefined;
  if (isAlive(pid) && (await commandLine(pid))?.includes(ownerMarker(cfg, unitOf(def)))) return pid;
  fs.rmSync(pidFile, { force: true });
  return undefined;
}

async function waitReady(cfg: StackConfig, def: ServerDef, pid: number): Promise<void> {
  const deadline = Date.now() + def.readyTimeoutMs;
  let last = "not probed yet";
  while (Date.now() < deadline) {
    if (!isAlive(pid)) {
      throw failure(cfg, def, `${def.label} (pid ${pid}) exited during startup`);
    }
    if (def.readyLine && !fs.readFileSync(serverPaths(cfg, unitOf(def)).logFile, "utf8").includes(def.readyLine)) {
      last = `waiting for "${def.readyLine}" in the log`;
    } else {
      const probe = await def.probe(cfg);
      if (probe.ok) return;
      if (probe.fatal) throw failure(cfg, def, `${def.label}: ${probe.reason}`);
      last = probe.reason;
    }
    await sleep(500);
  }
  throw failure(cfg, def, `${def.label} did not answer within ${def.readyTimeoutMs / 1000}s (last: ${last})`);
}

function failure(cfg: StackConfig, def: ServerDef, message: string): StackError {
  const { logFile } = serverPaths(cfg, unitOf(def));
  return new StackError(message, `--- last lines of ${logFile} ---\n${tail(logFile)}`);
}

// One `up` at a time per STACK_HOME, across processes (two vitest runs, a CLI
// beside a test run) and within one process.
let inProcess: Promise<unknown> = Promise.resolve();

async function withUpLock<T>(cfg: StackConfig, fn: () => Promise<T>): Promise<T> {
  const run = inProcess.then(async () => {
    fs.mkdirSync(cfg.home, { recursive: true });
    const lock = path.join(cfg.home, "up.lock");
    const deadline = Date.now() + 10 * 60_000;
    for (;;) {
      try {
        fs.writeFileSync(lock, `${process.pid}\n`, { flag: "wx" });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        const holder = readPid(lock);
        if (holder === undefined || !isAlive(holder)) {
          fs.rmSync(lock, { force: true });
          continue;
        }
        if (Date.now() > deadline) throw new StackError(`another stack up (pid ${holder}) holds ${lock}`);
        await sleep(500);
      }
    }
    try {
      return await fn();
    } finally {
      fs.rmSync(lock, { force: true });
    }
  });
  inProcess = run.catch(() => {});
  return run;
}

/**
 * Starts whatever is not already running and waits until every selected server
 * answers. Idempotent: servers that are up are reused, not restarted.
 */
export async function stackUp(opts: StackOptions = {}): Promise<StackUpResult> {
  const cfg = loadConfig(opts.env);
  const log = opts.log ?? (() => {});
  const services = opts.services ?? cfg.services;
  const ctx: ServerContext = { cfg, log };
  // Neo4j first: it boots slowest, so its JVM should start while the others build.
  const START_ORDER: ServerName[] = ["neo4j", "kafka", "registry"];
  const defs = START_ORDER.filter((n) => services.includes(n)).flatMap((n) => defsOf(cfg, n));

  return withUpLock(cfg, async () => {
    // Decide everything before building anything: a port clash should fail in
    // a second, not after a two-minute Maven run.
    const running = new Map<string, number>();
    if (services.includes("kafka")) {
      // A single node and a cluster share ports: one must be stopped before the other starts.
      const wanted = new Set(kafkaDefs(cfg).map(unitOf));
      for (const other of knownKafkaDefs(cfg).filter((def) => !wanted.has(unitOf(def)))) {
        const pid = await ownedPid(cfg, other);
        if (pid !== undefined)
          throw new StackError(
            `${unitOf(other)} (pid ${pid}) is running, but STACK_KAFKA_BROKERS=${cfg.kafkaBrokers} asks for ` +
              `${[...wanted].join(", ")}; run \`npm run stack:down\` first`,
          );
      }
    }
    for (const def of defs) {
      const pid = await ownedPid(cfg, def);
      if (pid !== undefined) {
        if (fingerprint(asLaunched(cfg, unitOf(def)), def) !== fingerprint(cfg, def)) {
          throw new StackError(
            `${def.label} (pid ${pid}) is running with other ports or password than requested now; ` +
              "run `npm run stack:down` first to apply the new settings",
          );
        }
        running.set(unitOf(def), pid);
        continue;
      }
      for (const { port, role, env } of def.ports(cfg)) {
        if (!(await portIsFree(port))) {
          throw new StackError(
            `port ${port} (${role}) is already in use by a process that is not this stack's ${def.label}; ` +
              `stop it or choose another port with ${env}`,
          );
        }
      }
    }

    // Builds one after another (two cores; Maven is CPU-hungry), each server
    // launched as soon as its build is done so its JVM boots during the next build.
    const waits: Promise<void>[] = [];
    const errors: StackError[] = [];
    const started: ServerName[] = [];
    for (const def of defs) {
      const unit = unitOf(def);
      const known = running.get(unit);
      if (known !== undefined) {
        log(`${unit}: already running (pid ${known})`);
        waits.push(waitReady(cfg, def, known));
        continue;
      }
      const t0 = Date.now();
      try {
        const paths = serverPaths(cfg, unit);
        fs.mkdirSync(paths.dir, { recursive: true });
        // One previous log is kept; appending forever would bury the tail we print on failure.
        if (fs.existsSync(paths.logFile)) fs.renameSync(paths.logFile, `${paths.logFile}.1`);
        await def.prepare(ctx);
        const spec = def.launch(ctx);
        const pid = spawnDetached({ ...spec, logFile: paths.logFile, pidFile: paths.pidFile });
        recordLaunch(cfg, unit);
        if (!started.includes(def.name)) started.push(def.name);
        log(`${unit}: started pid ${pid}, log ${paths.logFile}`);
        waits.push(
          waitReady(cfg, def, pid).then(() =>
            log(`${unit}: ready in ${((Date.now() - t0) / 1000).toFixed(1)}s at ${def.endpoint(cfg)}`),
          ),
        );
      } catch (err) {
        errors.push(
          err instanceof CommandError
            ? new StackError(`${def.label}: ${err.message}`, err.output.split("\n").slice(-40).join("\n"))
            : err instanceof StackError
              ? err
              : new StackError(`${def.label}: ${(err as Error).message}`),
        );
      }
    }
    for (const r of await Promise.allSettled(waits)) {
      if (r.status === "rejected") errors.push(r.reason as StackError);
    }
    if (errors.length > 0) {
      const err = new StackError(
        errors.map((e) => e.message).join("\n"),
        errors
          .map((e) => e.details)
          .filter(Boolean)
          .join("\n\n"),
      );
      throw err;
    }
    return { ...endpointsOf(cfg), started, startedAnything: started.length > 0 };
  });
}

export interface StopResult {
  name: ServerName;
  /** The process: the server's name, or a Kafka node's ("kafka-2"). */
  unit: string;
  pid: number | undefined;
  outcome: "stopped" | "killed" | "not running";
}

/**
 * Stops every server of this STACK_HOME (whatever STACK_SERVICES says), every Kafka node of whatever
 * layout; data stays. `units` narrows it to some processes, e.g. one node of a cluster (["kafka-2"]).
 */
export async function stackDown(opts: StackOptions & { units?: readonly string[] } = {}): Promise<StopResult[]> {
  const cfg = loadConfig(opts.env);
  const log = opts.log ?? (() => {});
  const names = opts.services ?? [...SERVER_NAMES];
  const defs = names
    .flatMap((name) => knownDefsOf(cfg, name))
    .filter((def) => opts.units === undefined || opts.units.includes(unitOf(def)));
  return Promise.all(
    defs.map(async (def): Promise<StopResult> => {
      const { name } = def;
      const unit = unitOf(def);
      const pid = await ownedPid(cfg, def);
      if (pid === undefined) return { name, unit, pid, outcome: "not running" };
      log(`${unit}: stopping pid ${pid}`);
      const r = await terminate(pid, def.stopGraceMs);
      fs.rmSync(serverPaths(cfg, unit).pidFile, { force: true });
      const outcome = r === "killed" ? "killed" : "stopped";
      log(`${unit}: ${outcome}`);
      return { name, unit, pid, outcome };
    }),
  );
}

export async function stackStatus(opts: StackOptions = {}): Promise<StackStatus> {
  const cfg = loadConfig(opts.env);
  const names = opts.services ?? [...SERVER_NAMES];
  // Every node of the configured layout, and any other node that is running.
  const wanted = new Set(kafkaDefs(cfg).map(unitOf));
  const defs: ServerDef[] = [];
  for (const name of names) {
    for (const def of knownDefsOf(cfg, name)) {
      if (wanted.has(unitOf(def)) || def.name !== "kafka" || (await ownedPid(cfg, def)) !== undefined) defs.push(def);
    }
  }
  const servers = await Promise.all(
    defs.map(async (def): Promise<ServerStatus> => {
      const { name } = def;
      const unit = unitOf(def);
      const pid = await ownedPid(cfg, def);
      const actual = pid === undefined ? cfg : asLaunched(cfg, unit);
      const probe = pid === undefined ? undefined : await def.probe(actual);
      return {
        name,
        unit,
        label: def.label,
        pid,
        alive: pid !== undefined,
        answering: probe?.ok === true,
        reason: probe && !probe.ok ? probe.reason : undefined,
        endpoint: def.endpoint(actual),
        rssKiB: pid === undefined ? undefined : await rssKiB(pid),
        logFile: serverPaths(cfg, unit).logFile,
      };
    }),
  );
  const runningUnit = (name: ServerName) => servers.find((x) => x.name === name && x.alive)?.unit;
  const actual = (name: ServerName) => {
    const unit = runningUnit(name);
    return unit === undefined ? cfg : asLaunched(cfg, unit);
  };
  const endpoints: StackEndpoints = {
    ...endpointsOf(cfg),
    kafkaBrokers: endpointsOf(actual("kafka")).kafkaBrokers,
    schemaRegistryUrl: endpointsOf(actual("registry")).schemaRegistryUrl,
    neo4jUri: endpointsOf(actual("neo4j")).neo4jUri,
    neo4jPassword: endpointsOf(actual("neo4j")).neo4jPassword,
  };
  return { home: cfg.home, servers, endpoints };
}

/** The Kafka quorum of this stack (which node is the active controller); see kafkaQuorum. */
export async function stackKafkaQuorum(opts: StackOptions = {}): Promise<KafkaQuorum> {
  return kafkaQuorum(loadConfig(opts.env));
}

/** Stops everything and deletes server data and logs; fetched artifacts are kept. */
export async function stackReset(opts: StackOptions = {}): Promise<void> {
  const cfg = loadConfig(opts.env);
  await stackDown({ ...opts, services: [...SERVER_NAMES] });
  for (const unit of SERVER_NAMES.flatMap((name) => knownDefsOf(cfg, name)).map(unitOf)) {
    const dir = serverPaths(cfg, unit).dir;
    opts.log?.(`${unit}: deleting ${dir}`);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * For the demo and the benchmark: when KAFKA_BROKERS, NEO4J_URI and SCHEMA_REGISTRY_URL are all set
 * they name the user's own servers and nothing starts; otherwise the local stack comes up and its
 * endpoints are written into `env`. Returns whether the local stack is in use.
 */
export async function useLocalStackUnlessConfigured(
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<boolean> {
  if (env.KAFKA_BROKERS && env.NEO4J_URI && env.SCHEMA_REGISTRY_URL) return false;
  log("bringing up the local stack (Kafka, schema registry, Neo4j) — the first time downloads from Maven Central…");
  const up = await stackUp({ log: (line) => log(`  ${line}`) });
  env.KAFKA_BROKERS = up.kafkaBrokers.join(",");
  env.NEO4J_URI = up.neo4jUri;
  env.NEO4J_USER = up.neo4jUser;
  env.NEO4J_PASSWORD = up.neo4jPassword;
  env.SCHEMA_REGISTRY_URL = up.schemaRegistryUrl;
  return true;
}
