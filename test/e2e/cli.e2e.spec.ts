import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Harness } from "../support/harness.js";

/** The CLI as an operator uses it: separate processes, configuration from the environment. */
describe("the CLI against real servers", () => {
  let harness: Harness;
  const cli = (args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ["bin/agent-graph-projector.js", ...args], {
        env: { ...process.env, ...harness.env, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => (stdout += chunk));
      child.stderr.on("data", (chunk) => (stderr += chunk));
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });

  beforeAll(async () => {
    harness = await Harness.create("cli");
    await harness.clearGraph();
  });
  afterAll(() => harness?.close());

  it("a bad configuration value stops a command with a message naming the key", async () => {
    const { code, stderr } = await cli(["migrate"], { NEO4J_URI: "http://nope" });
    expect(code).toBe(2);
    expect(stderr).toMatch(/^configuration error: NEO4J_URI: /);
  });

  it("topics is idempotent; produce validates and publishes; report answers; dlq lists and re-drives", async () => {
    const topics = await cli(["topics", "--json"]);
    expect(topics.code, topics.stderr).toBe(0);
    expect(JSON.parse(topics.stdout).every((t: { status: string }) => t.status === "exists")).toBe(true);

    const dir = mkdtempSync(join(tmpdir(), "agp-cli-"));
    const file = join(dir, "events.ndjson");
    const at = "2026-03-01T10:00:00Z";
    writeFileSync(
      file,
      [
        {
          type: "registry-mutation",
          event_id: "c1",
          tenant_id: "default",
          registry_version: 1,
          occurred_at: at,
          agent_id: "os-agt-001",
          name: "Control",
          status: "active",
          tools: [],
          owned_workflows: [],
          escalation_path: ["human operator"],
        },
        {
          type: "registry-mutation",
          event_id: "c2",
          tenant_id: "default",
          registry_version: 1,
          occurred_at: at,
          agent_id: "fin-agt-100",
          name: "Payments",
          status: "active",
          tools: [{ tool_id: "ledger", name: "Ledger" }],
          owned_workflows: [],
          escalation_path: ["os-agt-001"],
        },
        {
          type: "outcome-created",
          event_id: "c3",
          tenant_id: "default",
          outcome_id: "cli-o1",
          agent_id: "fin-agt-100",
          status: "succeeded",
          created_at: at,
        },
        {
          type: "outcome-created",
          event_id: "c4",
          tenant_id: "default",
          outcome_id: "cli-o2",
          agent_id: "fin-agt-100",
          status: "failed",
          created_at: at,
          tenant_note: "ignored",
        },
      ]
        .map((e) => JSON.stringify(e))
        .join("\n"),
    );
    const produced = await cli(["produce", file]);
    expect(produced.code, produced.stderr).toBe(0);
    expect(produced.stdout).toContain("published 4 event(s)");

    // A snapshot with more tools than this deployment allows: dead-lettered now, re-driven after the fix.
    writeFileSync(
      file,
      JSON.stringify({
        type: "registry-mutation",
        event_id: "c5",
        tenant_id: "default",
        registry_version: 1,
        occurred_at: at,
        agent_id: "fin-agt-101",
        name: "Treasury",
        status: "active",
        tools: [
          { tool_id: "ledger", name: "Ledger" },
          { tool_id: "fx", name: "FX" },
        ],
        owned_workflows: [],
        escalation_path: ["os-agt-001"],
      }),
    );
    expect((await cli(["produce", file])).code).toBe(0);

    await harness.startProjector({ MAX_LIST_LENGTH: "1" });
    await harness.waitForCaughtUp();

    const refused = await cli(["replay", "--to-earliest"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/active member/);
    await harness.stopProjectors();

    const report = await cli(["report", "--agent", "fin-agt-100", "--json"]);
    expect(report.code, report.stderr).toBe(0);
    const parsed = JSON.parse(report.stdout);
    expect(parsed.produced.rows.map((r: { outcome_id: string }) => r.outcome_id).sort()).toEqual(["cli-o1", "cli-o2"]);
    expect(parsed.agentsWithoutReachableTerminal).toEqual([]);

    const listed = await cli(["dlq", "list", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ key: "default/fin-agt-101", reason: "list-too-long" }),
    ]);

    // Raise the limit (the default), re-drive, and the snapshot is projected.
    const redriven = await cli(["dlq", "redrive", "--reason", "list-too-long"]);
    expect(redriven.code, redriven.stderr).toBe(0);
    expect(redriven.stdout).toContain("re-drove 1 record(s)");
    await harness.startProjector();
    await harness.waitForCaughtUp();
    const graph = await harness.dump();
    expect(
      graph.relationships.filter((line) => line.startsWith("Agent:fin-agt-101 -[AUTHORIZED_FOR]-> ")),
    ).toHaveLength(2);
    await harness.stopProjectors();

    const replay = await cli(["replay", "--to-timestamp", "2020-01-01T00:00:00Z", "--topics", "outcome", "--json"]);
    expect(replay.code, replay.stderr).toBe(0);
    expect(
      JSON.parse(replay.stdout).every(
        (row: { topic: string }) => row.topic === harness.names.source["outcome-created"],
      ),
    ).toBe(true);
  });
});
