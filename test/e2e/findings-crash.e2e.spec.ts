import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { type Finding, finding } from "../../src/model/findings.js";
import { escalation, outcome, snapshot } from "../support/builders.js";
import { runCli } from "../support/cli.js";
import {
  byFindingId,
  findingContent,
  graphFindings,
  type Published,
  terminalScenario,
  topicFindings,
  waitForPublished,
} from "../support/findings.js";
import { Harness } from "../support/harness.js";
import { until } from "../support/until.js";

/**
 * The findings outbox across a SIGKILL: `run` commits findings but cannot publish them (their topic is
 * gone), is killed, and the next `run` publishes them at start-up.
 */
const started = new Set<ChildProcess>();

function run(env: Record<string, string>): { child: ChildProcess; exit: Promise<number | null>; log: () => string } {
  const child = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
    env: { ...process.env, ...env, LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout?.on("data", (chunk) => (log += chunk));
  child.stderr?.on("data", (chunk) => (log += chunk));
  started.add(child);
  const exit = new Promise<number | null>((resolve) =>
    child.on("close", (code) => {
      started.delete(child);
      resolve(code);
    }),
  );
  return { child, exit, log: () => log };
}

/** Stops a run cleanly once it has joined its group (the killed instance's membership runs out first). */
async function stop(service: ReturnType<typeof run>): Promise<void> {
  await until("the group joined", async () => (service.log().includes('"projector running"') ? true : undefined), {
    timeoutMs: 120_000,
  });
  service.child.kill("SIGTERM");
  expect(await service.exit, service.log().slice(-3000)).toBe(0);
}

/**
 * What the findings topic holds once every finding in the graph is published, by id (its partitions
 * are read one after another, so the order read is not the order sent).
 */
async function published(harness: Harness, ids: readonly string[]): Promise<Published[]> {
  await waitForPublished(harness, ids, 90_000);
  return (await topicFindings(harness)).sort((a, b) => byFindingId(a.value, b.value));
}

describe("findings across a SIGKILL between commit and publish", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    for (const child of started) child.kill("SIGKILL");
    await harness?.close();
    harness = undefined;
  });

  it("the committed, unpublished finding is published by the next run", async () => {
    harness = await Harness.create("findings-crash");
    const h = harness;
    await h.clearGraph();
    const expected = finding("default", "undeclared-escalation", "cl-agt-001", "cl-agt-002");
    await h.admin.deleteTopics({ topics: [h.names.findings] });
    const first = run({ ...h.env, CREATE_TOPICS_ON_START: "false" });
    await h.publish([
      snapshot("cl-agt-001", { escalation_path: [] }),
      snapshot("cl-agt-002", { escalation_path: [] }),
      outcome("o-1", "cl-agt-001"),
      outcome("o-2", "cl-agt-002"),
      escalation("o-1", "o-2"),
    ]);
    const committed = await until(
      "the finding committed",
      async () => {
        const rows = await graphFindings(h);
        return rows.length > 0 ? rows : undefined;
      },
      { timeoutMs: 90_000 },
    );
    expect(committed).toEqual([expect.objectContaining({ finding_id: expected.finding_id, published: false })]);
    first.child.kill("SIGKILL");
    await first.exit;

    const second = run(h.env);
    expect((await published(h, [expected.finding_id])).map((p) => p.value)).toEqual([expected]);
    await stop(second);
  });

  it("terminal-unreachable findings and their resolutions: published once each after the kill, nothing new on a replay", async () => {
    const { phases, expected } = terminalScenario;
    harness = await Harness.create("findings-crash-terminal", { TERMINAL_AGENT_IDS: terminalScenario.terminal });
    const h = harness;
    await h.clearGraph();
    const [declared, cut, restored, deregistered] = phases();
    const want = expected("default");
    const lost = want[1] ?? [];
    const regained = want[2] ?? [];
    const lostAgain = want[3] ?? [];
    const content = async () => (await graphFindings(h)).map(findingContent).sort(byFindingId);
    /** The topic, once each by id, with the content its id stands for, keyed tenant/agent. */
    const onceEach = (records: readonly Published[], findings: readonly Finding[]) => {
      expect(records.map((p) => p.value).sort(byFindingId)).toEqual([...findings].sort(byFindingId));
      for (const { key, value } of records) expect(key).toBe(`default/${value.source_agent_id}`);
    };

    // The first run commits the cut's three findings, cannot publish them, and is killed.
    await h.admin.deleteTopics({ topics: [h.names.findings] });
    const first = run({ ...h.env, CREATE_TOPICS_ON_START: "false" });
    await h.publish(declared ?? []);
    await h.waitForCaughtUp();
    await h.publish(cut ?? []);
    await until(
      "the cut's findings committed",
      async () => ((await graphFindings(h)).length >= lost.length ? true : undefined),
      { timeoutMs: 90_000 },
    );
    expect(await content()).toEqual([...lost].sort(byFindingId));
    expect((await graphFindings(h)).every((row) => row.published === false)).toBe(true);
    first.child.kill("SIGKILL");
    await first.exit;

    // The next run publishes each of them once, with the content its id stands for, and marks them.
    const second = run(h.env);
    onceEach(
      await published(
        h,
        lost.map((f) => f.finding_id),
      ),
      lost,
    );
    // Restoring the path publishes the resolutions; B's tombstone then cuts A's and F's again.
    await h.publish(restored ?? []);
    await h.waitForCaughtUp(150_000);
    await h.publish(deregistered ?? []);
    await h.waitForCaughtUp();
    const all = [...lost, ...regained, ...lostAgain];
    const before = await published(
      h,
      all.map((f) => f.finding_id),
    );
    onceEach(before, all);
    expect(await content()).toEqual([...all].sort(byFindingId));
    await stop(second);

    // The registry stream again from its start: every snapshot stale under the version guard, the
    // tombstone applied again to the same effect, so no transition and nothing to publish.
    const replay = await runCli(h.env, ["replay", "--to-earliest", "--topics", "registry"]);
    expect(replay.code, replay.output).toBe(0);
    const third = run(h.env);
    await h.waitForCaughtUp(150_000);
    expect(await content()).toEqual([...all].sort(byFindingId));
    expect(
      await published(
        h,
        all.map((f) => f.finding_id),
      ),
    ).toEqual(before);
    await stop(third);
  });
});
