import { afterEach, describe, expect, it } from "vitest";
import { type RegistryChange, registryChange } from "../../src/model/event-time-findings.js";
import type { RegistryEvent } from "../../src/model/events.js";
import { terminalFinding } from "../../src/model/findings.js";
import { snapshot } from "../support/builders.js";
import { byFindingId, graphFindings, waitForJudged, waitForPublished } from "../support/findings.js";
import { Harness } from "../support/harness.js";
import { shuffled } from "../support/shuffled.js";
import { oracleTerminalFindings } from "../support/terminal-oracle.js";

/**
 * terminal-unreachable findings judged at event time, on the real servers, against the reference judge
 * (test/support/terminal-oracle.ts): the same registry log gives the same findings, with the same
 * causes, read live, shuffled across keys and redelivered, as a backlog to a new deployment, and with one
 * agent's records delayed within the allowed lateness. T is the control terminal. The log, by hand
 * (times in ms after `base`):
 * - v1 at 0: A declares B, B declares T, C declares A, D declares C, E declares nothing. A, B, C and D
 *   reach T; E never has: no finding.
 * - B's v2 at 200 declares nothing: A, B, C and D lose T, caused by (B, 2).
 * - E's v2 at 300 declares T: E gains what it never had: nothing.
 * - A's v2 at 400 declares E: A, C and D regain T through E, resolved by (A, 2). B stays cut.
 * - C deregistered (v2) at 500: C is retired (no finding for itself); D, whose only way was C, loses
 *   T again, caused by (C, 2).
 * - B's v3 at 600 declares T: B's finding is resolved by (B, 3).
 * - E's v3 at 700 declares nothing: E and A (through E) lose T, caused by (E, 3).
 * - At 800, A's v3 declares B and E's v4 declares T, at the same instant: each is its own cause.
 * A judge that went by delivery instead would miss E's gain when E's v2 arrives after A's v2, and
 * would see a backlog's final state only: no finding at all.
 */
const A = "ett-agt-001";
const B = "ett-agt-002";
const C = "ett-agt-003";
const D = "ett-agt-004";
const E = "ett-agt-005";
const T = "ett-agt-900";

function scenario(base: number): RegistryEvent[] {
  const reg = (agent: string, version: number, ms: number, path: string[], status = "active") =>
    snapshot(agent, { registry_version: version, occurred_at: base + ms, escalation_path: path, status });
  return [
    reg(A, 1, 0, [B]),
    reg(B, 1, 0, [T]),
    reg(C, 1, 0, [A]),
    reg(D, 1, 0, [C]),
    reg(E, 1, 0, []),
    reg(T, 1, 0, []),
    reg(B, 2, 200, []),
    reg(E, 2, 300, [T]),
    reg(A, 2, 400, [E]),
    reg(C, 2, 500, [A], "deregistered"),
    reg(B, 3, 600, [T]),
    reg(E, 3, 700, []),
    reg(A, 3, 800, [B]),
    reg(E, 4, 800, [T]),
  ];
}

const history = (log: readonly RegistryEvent[]): RegistryChange[] => log.flatMap((e) => registryChange(e) ?? []);

interface Judged {
  finding_id: string;
  kind: string;
  source_agent_id: string;
  target_agent_id: string;
  resolves: string | null;
  registry_version: number;
  registry_occurred_at: number;
  late: boolean;
}

const judgedContent = (row: Record<string, unknown>): Judged => ({
  finding_id: String(row.finding_id),
  kind: String(row.kind),
  source_agent_id: String(row.source_agent_id),
  target_agent_id: String(row.target_agent_id),
  resolves: row.resolves === null || row.resolves === undefined ? null : String(row.resolves),
  registry_version: Number(row.registry_version),
  registry_occurred_at: Number(row.registry_occurred_at),
  late: row.late === true,
});

/** What the reference judge makes of the log: every finding and resolution, with its cause's evidence. */
const oracle = (log: readonly RegistryEvent[]): Judged[] =>
  oracleTerminalFindings("default", history(log), new Set([T]))
    .map((f) => judgedContent(f as unknown as Record<string, unknown>))
    .sort(byFindingId);

/** The log's findings computed by hand (the comment above), as ids: the oracle must agree first. */
function byHand(): string[] {
  const lost = (agent: string, cause: string, version: number) =>
    terminalFinding("default", agent, { agent_id: cause, registry_version: version });
  const regained = (agent: string, cause: string, version: number, resolves: { finding_id: string }) =>
    terminalFinding("default", agent, { agent_id: cause, registry_version: version }, resolves.finding_id);
  const [a1, b1, c1, d1] = [lost(A, B, 2), lost(B, B, 2), lost(C, B, 2), lost(D, B, 2)] as const;
  const eLoss = lost(E, E, 3);
  const aLoss = lost(A, E, 3);
  return [
    a1,
    b1,
    c1,
    d1,
    regained(A, A, 2, a1),
    regained(C, A, 2, c1),
    regained(D, A, 2, d1),
    lost(D, C, 2),
    regained(B, B, 3, b1),
    eLoss,
    aLoss,
    regained(A, A, 3, aLoss),
    regained(E, E, 4, eLoss),
  ]
    .map((f) => f.finding_id)
    .sort();
}

/**
 * A judge that goes by delivery: each record taken when it arrives (a lower version than the agent's
 * own is stale), as if it happened then. What the shuffled test would catch.
 */
function judgedAsDelivered(delivered: readonly RegistryEvent[]): string[] {
  const highest = new Map<string, number>();
  const applied: RegistryChange[] = [];
  for (const [n, change] of history(delivered).entries()) {
    if ((highest.get(change.agent_id) ?? 0) >= change.registry_version) continue;
    highest.set(change.agent_id, change.registry_version);
    applied.push({ ...change, occurred_at: n });
  }
  return oracleTerminalFindings("default", applied, new Set([T]))
    .map((f) => f.finding_id)
    .sort();
}

/** The graph's terminal findings once the judge has decided every mark. */
async function judged(h: Harness): Promise<Judged[]> {
  await waitForJudged(h);
  return (await graphFindings(h)).map(judgedContent).sort(byFindingId);
}

describe("terminal-unreachable findings judged at event time, whatever the delivery (issue 53)", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  const create = async (env: Record<string, string> = {}) => {
    harness = await Harness.create("ett", { FINDINGS_JUDGE_INTERVAL_MS: "200", TERMINAL_AGENT_IDS: T, ...env });
    await harness.clearGraph();
    return harness;
  };

  it("the oracle agrees with the log's findings computed by hand; a judge by delivery order does not", () => {
    const log = scenario(Date.UTC(2026, 0, 1));
    expect(oracle(log).map((f) => f.finding_id)).toEqual(byHand());
    expect(oracle(log).every((f) => !f.late)).toBe(true);
    expect(judgedAsDelivered(shuffled(log, 7))).not.toEqual(byHand());
  });

  it("live, in event-time order: the oracle's findings with their causes, none late, each on the topic", async () => {
    const h = await create();
    await h.startProjector();
    const log = scenario(Date.now());
    for (const event of log) await h.publish([event]);
    await h.waitForCaughtUp();
    expect(await judged(h)).toEqual(oracle(log));
    const published = await waitForPublished(h, byHand());
    expect(new Set(published.map((p) => p.value.finding_id))).toEqual(new Set(byHand()));
  });

  it("shuffled across keys, then redelivered whole and as late copies: the oracle's findings, once each", async () => {
    const h = await create();
    await h.startProjector();
    const log = scenario(Date.now());
    await h.publish(shuffled(log, 7));
    await h.waitForCaughtUp();
    await h.publish(shuffled(log, 13));
    await h.publishLate(shuffled(log, 17));
    await h.waitForCaughtUp();
    expect(await judged(h)).toEqual(oracle(log));
  });

  it("as a backlog to a new deployment: the oracle's findings, though only the final state is in the graph", async () => {
    const h = await create();
    const log = scenario(Date.now() - 120_000);
    await h.publish(shuffled(log, 3));
    await h.startProjector();
    await h.waitForCaughtUp();
    expect(await judged(h)).toEqual(oracle(log));
  });

  it("one agent's records published seconds late, within the allowed lateness: the oracle's findings, none late", async () => {
    const h = await create({ FINDINGS_ALLOWED_LATENESS_MS: "8000" });
    await h.startProjector();
    const log = scenario(Date.now());
    const delayed = (e: RegistryEvent) => e.agent_id === E && e.registry_version > 1;
    await h.publish(log.filter((e) => !delayed(e)));
    await h.waitForCaughtUp();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await h.publish(log.filter(delayed));
    await h.waitForCaughtUp();
    expect(await judged(h)).toEqual(oracle(log));
  });
});
