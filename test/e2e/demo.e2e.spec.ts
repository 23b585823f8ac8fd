import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoEventLog } from "../../workload/demo-log.js";
import { expectedReport } from "../support/expected-report.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";

/** `npm run demo -- --exit-after-report`, run as a user runs it, with its report checked against the published data. */
describe("the demo, end to end", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("demo");
    await harness.clearGraph();
  });
  afterAll(() => harness?.close());

  it("publishes, projects, and prints a governance report that matches the published data", async () => {
    const child = spawn("npm", ["run", "--silent", "demo", "--", "--exit-after-report", "--json"], {
      env: { ...process.env, ...harness.env, LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code, stderr).toBe(0);
    expect(stderr).toMatch(/caught up in/);
    expect(stderr).toMatch(/published \d+\/\d+/);
    // An ERROR line means someone must act: a first run (fresh group, fresh topics) has none.
    const errors = stderr.split("\n").filter((line) => /"level":(50|60)\b/.test(line));
    expect(errors).toEqual([]);

    const report = JSON.parse(stdout);
    const { events, revocation } = demoEventLog();
    const expected = expectedReport(referenceGraph(events), ["os-agt-001", "os-agt-004"], revocation.agent_id, 10);
    expect(report).toEqual(expected);
    expect(report.undeclaredEscalations.length).toBeGreaterThan(0);
    expect(report.declaredNeverExercised.length).toBeGreaterThan(0);
    expect(report.produced.rows.length).toBeGreaterThan(0);
  });
});
