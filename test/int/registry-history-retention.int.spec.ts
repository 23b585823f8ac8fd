import { afterEach, describe, expect, it } from "vitest";
import { LIST_FINDINGS } from "../../src/cypher/findings.js";
import { registryHistory } from "../../src/cypher/registry-history.js";
import { compactionStatement } from "../../src/pipeline/registry-history-retention.js";
import { escalation, outcome, snapshot } from "../support/builders.js";
import { waitForJudged } from "../support/findings.js";
import { Harness } from "../support/harness.js";

/**
 * The registry history's retention on the real servers (cypher/registry-history.ts
 * compactRegistryHistory): what goes is what can no longer matter, a replay does not bring it back,
 * and an escalation after the cutoff is judged as on the whole history.
 *
 * A declares B at 0 (v1), nothing at 100 (v2), B again at 200 (v3). Compacted below 150: v1 goes, v2
 * stays (in force at 150), v3 stays. An escalation A→B at 160 is then undeclared (v2 in force), and v3
 * resolves it; one at 250 is declared (v3).
 */
const A = "rh-agt-001";
const B = "rh-agt-002";

describe("registry history retention, on real servers", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it("keeps the change in force at the cutoff, refuses a replayed older one, and judges later escalations the same", async () => {
    harness = await Harness.create("registry-retention");
    const h = harness;
    const database = h.config.neo4j.database;
    await h.clearGraph();
    await h.startProjector();
    const base = Date.now() - 60_000;
    const at = (ms: number) => base + ms;
    const v1 = snapshot(A, { registry_version: 1, occurred_at: at(0), escalation_path: [B] });
    await h.publish([
      v1,
      snapshot(A, { registry_version: 2, occurred_at: at(100), escalation_path: [] }),
      snapshot(A, { registry_version: 3, occurred_at: at(200), escalation_path: [B] }),
      snapshot(B, { registry_version: 1, occurred_at: at(0), escalation_path: [] }),
    ]);
    await h.waitForCaughtUp();
    await waitForJudged(h);
    const versions = async () =>
      (await h.graph().read(database, registryHistory(false), { agents: [{ tenant_id: "default", agent_id: A }] })).map(
        (row) => Number(row.registry_version),
      );
    expect(await versions()).toEqual([1, 2, 3]);
    const before = await h.dump();

    const [result] = await h.graph().apply(database, [compactionStatement(false, at(150))]);
    expect(result?.records[0]).toMatchObject({ agents: 1, removed: 1 });
    expect(await versions()).toEqual([2, 3]);
    // Bookkeeping only: the projected graph is the same.
    expect(await h.dump()).toEqual(before);
    // Again: nothing more can go.
    const [again] = await h.graph().apply(database, [compactionStatement(false, at(150))]);
    expect(again?.records[0]).toMatchObject({ agents: 0 });

    // A replay brings v1 back to the service: the history stays compacted, the graph as it was.
    await h.publish([v1]);
    await h.waitForCaughtUp();
    await waitForJudged(h);
    expect(await versions()).toEqual([2, 3]);
    expect(await h.dump()).toEqual(before);

    // Escalations after the cutoff are judged against what was kept: at 160 v2 is in force (undeclared,
    // resolved by v3), at 250 v3 (declared).
    const escalationAt = (source: string, target: string, ms: number) => ({
      ...escalation(source, target),
      observed_at: at(ms),
    });
    await h.publish([
      outcome("rh-oa1", A, { created_at: at(150) }),
      outcome("rh-oa2", A, { created_at: at(150) }),
      outcome("rh-ob1", B, { created_at: at(150) }),
      escalationAt("rh-oa2", "rh-ob1", 250),
      escalationAt("rh-oa1", "rh-ob1", 160),
    ]);
    await h.waitForCaughtUp();
    await waitForJudged(h);
    const findings = await h.graph().read(database, LIST_FINDINGS, { tenant: null, open: false });
    expect(
      findings
        .map((f) => ({
          kind: f.kind,
          source: f.source_agent_id,
          target: f.target_agent_id,
          version: Number(f.registry_version),
        }))
        .sort((x, y) => String(x.kind).localeCompare(String(y.kind))),
    ).toEqual([
      { kind: "undeclared-escalation", source: A, target: B, version: 2 },
      { kind: "undeclared-escalation-resolved", source: A, target: B, version: 3 },
    ]);
  });
});
