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

/** SIGTERM, then SIGKILL after 40 s if it has not exited; resolves to the exit code. */
export async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<number | null> {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 40_000);
  const code = await exited;
  clearTimeout(timer);
  return code;
}
