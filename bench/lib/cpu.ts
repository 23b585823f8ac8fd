import fs from "node:fs";

/**
 * CPU seconds spent by each server and projector process over a measured run, read from /proc
 * (Linux only; elsewhere every figure is null). On two shared cores the run's wall time is roughly
 * the sum of these divided by two, so this is where the projector-versus-ceiling gap shows up.
 */

/** Linux reports utime/stime in USER_HZ ticks, which is 100 on every architecture Node supports. */
const TICKS_PER_SECOND = 100;

export function cpuSecondsOf(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces and parentheses; fields after it are fixed.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) / TICKS_PER_SECOND : null;
  } catch {
    return null;
  }
}

/** The pid of the process listening on a local TCP port, found through its socket's inode. */
export function pidListeningOn(port: number): number | null {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = fs.readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT; state 0A is LISTEN; column 9 is the inode.
      const local = cols[1];
      if (!local || cols[3] !== "0A") continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(":") + 1), 16) === port) inodes.add(cols[9] as string);
    }
  }
  if (inodes.size === 0) return null;
  let pids: string[];
  try {
    pids = fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode && inodes.has(inode)) return Number(pid);
      } catch {
        // The descriptor closed while we looked.
      }
    }
  }
  return null;
}

export function portOf(address: string, fallback: number): number {
  const match = /:(\d+)(?:[/?]|$)/.exec(address.replace(/^[a-z+]+:\/\//, ""));
  return match ? Number(match[1]) : fallback;
}

export type CpuSeconds = Record<string, number | null>;

/** Snapshots named processes now; `since()` returns each one's CPU seconds from then to now. */
export function cpuMeter(pids: Record<string, number | null>): { since(): CpuSeconds } {
  const own = process.cpuUsage();
  const start = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, pid && cpuSecondsOf(pid)]));
  return {
    since() {
      const out: CpuSeconds = {};
      for (const [name, pid] of Object.entries(pids)) {
        const before = start[name];
        const now = pid ? cpuSecondsOf(pid) : null;
        out[name] = before != null && now != null ? Math.round((now - before) * 10) / 10 : null;
      }
      const used = process.cpuUsage(own);
      out.bench = Math.round((used.user + used.system) / 1e5) / 10;
      return out;
    },
  };
}
