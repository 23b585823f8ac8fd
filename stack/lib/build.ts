import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * Hash of a directory's files (skipping build output), so a build reruns when
 * a pom or source changes and is skipped otherwise: Maven itself takes several
 * seconds even when everything is cached in ~/.m2.
 */
export function hashInputs(paths: string[], skipDirs: string[] = ["target"]): string {
  const h = crypto.createHash("sha256");
  const visit = (p: string) => {
    const st = fs.statSync(p, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isDirectory()) {
      if (skipDirs.includes(path.basename(p))) return;
      for (const e of fs.readdirSync(p).sort()) visit(path.join(p, e));
    } else {
      h.update(`${p}\0`);
      h.update(fs.readFileSync(p));
    }
  };
  for (const p of paths) visit(p);
  return h.digest("hex");
}

export interface CachedStep {
  name: string;
  stampDir: string;
  inputHash: string;
  /** Files or dirs that must exist for the cached result to count. */
  outputs: string[];
  run: () => Promise<void>;
}

/** Runs a build step unless its stamp matches the inputs and its outputs still exist. */
export async function cachedStep(step: CachedStep): Promise<boolean> {
  const stamp = path.join(step.stampDir, `${step.name}.stamp`);
  const current = fs.existsSync(stamp) ? fs.readFileSync(stamp, "utf8").trim() : "";
  const outputsPresent = step.outputs.every((o) => {
    const st = fs.statSync(o, { throwIfNoEntry: false });
    return st && (!st.isDirectory() || fs.readdirSync(o).length > 0);
  });
  if (current === step.inputHash && outputsPresent) return false;
  await step.run();
  fs.mkdirSync(step.stampDir, { recursive: true });
  fs.writeFileSync(stamp, `${step.inputHash}\n`);
  return true;
}

export class CommandError extends Error {
  override name = "CommandError";
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(message);
  }
}

/** Runs a command to completion, keeping its output for the error report. */
export function run(command: string, args: string[], opts: { cwd: string; logFile?: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"] });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => chunks.push(c));
    child.stderr.on("data", (c: Buffer) => chunks.push(c));
    child.on("error", (err) => reject(new CommandError(`cannot run ${command}: ${err.message}`, "")));
    child.on("close", (code) => {
      const output = Buffer.concat(chunks).toString("utf8");
      if (opts.logFile) fs.appendFileSync(opts.logFile, `\n$ ${command} ${args.join(" ")}\n${output}`);
      if (code === 0) resolve();
      else reject(new CommandError(`${command} ${args.join(" ")} exited with ${code}`, output));
    });
  });
}

export function maven(pom: string, goals: string[], extraArgs: string[], opts: { cwd: string; logFile?: string }) {
  return run("mvn", ["-q", "-B", "-f", pom, ...goals, ...extraArgs], opts);
}
