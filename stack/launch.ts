import fs from "node:fs";
import path from "node:path";
import type { StackConfig } from "./config.js";
import { commandLine, isAlive, readPid, sleep, tail } from "./lib/process.js";
import { ownerMarker, type ServerDef, serverPaths, unitOf } from "./servers/types.js";

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

export function recordLaunch(cfg: StackConfig, unit: string) {
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
export function asLaunched(cfg: StackConfig, unit: string): StackConfig {
  try {
    const launched = JSON.parse(fs.readFileSync(launchedPath(cfg, unit), "utf8")) as Partial<Launched>;
    // Written before Kafka could run as a cluster: one node.
    return { ...cfg, kafkaBrokers: 1, ...launched };
  } catch {
    return cfg;
  }
}

/** What must match for a running server to serve the requested config. */
export function fingerprint(cfg: StackConfig, def: ServerDef): string {
  return JSON.stringify({
    ports: def.ports(cfg).map((p) => p.port),
    password: def.name === "neo4j" ? cfg.neo4jPassword : undefined,
    secure: cfg.secure,
  });
}

/** Pid of our live server process, cleaning up a pid file that no longer proves anything. */
export async function ownedPid(cfg: StackConfig, def: ServerDef): Promise<number | undefined> {
  const { pidFile } = serverPaths(cfg, unitOf(def));
  const pid = readPid(pidFile);
  if (pid === undefined) return undefined;
  if (isAlive(pid) && (await commandLine(pid))?.includes(ownerMarker(cfg, unitOf(def)))) return pid;
  fs.rmSync(pidFile, { force: true });
  return undefined;
}

export async function waitReady(cfg: StackConfig, def: ServerDef, pid: number): Promise<void> {
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

export async function withUpLock<T>(cfg: StackConfig, fn: () => Promise<T>): Promise<T> {
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
