import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The packaging checks as part of the test suite: scripts/packaging/validate.sh lints the Dockerfile,
 * validates docker-compose.yml and the Helm chart's rendered manifests against their schemas, and
 * checks env keys against CONFIG_KEYS. The first run builds helm from source (a few minutes).
 */
describe("packaging", () => {
  it("scripts/packaging/validate.sh passes", () => {
    const result = spawnSync("bash", ["scripts/packaging/validate.sh"], {
      cwd: root,
      encoding: "utf8",
      timeout: 900_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const output = `${result.stdout}\n${result.stderr}`;
    if (result.status !== 0) console.log(output);
    expect(result.error).toBeUndefined();
    expect(output).toContain("packaging validation passed");
    expect(result.status).toBe(0);
  }, 900_000);
});
