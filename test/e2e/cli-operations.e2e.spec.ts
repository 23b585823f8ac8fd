import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_CODES } from "../../src/cli/exit-codes.js";
import { STREAMS } from "../../src/topics.js";
import { outcome, snapshot } from "../support/builders.js";
import { runCli } from "../support/cli.js";
import { Harness } from "../support/harness.js";

/** The operator's commands beside a running projector: status, check, and the dry runs that change nothing. */
describe("status, check and the dry runs against real servers", () => {
  let harness: Harness;
  const cli = (args: string[], env: Record<string, string> = {}) => runCli({ ...harness.env, ...env }, args, 90_000);

  /** What a dry run must leave as it was: the group's offsets, every own topic's end offsets, the graph. */
  const snapshotState = async () => {
    const group = await harness.admin.fetchOffsets({
      groupId: harness.config.kafka.group,
      topics: Object.values(harness.names.source),
    });
    const ends: Record<string, string[]> = {};
    for (const stream of STREAMS)
      for (const topic of [harness.names.retry[stream], harness.names.deadLetter[stream]])
        ends[topic] = (await harness.admin.fetchTopicOffsets(topic)).map((p) => `${p.partition}:${p.high}`).sort();
    return { group, ends, graph: await harness.dump() };
  };

  beforeAll(async () => {
    harness = await Harness.create("cli-ops");
    await harness.clearGraph();
    await harness.publish([snapshot("ops-agt-001"), snapshot("ops-agt-002"), outcome("ops-out-1", "ops-agt-001")]);
    // Not Avro: dead-lettered by the projector as undecodable.
    await harness.sendRaw(harness.names.source["outcome-created"], [
      { key: "ops-poison", value: Buffer.from("not avro at all") },
    ]);
  });
  afterAll(() => harness?.close());

  it("check passes on a set-up stack, and names Neo4j away by its exit code", async () => {
    const ok = await cli(["check", "--json", "--timeout", "5000"]);
    expect(ok.code, ok.output).toBe(EXIT_CODES.ok.code);
    const document = JSON.parse(ok.stdout);
    expect(document).toMatchObject({ ok: true, exitCode: 0 });
    expect(document.checks.map((c: { check: string; status: string }) => `${c.check}:${c.status}`)).toEqual([
      "neo4j:ok",
      "constraints:ok",
      "registry:ok",
      "findings subject:ok",
      "kafka:ok",
      "own topics:ok",
    ]);

    const away = await cli(["check", "--timeout", "1500"], { NEO4J_URI: "bolt://127.0.0.1:1" });
    expect(away.code, away.output).toBe(EXIT_CODES.neo4jUnreachable.code);
    expect(away.stdout).toMatch(/neo4j\s+│ failed \(exit 12\)/);
    expect(away.stdout).toMatch(/constraints\s+│ skipped/);
    expect(away.stdout).toMatch(/kafka\s+│ ok/);
  });

  it("status shows the running member, its partitions, commits, dead letters by reason and the outbox", async () => {
    const service = await harness.startProjector();
    await harness.waitForCaughtUp();
    const metricsUrl = `http://127.0.0.1:${service.metricsPort}/metrics`;
    const status = await cli(["status", "--json", "--metrics-url", metricsUrl]);
    expect(status.code, status.output).toBe(0);
    const report = JSON.parse(status.stdout);
    expect(report).toMatchObject({ group: harness.config.kafka.group, state: "Stable", totalLag: 0 });
    expect(report.members).toHaveLength(1);
    expect(report.members[0]).toMatchObject({ host: "127.0.0.1", metrics: "read" });
    const consumed = STREAMS.flatMap((s) => [harness.names.source[s], harness.names.retry[s]]);
    expect(new Set(report.partitions.map((p: { topic: string }) => p.topic))).toEqual(new Set(consumed));
    for (const p of report.partitions) {
      expect(p.member).toBe(report.members[0].member);
      expect(p.lastCommit, JSON.stringify(p)).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect(p.paused).toBeNull();
    }
    const outcomes = report.partitions.filter(
      (p: { topic: string }) => p.topic === harness.names.source["outcome-created"],
    );
    expect(outcomes.reduce((n: number, p: { committed: number | null }) => n + (p.committed ?? 0), 0)).toBe(2);
    expect(report.deadLetters).toHaveLength(1);
    expect(report.deadLetters[0].count).toBe(1);
    expect(report.unpublishedFindings).toEqual([{ tenant: "default", count: expect.any(Number) }]);
    // What waits for the event-time judge, read from the graph.
    expect(report.judgement).toEqual([
      expect.objectContaining({ database: harness.config.neo4j.database, waiting: expect.any(Number) }),
    ]);
    expect(report.notes).toEqual([]);

    const human = await cli(["status", "--metrics-url", metricsUrl]);
    expect(human.code, human.output).toBe(0);
    expect(human.stdout).toMatch(/^group group-cli-ops-\w+: Stable, 1 member\(s\), lag 0/);
    expect(human.stdout).toContain("Dead letters by reason");

    // While it runs, a replay would refuse: the dry run says so and exits as the replay would.
    const refused = await cli(["replay", "--dry-run", "--json"]);
    expect(refused.code, refused.output).toBe(EXIT_CODES.failed.code);
    expect(JSON.parse(refused.stdout).refusals).toEqual([expect.stringMatching(/1 active member/)]);
    await harness.stopProjectors();
  });

  it("replay, dlq redrive and rebuild with --dry-run say what they would do and change nothing", async () => {
    const before = await snapshotState();

    const replay = await cli(["replay", "--dry-run", "--json", "--topics", "outcome,registry"]);
    expect(replay.code, replay.output).toBe(0);
    const plan = JSON.parse(replay.stdout);
    expect(plan).toMatchObject({ dryRun: true, group: harness.config.kafka.group, refusals: [] });
    const topics = [harness.names.source["outcome-created"], harness.names.source["registry-mutation"]];
    expect(new Set(plan.offsets.map((o: { topic: string }) => o.topic))).toEqual(new Set(topics));
    for (const o of plan.offsets) expect(o.offset).toBe("0");
    expect(plan.offsets.some((o: { committed: string }) => Number(o.committed) > 0)).toBe(true);

    const redrive = await cli(["dlq", "redrive", "--all", "--dry-run", "--json"]);
    expect(redrive.code, redrive.output).toBe(0);
    const would = JSON.parse(redrive.stdout);
    expect(would).toMatchObject({ dryRun: true, notRedriven: [] });
    expect(would.wouldRedrive).toHaveLength(1);
    expect(would.wouldRedrive[0]).toMatchObject({ key: "ops-poison", to: harness.names.retry["outcome-created"] });

    const rebuild = await cli(["rebuild", "--dry-run", "--json"]);
    expect(rebuild.code, rebuild.output).toBe(0);
    expect(JSON.parse(rebuild.stdout)).toMatchObject({
      dryRun: true,
      refusals: [],
      tenants: [{ tenant: "default", status: "would be rebuilt", records: 2, agents: 2 }],
      deadLettered: [],
    });

    expect(await snapshotState()).toEqual(before);
  });

  it("a flag's bad value is a usage error before anything runs", async () => {
    for (const args of [
      ["replay", "--to-timestamp", "soon"],
      ["topics", "--partitions", "abc"],
      ["dlq", "redrive", "not-an-id"],
      ["rebuild", "--yes", "--dry-run"],
      ["status", "--timeout", "-1"],
    ]) {
      const run = await cli(args);
      expect(run.code, `${args.join(" ")}: ${run.output}`).toBe(EXIT_CODES.usage.code);
    }
  });
});
