import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { rssKiBOf, stopChild, tracked } from "./child.js";
import { buildProjector } from "./projector-build.js";
import { parseMetrics, type Sample } from "./prom.js";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** One `agent-graph-projector run` child process, watched from outside like an operator would. */
export interface ProjectorProcess {
  readonly pid: number;
  /** When the instance logged that it joined the group (its first fetch follows at once). */
  readonly joinedAt: Promise<number>;
  readonly metricsPort: Promise<number>;
  readonly exited: Promise<number | null>;
  readonly errors: string[];
  /** The records the process took to each fate, from its "stopped" line; undefined when it did not log one. */
  readonly tally: Promise<Record<string, number> | undefined>;
  rssKiB(): { rss: number; hwm: number } | undefined;
  scrape(): Promise<Sample[]>;
  stop(): Promise<number | null>;
}

/** BENCH_NODE_ARGS: flags for the child's `node` that Node refuses in NODE_OPTIONS (`--cpu-prof`, …). */
const nodeArgs = (): string[] => (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);

/** Where `startProjector` runs `bin/agent-graph-projector.js`: set by `prepareProjector`. */
let builtDir: string | undefined;

/**
 * Compiles the projector every later `startProjector` runs: this checkout's, or with
 * `BENCH_PROJECTOR_DIR` another checkout's (with its `node_modules`), measured against this one's
 * stack and loads. `BENCH_PROJECTOR_FROM_SOURCE=1` runs the source through tsx instead, as earlier
 * rounds measured it. Returns the clean-up that removes the build.
 */
export async function prepareProjector(): Promise<() => void> {
  const sourceDir = process.env.BENCH_PROJECTOR_DIR || REPO_ROOT;
  if (process.env.BENCH_PROJECTOR_FROM_SOURCE === "1") {
    if (fs.existsSync(path.join(sourceDir, "dist")))
      throw new Error(`${sourceDir}/dist exists: bin/ would run it rather than the source`);
    builtDir = sourceDir;
    return () => {};
  }
  const build = await buildProjector(sourceDir);
  builtDir = build.dir;
  return build.remove;
}

export function startProjector(env: Record<string, string>, label: string): ProjectorProcess {
  if (!builtDir) throw new Error("startProjector before prepareProjector: there is no build to run");
  const child: ChildProcess = tracked(
    spawn(process.execPath, [...nodeArgs(), "bin/agent-graph-projector.js", "run"], {
      cwd: builtDir,
      // NODE_ENV as the image sets it; NODE_OPTIONS comes with the run's environment.
      env: { ...process.env, NODE_ENV: "production", ...env, METRICS_PORT: "0", METRICS_HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const pid = child.pid as number;
  const errors: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // A child that dies before it is running (bad configuration, a flag Node refuses) fails the run
  // with its own words, rather than leaving the bench waiting for a log line that never comes.
  // "close" comes after its output has been read, so the words are all there.
  const diedEarly = new Promise<never>((_, reject) =>
    child.once("close", (code) =>
      reject(
        new Error(`${label} exited (code ${code}) before it was running: ${errors.join(" | ") || "nothing logged"}`),
      ),
    ),
  );
  let onTally: (records: Record<string, number> | undefined) => void = () => {};
  const tally = new Promise<Record<string, number> | undefined>((resolve) => (onTally = resolve));
  child.once("close", () => onTally(undefined));
  let onJoined: (at: number) => void = () => {};
  let onPort: (port: number) => void = () => {};
  const joinedAt = Promise.race([new Promise<number>((resolve) => (onJoined = resolve)), diedEarly]);
  const metricsPort = Promise.race([new Promise<number>((resolve) => (onPort = resolve)), diedEarly]);
  for (const awaited of [diedEarly, joinedAt, metricsPort]) awaited.catch(() => {});
  // BENCH_PROJECTOR_LOG_DIR keeps each child's JSON log, for reading a run's holds and failures after it.
  const logDir = process.env.BENCH_PROJECTOR_LOG_DIR;
  const logFile = logDir ? fs.createWriteStream(path.join(logDir, `${label}.ndjson`), { flags: "a" }) : undefined;
  const stdout = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  // Ended with the child's output, so the bench's own exit does not cut the log's last lines.
  stdout.once("close", () => logFile?.end());
  stdout.on("line", (line) => {
    logFile?.write(`${line}\n`);
    let entry: { msg?: string; level?: number; metricsPort?: number; records?: Record<string, number> };
    try {
      entry = JSON.parse(line);
    } catch {
      return;
    }
    if (entry.msg === "joined consumer group") onJoined(Date.now());
    if (entry.msg === "projector running" && entry.metricsPort) onPort(entry.metricsPort);
    if (entry.msg === "stopped") onTally(entry.records);
    if ((entry.level ?? 0) >= 50 && errors.length < 20) errors.push(line.slice(0, 500));
  });
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (line) => {
    if (errors.length < 20) errors.push(`[${label} stderr] ${line.slice(0, 500)}`);
  });

  return {
    pid,
    joinedAt,
    metricsPort,
    exited,
    errors,
    tally,
    rssKiB: () => rssKiBOf(pid),
    async scrape() {
      const port = await metricsPort;
      const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
      return parseMetrics(await response.text());
    },
    stop: () => stopChild(child, exited),
  };
}
