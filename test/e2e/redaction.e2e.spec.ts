import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Harness, testEnv } from "../support/harness.js";

/** Short enough that the suite stays quick, long enough for a real server to answer. */
const STARTUP_TIMEOUT_MS = 4_000;
const SECRET = "S3cret-Pa55word";

/**
 * SCHEMA_REGISTRY_URL may carry `user:password@`: a start-up that fails with it, at the registry or
 * after it, prints neither the password nor the user, in its one line on stderr or in its JSON log.
 */
describe("credentials in a URL never reach the logs of a failed start-up", () => {
  let harness: Harness;

  const run = (env: Record<string, string>) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
        env: {
          ...process.env,
          ...harness.env,
          STARTUP_TIMEOUT_MS: String(STARTUP_TIMEOUT_MS),
          LOG_LEVEL: "debug",
          ...env,
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => (stdout += chunk));
      child.stderr.on("data", (chunk) => (stderr += chunk));
      const killer = setTimeout(() => child.kill("SIGKILL"), STARTUP_TIMEOUT_MS + 60_000);
      child.on("close", (code) => {
        clearTimeout(killer);
        resolve({ code, stdout, stderr });
      });
    });

  /** The registry's URL with credentials in it. */
  const withUserinfo = (url: string) => url.replace("://", `://agp-reader:${SECRET}@`);

  beforeAll(async () => {
    harness = await Harness.create("redaction", { TOPIC_PARTITIONS: "1" });
  });
  afterAll(() => harness?.close());

  it("the registry unreachable", async () => {
    const { code, stdout, stderr } = await run({
      SCHEMA_REGISTRY_URL: withUserinfo("http://127.0.0.1:1/apis/ccompat/v7"),
    });
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(
      /^error: start-up failed: schema registry at http:\/\/\[redacted\]@127\.0\.0\.1:1\/apis\/ccompat\/v7: not reachable within \d+ s/,
    );
    for (const secret of [SECRET, "agp-reader"]) {
      expect(stderr).not.toContain(secret);
      expect(stdout).not.toContain(secret);
    }
  });

  it("the registry reached with them, a later step failing", async () => {
    const { code, stdout, stderr } = await run({
      SCHEMA_REGISTRY_URL: withUserinfo(harness.config.registry.url),
      TOPIC_REGISTRY_MUTATION: testEnv("redaction-missing").TOPIC_REGISTRY_MUTATION as string,
    });
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(/^error: start-up failed: .*source topic\(s\) .* do not exist/);
    // The log went as far as the registry step and past it.
    expect(stdout).toMatch(/constraints in place/);
    for (const secret of [SECRET, "agp-reader"]) {
      expect(stderr).not.toContain(secret);
      expect(stdout).not.toContain(secret);
    }
  });
});
