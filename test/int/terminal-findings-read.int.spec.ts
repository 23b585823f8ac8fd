import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../src/adapters/neo4j/migrate.js";
import { RECORDED_TERMINAL_FINDINGS } from "../../src/cypher/event-time-judge.js";
import { recordFindings, recordResolutions } from "../../src/cypher/findings.js";
import { type RecordedTerminalFinding, recordedForWalk } from "../../src/model/event-time-reach.js";
import { terminalFinding } from "../../src/model/findings.js";
import { Harness } from "../support/harness.js";

/**
 * What the event-time judge reads of a tenant's terminal findings for a page (RECORDED_TERMINAL_FINDINGS):
 * on the real server, exactly what model/event-time-reach.ts recordedForWalk keeps of every finding
 * recorded — the property test shows the walk needs no more — whether the findings were written by the
 * service's statements (a later resolution and a late, earlier one of the same finding) or left by an
 * older version without `open_until` and given one at start-up.
 */
const A = "tfr-agt-001";
const B = "tfr-agt-002";
const C = "tfr-agt-003";
const D = "tfr-agt-004";
const E = "tfr-agt-005";
const base = Date.UTC(2026, 0, 1);

interface Row extends RecordedTerminalFinding {
  readonly target_agent_id: string;
}

/** A finding as the judge records it: caused by `cause`'s change at `base + at` (or at no time, `null`). */
function recorded(agent: string, cause: string, at: number | null, resolves: string | null = null): Row {
  const f = terminalFinding("default", agent, { agent_id: cause, registry_version: at ?? 0 }, resolves);
  return {
    finding_id: f.finding_id,
    tenant_id: "default",
    kind: f.kind as RecordedTerminalFinding["kind"],
    source_agent_id: agent,
    target_agent_id: cause,
    resolves,
    at: at === null ? null : base + at,
  };
}

const ids = (rows: readonly { readonly finding_id?: unknown }[]) => rows.map((r) => String(r.finding_id)).sort();

describe("the terminal findings a judge's page reads: those open at its earliest change, with their resolutions", () => {
  let harness: Harness;
  let database: string;

  beforeAll(async () => {
    harness = await Harness.forGraph("terminal-findings-read");
    database = harness.config.neo4j.database;
  });
  afterAll(async () => harness?.closeGraph());

  const read = async (since: number) =>
    harness.graph().read(database, RECORDED_TERMINAL_FINDINGS, { tenant_id: "default", since: base + since });

  const write = async (rows: readonly Row[]) => {
    const row = (f: Row) => ({
      ...f,
      registry_version: 1,
      registry_occurred_at: f.at,
      late: false,
      observed_at: null,
      source_outcome_id: null,
      target_outcome_id: null,
      episode: null,
    });
    const findings = rows.filter((f) => f.resolves === null).map(row);
    const resolutions = rows.filter((f) => f.resolves !== null).map(row);
    await harness.graph().apply(database, [
      { name: "findings", cypher: recordFindings(false), params: { rows: findings } },
      { name: "findings", cypher: recordResolutions(false), params: { rows: resolutions } },
    ]);
  };

  it("written by the service's statements, read from any instant: what recordedForWalk keeps", async () => {
    await harness.clearGraph();
    const a1 = recorded(A, B, 10);
    const b1 = recorded(B, B, 15);
    const c1 = recorded(C, C, 5);
    const all: Row[] = [a1, b1, c1, recorded(C, C, 8, c1.finding_id), recorded(A, A, 30, a1.finding_id)];
    await write(all);
    // A late change resolved A's finding earlier than the round that did first: its open_until comes down.
    const lateResolution = recorded(A, D, 20, a1.finding_id);
    all.push(lateResolution);
    await write([lateResolution]);
    for (const since of [0, 6, 8, 9, 20, 21, 40]) {
      const found = await read(since);
      expect({ since, ids: ids(found) }).toEqual({ since, ids: ids(recordedForWalk(all, base + since)) });
    }
    // Not every finding, nor none: at 21 only B's open one; at 9, A's and its two resolutions too.
    expect(ids(await read(21))).toEqual([b1.finding_id]);
    expect((await read(9)).length).toBe(4);
    const [row] = (await read(9)).filter((r) => r.finding_id === lateResolution.finding_id);
    expect(row).toMatchObject({ kind: "terminal-unreachable-resolved", resolves: a1.finding_id, at: base + 20 });
  });

  it("left by an older version without open_until: given one by migrate, then read as the walk takes them", async () => {
    await harness.clearGraph();
    const untimedOpen = recorded(A, A, null);
    const untimedResolved = recorded(B, B, null);
    const resolvedUntimed = recorded(C, C, 10);
    const resolvedAt50 = recorded(D, D, 10);
    const open = recorded(E, E, 40);
    const untimedResolution = recorded(B, B, null, untimedResolved.finding_id);
    const all: Row[] = [
      untimedOpen,
      untimedResolved,
      untimedResolution,
      resolvedUntimed,
      recorded(C, C, null, resolvedUntimed.finding_id),
      resolvedAt50,
      recorded(D, A, 50, resolvedAt50.finding_id),
      open,
    ];
    // As an older version wrote them: the same properties, no open_until.
    await harness.driver.executeQuery(
      `UNWIND $rows AS row
       CREATE (:Finding {finding_id: row.finding_id, tenant_id: row.tenant_id, kind: row.kind,
                         source_agent_id: row.source_agent_id, target_agent_id: row.target_agent_id,
                         resolves: row.resolves, published: true, detected_at: datetime(),
                         registry_occurred_at: CASE WHEN row.at IS NULL THEN null ELSE datetime({epochMillis: toInteger(row.at)}) END})`,
      { rows: all },
      { database },
    );
    expect(await read(0)).toEqual([]);
    await migrate(harness.driver, [database]);
    for (const since of [0, 11, 50, 51]) {
      const found = await read(since);
      expect({ since, ids: ids(found) }).toEqual({ since, ids: ids(recordedForWalk(all, base + since)) });
    }
    // Past every time: the open ones, and those with no time at all, which the walk puts before everything.
    expect(ids(await read(51))).toEqual(ids([untimedOpen, untimedResolved, untimedResolution, open]));
    // Given once: a second start leaves every value as it was.
    const given = async () =>
      (
        await harness.driver.executeQuery(
          "MATCH (f:Finding) WHERE f.open_until IS NOT NULL RETURN f.finding_id AS id, toString(f.open_until) AS until ORDER BY id",
          {},
          { database },
        )
      ).records.map((r) => `${r.get("id")} ${r.get("until")}`);
    const first = await given();
    await migrate(harness.driver, [database]);
    expect(await given()).toEqual(first);
    expect(first).toHaveLength(5);
  });
});
