import fs from "node:fs";
import { loadConfig, SERVER_NAMES, type ServerName } from "./config.js";
import { endpointsOf, type StackEndpoints } from "./endpoints.js";
import { asLaunched, fingerprint, ownedPid, recordLaunch, StackError, waitReady, withUpLock } from "./launch.js";
import { CommandError } from "./lib/build.js";
import { portIsFree } from "./lib/ports.js";
import { rssKiB, spawnDetached, terminate } from "./lib/process.js";
import { type KafkaQuorum, kafkaClient, kafkaDefs, kafkaQuorum, setScramPassword } from "./servers/kafka.js";
import { type ServerContext, type ServerDef, serverPaths, unitOf } from "./servers/types.js";
import { defsOf, knownDefsOf, knownKafkaDefs } from "./units.js";

export type { ServerName, StackConfig } from "./config.js";
export { loadConfig, StackConfigError } from "./config.js";
export { envLines, type StackEndpoints } from "./endpoints.js";
export { StackError } from "./launch.js";
export type { KafkaQuorum } from "./servers/kafka.js";

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

export function stackEndpoints(opts: StackOptions = {}): StackEndpoints {
  return endpointsOf(loadConfig(opts.env));
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

/** The JVM and classpath of Kafka's Java client as the stack fetched it, or undefined (see kafkaClient). */
export function stackKafkaClient(opts: StackOptions = {}): { java: string; classpath: string } | undefined {
  return kafkaClient(loadConfig(opts.env));
}

/** Creates a SCRAM-SHA-512 user of the secured listener or changes its password (secured mode only). */
export async function stackSetScramPassword(user: string, password: string, opts: StackOptions = {}): Promise<void> {
  await setScramPassword(loadConfig(opts.env), user, password);
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
