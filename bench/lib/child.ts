import type { ChildProcess } from "node:child_process";
import fs from "node:fs";

/** A process's resident set and its peak (KiB), from Linux /proc; undefined once it is gone. */
export function rssKiBOf(pid: number | undefined): { rss: number; hwm: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
    const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
    return Number.isFinite(rss) ? { rss, hwm } : undefined;
  } catch {
    return undefined;
  }
}

const running = new Set<ChildProcess>();

/**
 * Tracks a child the bench started until it exits, so that a failed bench does not leave it writing
 * into the graph the next run wipes (a projector left behind made the next run's wipe deadlock).
 */
export function tracked(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

/** Stops every tracked child still running (the bench's failure path). */
export async function stopRunningChildren(): Promise<void> {
  await Promise.all(
    [...running].map((child) => stopChild(child, new Promise((resolve) => child.once("exit", resolve)))),
  );
}

process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** SIGTERM, then SIGKILL after 40 s if it has not exited; resolves to the exit code. */
export async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<number | null> {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 40_000);
  const code = await exited;
  clearTimeout(timer);
  return code;
}
