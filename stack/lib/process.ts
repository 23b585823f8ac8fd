import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function readPid(pidFile: string): number | undefined {
  try {
    const pid = Number.parseInt(fs.readFileSync(pidFile, "utf8").trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM means it exists but belongs to someone else: alive, and surely not ours.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Command line of a process. A pid file can outlive its process and the pid can
 * be reused by something unrelated, so ownership is decided by a marker
 * argument we put on every JVM we launch, not by the pid alone.
 */
export async function commandLine(pid: number): Promise<string | undefined> {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    // No procfs (macOS): fall back to ps.
    try {
      const { stdout } = await execFileAsync("ps", ["-o", "command=", "-p", String(pid)]);
      return stdout.trim() || undefined;
    } catch {
      return undefined;
    }
  }
}

/** Resident set size in KiB, or undefined when it cannot be read. */
export async function rssKiB(pid: number): Promise<number | undefined> {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    if (m?.[1]) return Number(m[1]);
  } catch {
    // fall through to ps
  }
  try {
    const { stdout } = await execFileAsync("ps", ["-o", "rss=", "-p", String(pid)]);
    const n = Number.parseInt(stdout.trim(), 10);
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

export interface DetachedSpec {
  command: string;
  args: string[];
  cwd: string;
  logFile: string;
  pidFile: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts a server that must outlive the CLI (and the vitest process that may
 * call stackUp): its own process group, output to a log file, not awaited.
 */
export function spawnDetached(spec: DetachedSpec): number {
  const fd = fs.openSync(spec.logFile, "a");
  try {
    fs.writeSync(fd, `\n===== ${new Date().toISOString()} starting: ${spec.command} ${spec.args.join(" ")}\n`);
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      detached: true,
      stdio: ["ignore", fd, fd],
      env: spec.env ?? process.env,
    });
    // spawn reports a missing executable asynchronously; without a listener it
    // would crash the CLI instead of surfacing as a dead process with a log.
    child.on("error", (err) => fs.appendFileSync(spec.logFile, `spawn failed: ${err.message}\n`));
    if (child.pid === undefined) throw new Error(`could not start ${spec.command} (see ${spec.logFile})`);
    child.unref();
    fs.writeFileSync(spec.pidFile, `${child.pid}\n`);
    return child.pid;
  } finally {
    fs.closeSync(fd);
  }
}

/** SIGTERM the process group, then SIGKILL it if it outlives the grace period. */
export async function terminate(pid: number, graceMs: number): Promise<"stopped" | "killed" | "gone"> {
  if (!isAlive(pid)) return "gone";
  signalGroup(pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return "stopped";
    await sleep(200);
  }
  signalGroup(pid, "SIGKILL");
  for (let i = 0; i < 50 && isAlive(pid); i++) await sleep(100);
  return "killed";
}

function signalGroup(pid: number, signal: NodeJS.Signals) {
  try {
    // Negative pid: the whole group we created with detached:true.
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

export function tail(file: string, lines = 40): string {
  try {
    const stat = fs.statSync(file);
    const size = Math.min(stat.size, 64 * 1024);
    const fd = fs.openSync(file, "r");
    const buf = Buffer.alloc(size);
    fs.readSync(fd, buf, 0, size, stat.size - size);
    fs.closeSync(fd);
    return buf.toString("utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return `(no log at ${file})`;
  }
}
