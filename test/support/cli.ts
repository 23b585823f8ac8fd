import { spawn } from "node:child_process";

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  /** stdout and stderr interleaved, the last 3,000 characters. */
  readonly output: string;
}

/** Runs the CLI with `env` over the process's own; killed (and failed) if it has not finished within `boundMs`. */
export function runCli(env: Record<string, string>, args: string[], boundMs = 60_000): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bin/agent-graph-projector.js", ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let output = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      output += chunk;
    });
    child.stderr.on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => {
      output += `\n[${args.join(" ")} did not finish within ${boundMs} ms; killed]`;
      child.kill("SIGKILL");
    }, boundMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, output: output.slice(-3000) });
    });
  });
}
