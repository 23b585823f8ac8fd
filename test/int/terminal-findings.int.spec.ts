import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { listFindings } from "../../src/cli/findings.js";
import { AGENTS_WITHOUT_REACHABLE_TERMINAL } from "../../src/cypher/s4-queries.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import type { Finding } from "../../src/model/findings.js";
import {
  byFindingId,
  settledFindings,
  terminalScenario,
  waitForJudged,
  waitForPublished,
} from "../support/findings.js";
import { Harness } from "../support/harness.js";

/** terminal-unreachable findings on real servers, over the hand-computed scenario (support/findings.ts). */
const { phases, expected } = terminalScenario;
const { A, B, F, G } = terminalScenario.agents;
const T = terminalScenario.terminal;

describe("terminal-unreachable findings, on real servers", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it("a registry edit that cuts the path, then restores it, then a tombstone: the hand-computed findings, once each", async () => {
    harness = await Harness.create("terminal-findings", {
      TOPIC_GOVERNANCE_FINDINGS: `findings-${randomUUID().slice(0, 8)}`,
      TERMINAL_AGENT_IDS: T,
    });
    const h = harness;
    await h.clearGraph();
    const service = await h.startProjector();
    const want = expected("default");
    const all: Finding[] = [];
    for (const [n, phase] of phases().entries()) {
      await h.publish(phase);
      await h.waitForCaughtUp();
      all.push(...(want[n] ?? []));
      expect(await settledFindings(h, all)).toEqual([...all].sort(byFindingId));
      if (n === 1) {
        // Open: the three losses, listed by `findings --open`.
        const open = await listFindings(h.graph(), h.config.tenants, true);
        expect(open.map((row) => row.finding_id).sort()).toEqual(want[1]?.map((f) => f.finding_id).sort());
        expect(open.every((row) => row.kind === "terminal-unreachable" && row.state === "open")).toBe(true);
        // §4 agrees: the agents without a path are those, and G, which never had one.
        const without = await h
          .graph()
          .read(h.config.neo4j.database, AGENTS_WITHOUT_REACHABLE_TERMINAL, { terminal_ids: [T] });
        expect(without.map((row) => row.agent_without_reachable_terminal)).toEqual([A, B, F, G]);
      }
    }
    // After the tombstone only A's and F's second losses are open.
    expect((await listFindings(h.graph(), h.config.tenants, true)).map((row) => row.finding_id).sort()).toEqual(
      want[3]?.map((f) => f.finding_id).sort(),
    );

    // Every record again, on the source topic and as late copies: the version guard makes each a no-op.
    const again = phases().flat();
    await h.publish(again);
    await h.publishLate(again);
    await h.waitForCaughtUp();
    await waitForJudged(h);
    expect(await settledFindings(h, all, 0)).toEqual([...all].sort(byFindingId));

    // Published once each by id (a copy may repeat, never with other content), keyed tenant/agent.
    const published = await waitForPublished(
      h,
      all.map((f) => f.finding_id),
    );
    expect(new Set(published.map((p) => p.value.finding_id))).toEqual(new Set(all.map((f) => f.finding_id)));
    for (const { key, value } of published) {
      expect(value).toEqual(all.find((f) => f.finding_id === value.finding_id));
      expect(key).toBe(`default/${value.source_agent_id}`);
    }
    const counted = await service.metrics.registry.getSingleMetricAsString("agp_findings_total");
    expect(counted).toContain('agp_findings_total{tenant="default",kind="terminal-unreachable"} 5');
    expect(counted).toContain('agp_findings_total{tenant="default",kind="terminal-unreachable-resolved"} 3');
  });

  it("per tenant on a shared database: only the tenant whose registry cut the path gets findings", async () => {
    harness = await Harness.create("terminal-findings-tenants", {
      TENANTS: "acme,globex",
      TOPIC_GOVERNANCE_FINDINGS: `findings-${randomUUID().slice(0, 8)}`,
      TERMINAL_AGENT_IDS: T,
    });
    const h = harness;
    await h.clearGraph();
    const service = await h.startProjector();
    const of = (tenant_id: string) => (event: ProjectorEvent) => ({ ...event, tenant_id }) as ProjectorEvent;
    const [first, second] = phases();
    await h.publish([...(first ?? []).map(of("acme")), ...(first ?? []).map(of("globex"))]);
    await h.waitForCaughtUp();
    // The same agent ids in globex: only acme's B drops T.
    await h.publish((second ?? []).map(of("acme")));
    await h.waitForCaughtUp();
    const want = expected("acme")[1] ?? [];
    expect(await settledFindings(h, want)).toEqual([...want].sort(byFindingId));
    const published = await waitForPublished(
      h,
      want.map((f) => f.finding_id),
    );
    for (const { key, value } of published) expect(key).toBe(`acme/${value.source_agent_id}`);
    const counted = await service.metrics.registry.getSingleMetricAsString("agp_findings_total");
    expect(counted).toContain('agp_findings_total{tenant="acme",kind="terminal-unreachable"} 3');
    expect(counted).toContain('agp_findings_total{tenant="globex",kind="terminal-unreachable"} 0');
    expect(counted).toContain('agp_findings_total{tenant="globex",kind="terminal-unreachable-resolved"} 0');
  });
});
