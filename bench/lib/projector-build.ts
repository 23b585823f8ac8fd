import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The projector as the image runs it: `tsc -p tsconfig.build.json` into `dist/`, beside the
 * package's `bin/`, `schemas/` and `package.json`, with the checkout's `node_modules` linked in.
 * Built into a temporary directory of its own, so that no `dist/` is left in the checkout to go
 * stale under later edits (`bin/` prefers `dist/` whenever it exists). Without it the bench would
 * measure the source through tsx, whose source maps make neo4j-driver's per-result stack traces
 * cost about 3 % of the projector's CPU (bench/HISTORY.md, nineteenth round).
 */
export async function buildProjector(sourceDir: string): Promise<{ dir: string; remove(): void }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-graph-projector-bench-"));
  const remove = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    await promisify(execFile)(
      process.execPath,
      [
        path.join(REPO_ROOT, "node_modules/typescript/bin/tsc"),
        "-p",
        path.join(sourceDir, "tsconfig.build.json"),
        "--outDir",
        path.join(dir, "dist"),
      ],
      { cwd: sourceDir, maxBuffer: 16 * 1024 * 1024 },
    );
  } catch (error) {
    remove();
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`building the projector of ${sourceDir} failed: ${`${stdout}${stderr}`.trim().slice(0, 2000)}`);
  }
  for (const entry of ["bin", "schemas", "package.json"])
    fs.cpSync(path.join(sourceDir, entry), path.join(dir, entry), { recursive: true });
  fs.symlinkSync(path.join(sourceDir, "node_modules"), path.join(dir, "node_modules"), "dir");
  return { dir, remove };
}
