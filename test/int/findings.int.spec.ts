import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { listFindings } from "../../src/cli/findings.js";
import { LIST_FINDINGS } from "../../src/cypher/findings.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import { type Finding, finding } from "../../src/model/findings.js";
import { atSecond, escalation, outcome, snapshot } from "../support/builders.js";
import { byFindingId, findingContent, graphFindings, waitForPublished } from "../support/findings.js";
import { Harness } from "../support/harness.js";
import { shuffled } from "../support/shuffled.js";
import { until } from "../support/until.js";

/**
 * Governance findings on real servers. The scenario, computed by hand:
 * - cl-agt-001 declares cl-agt-002; cl-agt-002 and cl-agt-003 declare nothing (registry v1).
 * - Escalations observed: 001→002 (declared: no finding), 001→003 twice (one finding), 002→003 (a finding).
 * - Then cl-agt-002's v2 declares cl-agt-003: the 002→003 finding is resolved. 001→003 stays open.
 */
const A = "cl-agt-001";
const B = "cl-agt-002";
const C = "cl-agt-003";

// Undeclared escalations are judged at their observed_at (seconds 100-103): v1 is in force from
// second 0, v2 from second 200.
const phaseOne = (): ProjectorEvent[] => [
  snapshot(A, { escalation_path: [B], occurred_at: atSecond(0) }),
  snapshot(B, { escalation_path: [], occurred_at: atSecond(0) }),
  snapshot(C, { escalation_path: [], occurred_at: atSecond(0) }),
  outcome("o-a1", A),
  outcome("o-a2", A),
  outcome("o-b1", B),
  outcome("o-c1", C),
  outcome("o-c2", C),
  escalation("o-a1", "o-b1", 100),
  escalation("o-a1", "o-c1", 101),
  escalation("o-a2", "o-c2", 102),
  escalation("o-b1", "o-c1", 103),
];
const phaseTwo = (): ProjectorEvent[] => [
  snapshot(B, { registry_version: 2, escalation_path: [C], occurred_at: atSecond(200) }),
];

const EXPECTED: Finding[] = [
  finding("default", "undeclared-escalation", A, C),
  finding("default", "undeclared-escalation", B, C),
  finding("default", "undeclared-escalation-resolved", B, C),
];
const byId = byFindingId;

async function expectExactly(harness: Harness): Promise<void> {
  const published = await waitForPublished(
    harness,
    EXPECTED.map((f) => f.finding_id),
  );
  // In the graph: exactly the expected findings, each once, with the content its id implies.
  const graph = (await graphFindings(harness)).sort(byId);
  expect(graph.map(findingContent)).toEqual([...EXPECTED].sort(byId));
  // On the topic: no other id, and every copy of an id the same finding, keyed tenant/agent.
  for (const { key, value } of published) {
    const expected = EXPECTED.find((f) => f.finding_id === value.finding_id);
    expect(value).toEqual(expected);
    expect(key).toBe(`default/${expected?.source_agent_id}`);
  }
  // The open findings: 001→003 only.
  const open = await harness
    .graph()
    .read(harness.config.neo4j.database, LIST_FINDINGS, { tenant: "default", open: true });
  expect(open.map((f) => f.finding_id)).toEqual([finding("default", "undeclared-escalation", A, C).finding_id]);
}

describe("governance findings, on real servers", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  const create = async () => {
    harness = await Harness.create("findings", { TOPIC_GOVERNANCE_FINDINGS: `findings-${randomUUID().slice(0, 8)}` });
    await harness.clearGraph();
    return harness;
  };

  it("in order: the hand-computed findings, in the graph and on the topic", async () => {
    const h = await create();
    const service = await h.startProjector();
    await h.publish(phaseOne());
    await h.waitForCaughtUp();
    await h.publish(phaseTwo());
    await h.waitForCaughtUp();
    await expectExactly(h);
    const counted = await service.metrics.registry.getSingleMetricAsString("agp_findings_total");
    expect(counted).toContain('agp_findings_total{tenant="default",kind="undeclared-escalation"} 2');
    expect(counted).toContain('agp_findings_total{tenant="default",kind="undeclared-escalation-resolved"} 1');
    // `findings` lists them from the graph: all three, or the one still open.
    const all = await listFindings(h.graph(), h.config.tenants, false);
    expect(all.map((row) => row.state).sort()).toEqual(["open", "resolution", "resolved"]);
    expect(await listFindings(h.graph(), h.config.tenants, true)).toEqual([
      expect.objectContaining({
        finding_id: EXPECTED[0]?.finding_id,
        state: "open",
        source_agent_id: A,
        published: true,
      }),
    ]);
  });

  it("shuffled and redelivered: the same findings by id, none twice with different content", async () => {
    const h = await create();
    await h.startProjector();
    const first = phaseOne();
    await h.publish(shuffled([...first, ...first], 7));
    await h.publishLate(first.filter((event) => event.kind === "escalation-edge"));
    await h.waitForCaughtUp(120_000);
    const second = phaseTwo();
    await h.publish([...second, ...second]);
    await h.waitForCaughtUp();
    // Replayed from the start by a second instance of the group's work: nothing new, nothing changed.
    await h.publishLate(first.filter((event) => event.kind === "escalation-edge"));
    await h.waitForCaughtUp();
    await expectExactly(h);
  });

  it("a stop between commit and publish: the finding is in the graph unpublished, and arrives after the restart", async () => {
    const h = await create();
    // No findings topic: the transaction commits the finding, publishing cannot succeed.
    await h.admin.deleteTopics({ topics: [h.names.findings] });
    await h.startProjector({ CREATE_TOPICS_ON_START: "false" });
    await h.publish(phaseOne());
    await h.waitForCaughtUp();
    // Judged at event time, a round after the commit.
    await until("the two findings recorded", async () => (await graphFindings(h)).length === 2);
    const before = await graphFindings(h);
    expect(before.filter((f) => f.kind === "undeclared-escalation")).toHaveLength(2);
    expect(before.every((f) => f.published === false)).toBe(true);
    await h.stopProjectors();
    await h.startProjector();
    const published = await waitForPublished(
      h,
      EXPECTED.slice(0, 2).map((f) => f.finding_id),
    );
    expect(new Set(published.map((p) => p.value.finding_id))).toEqual(
      new Set(EXPECTED.slice(0, 2).map((f) => f.finding_id)),
    );
  });

  it("per tenant on a shared database: the same agent ids in two tenants are two edges, each with its own findings", async () => {
    harness = await Harness.create("findings-tenants", {
      TENANTS: "acme,globex",
      TOPIC_GOVERNANCE_FINDINGS: `findings-${randomUUID().slice(0, 8)}`,
    });
    const h = harness;
    await h.clearGraph();
    const service = await h.startProjector();
    const of = (tenant_id: string) => (event: ProjectorEvent) => ({ ...event, tenant_id }) as ProjectorEvent;
    // globex declares 001→003, acme does not; both observe it.
    const globex = phaseOne().map(of("globex"));
    globex[0] = { ...snapshot(A, { escalation_path: [B, C], occurred_at: atSecond(0) }), tenant_id: "globex" };
    await h.publish([...phaseOne().map(of("acme")), ...globex]);
    await h.waitForCaughtUp();
    const acme = [finding("acme", "undeclared-escalation", A, C), finding("acme", "undeclared-escalation", B, C)];
    const globexOwn = [finding("globex", "undeclared-escalation", B, C)];
    const expected = [...acme, ...globexOwn];
    const published = await waitForPublished(
      h,
      expected.map((f) => f.finding_id),
    );
    for (const { key, value } of published) {
      expect(expected).toContainEqual(value);
      expect(key).toBe(`${value.tenant_id}/${value.source_agent_id}`);
    }
    expect((await graphFindings(h)).map((f) => f.finding_id).sort()).toEqual(expected.map((f) => f.finding_id).sort());
    expect(
      (
        await listFindings(
          h.graph(),
          h.config.tenants.filter((route) => route.tenantId === "globex"),
          true,
        )
      ).map((f) => f.finding_id),
    ).toEqual(globexOwn.map((f) => f.finding_id));
    const counted = await service.metrics.registry.getSingleMetricAsString("agp_findings_total");
    expect(counted).toContain('agp_findings_total{tenant="acme",kind="undeclared-escalation"} 2');
    expect(counted).toContain('agp_findings_total{tenant="globex",kind="undeclared-escalation"} 1');
    expect(counted).toContain('agp_findings_total{tenant="globex",kind="undeclared-escalation-resolved"} 0');
  });
});
