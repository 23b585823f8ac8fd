import path from "node:path";
import type { ServerName, StackConfig } from "../config.js";

export interface ServerContext {
  cfg: StackConfig;
  /** Progress output; the CLI sends it to stderr so stdout stays eval-able env lines. */
  log: (msg: string) => void;
}

/** fatal: retrying cannot help (e.g. wrong password), so stop waiting at once. */
export type Probe = { ok: true } | { ok: false; reason: string; fatal?: boolean };

export interface LaunchSpec {
  command: string;
  args: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

export interface ServerDef {
  name: ServerName;
  /**
   * The process this def runs, when a server has several (the nodes of a Kafka cluster: "kafka-2"):
   * its directory under STACK_HOME and its ownership marker. Defaults to name.
   */
  unit?: string;
  label: string;
  /** Every port the server binds, so a clash names the port and its role. */
  ports(cfg: StackConfig): { port: number; role: string; env: string }[];
  endpoint(cfg: StackConfig): string;
  /** Fetch/build artifacts, write config, one-time init. Must be idempotent. */
  prepare(ctx: ServerContext): Promise<void>;
  launch(ctx: ServerContext): LaunchSpec;
  /** Does the server really answer (protocol-level, not just an open port)? */
  probe(cfg: StackConfig): Promise<Probe>;
  /** A line the server prints once it is ready; probing waits for it when set. */
  readyLine?: string;
  readyTimeoutMs: number;
  stopGraceMs: number;
}

export interface ServerPaths {
  dir: string;
  data: string;
  pidFile: string;
  logFile: string;
}

/** The directory name and marker of a def's process. */
export const unitOf = (def: Pick<ServerDef, "name" | "unit">): string => def.unit ?? def.name;

export function serverPaths(cfg: StackConfig, name: ServerName | string): ServerPaths {
  const dir = path.join(cfg.home, name);
  return {
    dir,
    data: path.join(dir, "data"),
    pidFile: path.join(dir, "server.pid"),
    logFile: path.join(dir, "server.log"),
  };
}

/** Downloaded/extracted artifacts and build stamps: survive `reset`, unlike data. */
export const cacheDir = (cfg: StackConfig) => path.join(cfg.home, "cache");

/**
 * Put on every JVM we start. The pid file alone cannot prove a process is ours
 * (pids get reused); this argument in its command line can.
 */
export const ownerMarker = (cfg: StackConfig, name: ServerName | string) => `-Dagentgraph.stack=${name}:${cfg.home}`;

export function javaOpts(heap: string): string[] {
  return [`-Xmx${heap}`, "-XX:+UseG1GC", "-Djava.awt.headless=true", "-Dfile.encoding=UTF-8"];
}
