import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { demoEventLog } from "../../workload/demo-log.js";
import { expectedReport } from "../support/expected-report.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";

/** A finding as the demo prints it (cli/findings.ts, findingRow). */
interface Listed {
  readonly finding_id: string;
  readonly kind: string;
  readonly source_agent_id: string;
  readonly target_agent_id: string;
  readonly state: string;
  readonly published: boolean;
}

/** What `--json` prints: the report, and the findings under `findings`. */
interface Printed {
  readonly findings: Listed[];
  readonly undeclaredEscalations: { readonly from_agent: string; readonly to_agent: string }[];
  readonly declaredNeverExercised: unknown[];
  readonly produced: { readonly rows: unknown[] };
}

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

    const { findings, ...report } = JSON.parse(stdout) as Printed;
    const { events, revocation } = demoEventLog();
    const expected = expectedReport(referenceGraph(events), ["os-agt-001", "os-agt-004"], revocation.agent_id, 10);
    expect(report).toEqual(expected);
    expect(report.undeclaredEscalations.length).toBeGreaterThan(0);
    expect(report.declaredNeverExercised.length).toBeGreaterThan(0);
    expect(report.produced.rows.length).toBeGreaterThan(0);

    // The findings its data produced: undeclared escalations, each still open one an undeclared edge of
    // the report, every one published to the findings topic before the demo printed it.
    const escalations = findings.filter((f) => f.kind === "undeclared-escalation");
    expect(escalations.length).toBeGreaterThan(0);
    const undeclared = new Set(report.undeclaredEscalations.map((r) => `${r.from_agent}->${r.to_agent}`));
    for (const f of escalations.filter((f) => f.state === "open"))
      expect(undeclared).toContain(`${f.source_agent_id}->${f.target_agent_id}`);
    expect(findings.filter((f) => f.published !== true)).toEqual([]);
    const onTopic = new Set<string>();
    const decoding: Promise<unknown>[] = [];
    await readTopicsToEnd(harness.kafka, [harness.names.findings], (record) => {
      decoding.push(
        harness.registry.decode(record.value as Buffer).then((f: { finding_id: string }) => onTopic.add(f.finding_id)),
      );
    });
    await Promise.all(decoding);
    expect([...onTopic].sort()).toEqual(findings.map((f) => f.finding_id).sort());
  });
});
