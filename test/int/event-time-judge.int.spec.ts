import { Partitioners } from "kafkajs";
import { afterEach, describe, expect, it } from "vitest";
import { LIST_FINDINGS } from "../../src/cypher/findings.js";
import type { EscalationEdge, ProjectorEvent } from "../../src/model/events.js";
import { findingId } from "../../src/model/findings.js";
import { registryKey } from "../../src/model/registry-key.js";
import { outcome, snapshot, tool } from "../support/builders.js";
import { oracleFindingsOfLog } from "../support/findings-oracle.js";
import { Harness } from "../support/harness.js";
import { holdWrite } from "../support/hold-write.js";
import { showTransactions } from "../support/show-transactions.js";
import { shuffled } from "../support/shuffled.js";

/**
 * Undeclared escalations judged at event time, on the real servers, against the oracle
 * (test/support/findings-oracle.ts): the same log gives the same findings read live, shuffled across
 * topics and keys, redelivered, as a backlog to a new deployment, and with registry records delayed
 * within the allowed lateness. The log, by hand (times in ms after `base`):
 * - v1 at 0: A declares B, B nothing, C declares A, D declares A.
 * - A→B at 300: declared, nothing. A's v2 at 600 drops B; A→B again at 700: a finding (episode v2);
 *   A's v3 at 900 declares B again: its resolution.
 * - B→C at 200: never declared yet, a finding; B's v2 at 1000 declares C: its resolution; B→C at 1100:
 *   declared, nothing (whatever order the two arrive in).
 * - C→D at 400: a finding that stays open. C→A at 450: declared, nothing.
 * - D deregistered (v2) at 500; D→A at 550: a deregistered agent authorises nothing: a finding
 *   (episode v2) that stays open.
 * - E declares nothing at 0 and A at 100 (v2); E→A at 300: declared then, nothing — even when E's v2
 *   reaches the service after the escalation.
 */
const A = "et-agt-001";
const B = "et-agt-002";
const C = "et-agt-003";
const D = "et-agt-004";
const E = "et-agt-005";

const PRODUCER: Record<string, string> = {
  oa1: A,
  oa2: A,
  oa3: A,
  ob1: B,
  ob2: B,
  oc1: C,
  oc2: C,
  od1: D,
  oe1: E,
};

function scenario(base: number): ProjectorEvent[] {
  const at = (ms: number) => base + ms;
  const reg = (agent: string, version: number, ms: number, path: string[], status = "active") =>
    snapshot(agent, { registry_version: version, occurred_at: at(ms), escalation_path: path, status });
  const esc = (source: string, target: string, ms: number): EscalationEdge => ({
    kind: "escalation-edge",
    event_id: `esc-${source}-${target}-${ms}`,
    tenant_id: "default",
    source_outcome_id: source,
    target_outcome_id: target,
    observed_at: at(ms),
  });
  return [
    reg(A, 1, 0, [B]),
    reg(B, 1, 0, []),
    reg(C, 1, 0, [A]),
    reg(D, 1, 0, [A]),
    reg(E, 1, 0, []),
    reg(E, 2, 100, [A]),
    ...Object.entries(PRODUCER).map(([id, agent]) => outcome(id, agent, { created_at: at(100) })),
    esc("ob1", "oc1", 200),
    esc("oa1", "ob1", 300),
    esc("oe1", "oa3", 300),
    esc("oc1", "od1", 400),
    esc("oc2", "oa3", 450),
    reg(D, 2, 500, [A], "deregistered"),
    esc("od1", "oa1", 550),
    reg(A, 2, 600, []),
    esc("oa2", "ob2", 700),
    reg(A, 3, 900, [B]),
    reg(B, 2, 1000, [C]),
    esc("ob2", "oc2", 1100),
  ];
}

const timeOf = (event: ProjectorEvent): number =>
  event.kind === "escalation-edge"
    ? event.observed_at
    : event.kind === "outcome-created"
      ? event.created_at
      : (event.occurred_at ?? 0);

/** What the oracle makes of the log: each finding and resolution, by id, with what it resolves. */
function oracle(
  events: readonly ProjectorEvent[],
  producer: Record<string, string> = PRODUCER,
): { finding_id: string; kind: string; resolves: string | null }[] {
  return oracleFindingsOfLog(events, producer)
    .map(({ finding_id, kind, resolves }) => ({ finding_id, kind, resolves }))
    .sort(byId);
}

const byId = (a: { finding_id: string }, b: { finding_id: string }) => (a.finding_id < b.finding_id ? -1 : 1);

/** The log's findings computed by hand (the comment above): the oracle must agree before the service is judged. */
function byHand(): { finding_id: string; kind: string; resolves: string | null }[] {
  const open = (s: string, t: string, ...episode: number[]) => ({
    finding_id: findingId("default", "undeclared-escalation", s, t, ...episode),
    kind: "undeclared-escalation",
    resolves: null,
  });
  const resolved = (s: string, t: string, ...episode: number[]) => ({
    finding_id: findingId("default", "undeclared-escalation-resolved", s, t, ...episode),
    kind: "undeclared-escalation-resolved",
    resolves: findingId("default", "undeclared-escalation", s, t, ...episode),
  });
  return [open(A, B, 2), resolved(A, B, 2), open(B, C), resolved(B, C), open(C, D), open(D, A, 2)].sort(byId);
}

/** Waits until the judge has decided every mark, then returns the findings in the graph. */
async function judged(h: Harness, timeoutMs = 60_000): Promise<Record<string, unknown>[]> {
  const deadline = Date.now() + timeoutMs;
  const db = h.config.neo4j.database;
  for (;;) {
    const [marks] = await h.graph().read(
      db,
      `CALL () { MATCH ()-[o:OBSERVED]->() WHERE o.unjudged IS NOT NULL RETURN count(*) AS n }
       CALL () { MATCH (c:RegistryChange) WHERE c.unjudged IS NOT NULL RETURN count(*) AS m }
       RETURN n + m AS left`,
    );
    if (Number(marks?.left) === 0) break;
    if (Date.now() > deadline) throw new Error(`marks left unjudged after ${timeoutMs} ms: ${marks?.left}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return h.graph().read(db, LIST_FINDINGS, { tenant: null, open: false });
}

/** The registry partition an agent's records land on, as every producer of the project places them (murmur2). */
function registryPartitionOf(agentId: string, partitions: number): number {
  return Partitioners.DefaultPartitioner()({
    topic: "registry-mutation",
    partitionMetadata: Array.from({ length: partitions }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      replicas: [0],
      isr: [0],
      partitionErrorCode: 0,
    })),
    message: { key: registryKey("default", agentId), value: null },
  });
}

/** Waits until some transaction in Neo4j is blocked on a lock (a projector batch waiting on a held one). */
async function untilBlocked(h: Harness, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { records } = await showTransactions(
      h.driver,
      "SHOW TRANSACTIONS YIELD status WHERE status STARTS WITH 'Blocked' RETURN count(*) AS n",
      {},
      { database: h.config.neo4j.database },
    );
    if (Number(records[0]?.get("n")) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no transaction blocked on the held lock within ${timeoutMs} ms`);
}

const content = (rows: readonly Record<string, unknown>[]) =>
  rows
    .map((row) => ({
      finding_id: String(row.finding_id),
      kind: String(row.kind),
      resolves: row.resolves === null ? null : String(row.resolves),
    }))
    .sort(byId);

describe("undeclared escalations judged at event time, whatever the delivery (issue 53)", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  const create = async (env: Record<string, string> = {}) => {
    harness = await Harness.create("etj", { FINDINGS_JUDGE_INTERVAL_MS: "200", ...env });
    await harness.clearGraph();
    return harness;
  };

  it("the oracle agrees with the log's findings computed by hand", () => {
    expect(oracle(scenario(Date.UTC(2026, 0, 1)))).toEqual(byHand());
  });

  it("live, in event-time order: the oracle's findings, none late, each on the topic", async () => {
    const h = await create({ FINDINGS_ALLOWED_LATENESS_MS: "5000" });
    await h.startProjector();
    const log = scenario(Date.now()).sort((a, b) => timeOf(a) - timeOf(b));
    for (const event of log) await h.publish([event]);
    await h.waitForCaughtUp();
    const found = await judged(h);
    expect(content(found)).toEqual(oracle(log));
    expect(found.every((row) => row.late === false)).toBe(true);
  });

  it("shuffled across topics and keys, then redelivered whole: the oracle's findings", async () => {
    const h = await create({ FINDINGS_ALLOWED_LATENESS_MS: "8000" });
    await h.startProjector();
    const log = scenario(Date.now());
    await h.publish(shuffled(log, 11));
    await h.waitForCaughtUp();
    await h.publish(shuffled(log, 5));
    await h.publishLate(log.filter((event) => event.kind === "escalation-edge"));
    await h.waitForCaughtUp();
    const found = await judged(h);
    expect(content(found)).toEqual(oracle(log));
    expect(found.every((row) => row.late === false)).toBe(true);
  });

  it("as a backlog to a new deployment (the registry drained first): the oracle's findings, no false one", async () => {
    const h = await create();
    const log = scenario(Date.now() - 120_000);
    await h.publish(shuffled(log, 3));
    await h.startProjector();
    await h.waitForCaughtUp();
    expect(content(await judged(h))).toEqual(oracle(log));
  });

  it("registry records published seconds after the escalations, within the allowed lateness: the oracle's findings", async () => {
    const h = await create({ FINDINGS_ALLOWED_LATENESS_MS: "15000" });
    await h.startProjector();
    const log = scenario(Date.now());
    const registry = log.filter((e) => e.kind === "registry-snapshot");
    await h.publish(log.filter((e) => e.kind === "registry-snapshot" && e.registry_version === 1));
    await h.publish(log.filter((e) => e.kind !== "registry-snapshot"));
    await h.waitForCaughtUp();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await h.publish(registry.filter((e) => e.kind === "registry-snapshot" && e.registry_version > 1));
    await h.waitForCaughtUp();
    const found = await judged(h);
    expect(content(found)).toEqual(oracle(log));
    expect(found.every((row) => row.late === false)).toBe(true);
  });

  it("a revocation beyond the allowed lateness: the finding it opens and its resolution are marked late", async () => {
    const h = await create({ FINDINGS_ALLOWED_LATENESS_MS: "500" });
    await h.startProjector();
    const base = Date.now();
    const onTime: ProjectorEvent[] = [
      snapshot(A, { registry_version: 1, occurred_at: base, escalation_path: [B] }),
      snapshot(B, { registry_version: 1, occurred_at: base, escalation_path: [] }),
      outcome("la1", A, { created_at: base }),
      outcome("lb1", B, { created_at: base }),
      {
        kind: "escalation-edge",
        event_id: "late-esc",
        tenant_id: "default",
        source_outcome_id: "la1",
        target_outcome_id: "lb1",
        observed_at: base + 500,
      },
    ];
    await h.publish(onTime);
    await h.waitForCaughtUp();
    // Judged as authorised: A declared B at 500.
    expect(await judged(h)).toEqual([]);
    const late = [
      snapshot(A, { registry_version: 2, occurred_at: base + 200, escalation_path: [] }),
      snapshot(A, { registry_version: 3, occurred_at: base + 800, escalation_path: [B] }),
    ];
    await h.publish(late);
    await h.waitForCaughtUp();
    const found = await judged(h);
    const want = [
      { finding_id: findingId("default", "undeclared-escalation", A, B, 2), late: true },
      { finding_id: findingId("default", "undeclared-escalation-resolved", A, B, 2), late: true },
    ].sort(byId);
    expect(found.map((row) => ({ finding_id: String(row.finding_id), late: row.late })).sort(byId)).toEqual(want);
    // The ids are the oracle's: it knows the whole log at once.
    expect(oracle([...onTime, ...late], { la1: A, lb1: B }).map((f) => f.finding_id)).toEqual(
      want.map((f) => f.finding_id),
    );
  });

  it("a registry partition held up in Neo4j past the allowed lateness: the judge waits for it; the oracle's findings, none late", async () => {
    // A's revocation sits on its registry partition behind F's first snapshot, whose write waits on a
    // tool's lock held here, while the escalation it makes undeclared is applied on its own topic. The
    // registry records were on the topic in time, so the escalation is judged only after the partition
    // moves: judging it earlier would read A's old declaration, and the revocation would then come late.
    const h = await create({ FINDINGS_ALLOWED_LATENESS_MS: "1000" });
    await h.startProjector();
    const partitions = h.config.topics.partitions;
    const F = Array.from({ length: 200 }, (_, i) => `et-agt-${String(100 + i)}`).find(
      (id) => registryPartitionOf(id, partitions) === registryPartitionOf(A, partitions),
    ) as string;
    const base = Date.now();
    const before: ProjectorEvent[] = [
      snapshot(A, { registry_version: 1, occurred_at: base, escalation_path: [B] }),
      snapshot(B, { registry_version: 1, occurred_at: base, escalation_path: [], tools: [tool("et-held")] }),
      outcome("ha1", A, { created_at: base }),
      outcome("hb1", B, { created_at: base }),
    ];
    await h.publish(before);
    await h.waitForCaughtUp();
    const release = await holdWrite(
      h,
      "MATCH (t:Tool {tool_id: 'et-held'}) SET t.held = true RETURN count(t) AS n",
      {},
      1,
      "the tool to hold is not in the graph",
    );
    let held = true;
    try {
      await h.publish([snapshot(F, { registry_version: 1, occurred_at: Date.now(), tools: [tool("et-held")] })]);
      await untilBlocked(h);
      const revokedAt = Date.now();
      const after: ProjectorEvent[] = [
        snapshot(A, { registry_version: 2, occurred_at: revokedAt, escalation_path: [] }),
        {
          kind: "escalation-edge",
          event_id: "held-esc",
          tenant_id: "default",
          source_outcome_id: "ha1",
          target_outcome_id: "hb1",
          observed_at: revokedAt + 100,
        },
      ];
      await h.publish(after);
      const db = h.config.neo4j.database;
      const deadline = Date.now() + 20_000;
      while (
        (await h.graph().read(db, "MATCH (:Outcome {outcome_id: 'ha1'})-[o:OBSERVED]->() RETURN o")).length === 0
      ) {
        if (Date.now() > deadline)
          throw new Error("the escalation was not applied while the registry partition was held");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // Past the allowed lateness and several judge rounds, with the partition still held: not judged yet.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const [waiting] = await h
        .graph()
        .read(db, "MATCH (:Outcome {outcome_id: 'ha1'})-[o:OBSERVED]->() RETURN o.unjudged IS NOT NULL AS unjudged");
      expect(waiting?.unjudged).toBe(true);
      expect(await h.graph().read(db, LIST_FINDINGS, { tenant: null, open: false })).toEqual([]);
      held = false;
      await release();
      await h.waitForCaughtUp();
      const found = await judged(h);
      const log = [...before, ...after];
      expect(content(found)).toEqual(oracle(log, { ha1: A, hb1: B }));
      expect(content(found)).toEqual([
        {
          finding_id: findingId("default", "undeclared-escalation", A, B, 2),
          kind: "undeclared-escalation",
          resolves: null,
        },
      ]);
      expect(found.every((row) => row.late === false)).toBe(true);
    } finally {
      if (held) await release();
    }
  });
});
