import { sharedDatabases, type TenantRoute } from "../config.js";
import {
  ADVANCE_JUDGE_PROGRESS,
  clearChanges,
  clearObservations,
  JUDGE_PROGRESS,
  OLDEST_MARK,
  observationsSince,
  RECORDED_ESCALATION_FINDINGS,
  RECORDED_TERMINAL_FINDINGS,
  UNJUDGED_CHANGES,
  UNJUDGED_OBSERVATIONS,
} from "../cypher/event-time-judge.js";
import { REGISTRY_CHANGES_SINCE, registryHeads, registryHistory } from "../cypher/registry-history.js";
import type { Statement } from "../cypher/statement.js";
import { errorMessage } from "../errors.js";
import {
  type JudgedFinding,
  judgeEscalations,
  type Observation,
  type RecordedFinding,
  type RegistryChange,
} from "../model/event-time-findings.js";
import { historyForWalk, type RecordedTerminalFinding, terminalTransitionsAt } from "../model/event-time-reach.js";
import type { Finding, FindingKind } from "../model/findings.js";
import { type Clock, type GraphWriter, type Logger, systemClock } from "../ports.js";
import { findingStatements, recordedFindings } from "../projection/findings.js";
import { compactHistory } from "./registry-history-retention.js";

/**
 * The event-time judge (issue 53): undeclared escalations decided at each escalation's own
 * observed_at, against the registry's history, once the registry has been applied past it — so the
 * same log gives the same findings live, as a backlog, replayed or with its keys interleaved across
 * partitions. §3.4 and the history mark what is new (cypher/event-time-judge.ts); a round reads the
 * marks below the registry watermark, judges them with the pure judge (model/event-time-findings.ts)
 * and records the findings, clears the marks and advances its progress in one transaction.
 *
 * The wait is bounded: a mark older than `maxWaitMs` (a registry partition that stays behind) gets
 * everything waiting judged against what has been applied; a registry change that arrives after the
 * judge has passed its time is late, and the findings and resolutions it brings say so.
 */
export interface EventTimeJudgeDeps {
  readonly graph: GraphWriter;
  /** Each database judged; `tenant` is the one tenant a database serves alone (null when shared). */
  readonly databases: readonly JudgedDatabase[];
  /** The registry watermark now (model/event-time-findings.ts advanceRegistryWatermark): asks the broker. */
  watermark(): Promise<number>;
  /** Whether this instance judges: one per group is enough (the owner of registry partition 0). */
  judges(): boolean;
  readonly maxWaitMs: number;
  /**
   * REGISTRY_HISTORY_RETENTION_MS: event time behind `judged_through` kept whole; older history is
   * compacted once an hour (the first an hour after start). 0 or absent: never.
   */
  readonly historyRetentionMs?: number;
  /** The control terminals (TERMINAL_AGENT_IDS): none, and reachability is not judged. */
  readonly terminals: ReadonlySet<string>;
  readonly clock?: Clock;
  readonly logger: Logger;
  /** What waits for judgement (metrics: agp_findings_judge_wait_seconds), each round. */
  waiting?(database: string, oldestMark: number | undefined): void;
  /** A page's transaction recorded these findings for the first time (counted, then published). */
  recorded(findings: readonly { tenant: string; kind: FindingKind }[]): void;
}

export interface JudgedDatabase {
  readonly database: string;
  readonly scoped: boolean;
  readonly tenant: string | null;
}

/** The databases the tenants are served from, each with its one tenant unless several share it. */
export function judgedDatabases(tenants: readonly TenantRoute[]): JudgedDatabase[] {
  const shared = sharedDatabases(tenants);
  return [...new Map(tenants.map((route) => [route.database, route])).values()].map((route) => ({
    database: route.database,
    scoped: shared.has(route.database),
    tenant: shared.has(route.database) ? null : route.tenantId,
  }));
}

export interface EventTimeJudge {
  /** One round over every database; resolves with the findings it recorded for the first time. */
  round(): Promise<number>;
  every(intervalMs: number): void;
  stop(): Promise<void>;
}

/** FINDINGS_ENABLED=false: nothing is judged. */
export const noEventTimeJudge: EventTimeJudge = { round: async () => 0, every: () => {}, stop: async () => {} };

/** Marks judged per transaction. */
const PAGE = 2_000;
/** Pages per round, so one round of a large backlog does not hold a stop. */
const PAGES_PER_ROUND = 25;
/** How often the registry history is compacted. */
const COMPACT_EVERY_MS = 3_600_000;

type Row = Record<string, unknown>;
const num = (value: unknown): number => Number(value);

function observationOf(row: Row): Observation & { unjudged?: number } {
  return {
    tenant_id: String(row.tenant_id),
    source_agent_id: String(row.source_agent_id),
    target_agent_id: String(row.target_agent_id),
    observed_at: num(row.observed_at),
    source_outcome_id: String(row.source_outcome_id),
    target_outcome_id: String(row.target_outcome_id),
    ...(row.unjudged === undefined ? {} : { unjudged: num(row.unjudged) }),
  };
}

const agentKey = (tenant: string, agent: string) => JSON.stringify([tenant, agent]);

const changeKey = (row: Row) =>
  JSON.stringify([String(row.tenant_id), String(row.agent_id), num(row.registry_version)]);

/** The changes of a page that came late: older than what earlier rounds decided. */
export function lateChanges(changes: readonly Row[], judgedThrough: number | null): Set<string> {
  return new Set(changes.filter((c) => judgedThrough !== null && num(c.occurred_at) < judgedThrough).map(changeKey));
}

/** History rows as the judges take them, the page's late changes marked. */
export function historyOf(rows: readonly Row[], late: ReadonlySet<string>): RegistryChange[] {
  return rows.map((row) => ({
    tenant_id: String(row.tenant_id),
    agent_id: String(row.agent_id),
    registry_version: num(row.registry_version),
    occurred_at: num(row.occurred_at),
    declared: (row.declared as string[] | null) ?? [],
    late: row.late === true || late.has(changeKey(row)),
    retired: row.retired === true,
  }));
}

/**
 * The terminal-unreachable transitions at the instants of a page's changes, per tenant, from the
 * tenant's whole history (model/event-time-reach.ts).
 */
export function terminalFindings(
  changes: readonly Row[],
  histories: ReadonlyMap<string, readonly Row[]>,
  recorded: ReadonlyMap<string, readonly Row[]>,
  terminals: ReadonlySet<string>,
  late: ReadonlySet<string>,
): Finding[] {
  return [...histories].flatMap(([tenant, rows]) =>
    terminalTransitionsAt(tenant, {
      history: historyOf(rows, late),
      instants: changes.filter((c) => String(c.tenant_id) === tenant).map((c) => num(c.occurred_at)),
      terminals,
      recorded: (recorded.get(tenant) ?? []).map((row) => ({
        finding_id: String(row.finding_id),
        tenant_id: tenant,
        kind: row.kind as RecordedTerminalFinding["kind"],
        source_agent_id: String(row.source_agent_id),
        resolves: row.resolves === null || row.resolves === undefined ? null : String(row.resolves),
        at: row.at === null || row.at === undefined ? null : num(row.at),
      })),
    }),
  );
}

/** What one page of marks decides: the statements of its transaction, given what was read for it. */
export function judgementStatements(input: {
  readonly observations: readonly (Observation & { unjudged?: number })[];
  readonly changes: readonly Row[];
  readonly rejudged: readonly Observation[];
  readonly history: readonly Row[];
  readonly recorded: readonly Row[];
  /** +∞ when the wait ran out: everything read is decided. */
  readonly watermark: number;
  /** Every observation below it was judged before this page: a change below it is late. */
  readonly judgedThrough: number | null;
  readonly scoped: boolean;
  /** The terminal findings the page's changes bring (terminalFindings), recorded in the same transaction. */
  readonly terminal?: readonly Finding[];
}): { statements: Statement[]; findings: JudgedFinding[]; judgedThrough: number } {
  const { judgedThrough, scoped } = input;
  const late = lateChanges(input.changes, judgedThrough);
  const history = historyOf(input.history, late);
  const recorded: RecordedFinding[] = input.recorded.map((row) => ({
    finding_id: String(row.finding_id),
    tenant_id: String(row.tenant_id),
    source_agent_id: String(row.source_agent_id),
    target_agent_id: String(row.target_agent_id),
    episode: row.episode === null || row.episode === undefined ? null : num(row.episode),
    resolved: row.resolved === true,
  }));
  const { findings } = judgeEscalations({
    history,
    observations: [...input.observations, ...input.rejudged],
    recorded,
    watermark: input.watermark,
  });
  const statements: Statement[] = findingStatements([...findings, ...(input.terminal ?? [])], scoped);
  const marked = input.observations.filter((o) => o.unjudged !== undefined);
  if (marked.length > 0)
    statements.push({
      name: "judge-marks",
      cypher: clearObservations(scoped),
      params: { rows: marked.map((o) => ({ ...o })) },
    });
  if (input.changes.length > 0)
    statements.push({
      name: "judge-marks",
      cypher: clearChanges(scoped),
      params: {
        rows: input.changes.map((c) => ({
          ...c,
          late: late.has(JSON.stringify([c.tenant_id, c.agent_id, num(c.registry_version)])),
        })),
      },
    });
  const decided = [
    ...input.observations.map((o) => o.observed_at + 1),
    ...input.changes.map((c) => num(c.occurred_at) + 1),
  ];
  const through = Number.isFinite(input.watermark) ? input.watermark : Math.max(Number.NEGATIVE_INFINITY, ...decided);
  const next = Math.max(judgedThrough ?? Number.NEGATIVE_INFINITY, through);
  if (Number.isFinite(next))
    statements.push({
      name: "judge-marks",
      cypher: ADVANCE_JUDGE_PROGRESS,
      params: { rows: [{ judged_through: next }] },
    });
  return { statements, findings, judgedThrough: next };
}

export function createEventTimeJudge(deps: EventTimeJudgeDeps): EventTimeJudge {
  const clock = deps.clock ?? systemClock;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let stopped = false;
  let compactedAt = clock.now();

  async function oldestMark({ database }: JudgedDatabase): Promise<number | undefined> {
    const [row] = await deps.graph.read(database, OLDEST_MARK);
    return row?.oldest === null || row?.oldest === undefined ? undefined : num(row.oldest);
  }

  /**
   * What terminal reachability needs of each tenant the changes belong to: the history its instants from
   * the earliest change on depend on (model/event-time-reach.ts historyForWalk), and the findings (recordedForWalk).
   */
  async function readTerminal(database: string, scoped: boolean, changes: readonly Row[]) {
    const histories = new Map<string, Row[]>();
    const recordedTerminal = new Map<string, Row[]>();
    for (const tenant of new Set(changes.map((c) => String(c.tenant_id)))) {
      const since = Math.min(...changes.filter((c) => String(c.tenant_id) === tenant).map((c) => num(c.occurred_at)));
      const agents = await deps.graph.read(database, REGISTRY_CHANGES_SINCE, { tenant_id: tenant, since });
      const changedSince = await deps.graph.read(database, registryHistory(scoped), {
        agents: agents.map((row) => ({ tenant_id: tenant, agent_id: row.agent_id })),
      });
      const heads = await deps.graph.read(database, registryHeads(scoped), { tenant_id: tenant });
      histories.set(
        tenant,
        historyForWalk(changedSince, heads, (c) => String(c.agent_id)),
      );
      recordedTerminal.set(
        tenant,
        await deps.graph.read(database, RECORDED_TERMINAL_FINDINGS, { tenant_id: tenant, since }),
      );
    }
    return { histories, recordedTerminal };
  }

  /** One page of one database; false when nothing was left to decide. */
  async function page(
    { database, scoped, tenant }: JudgedDatabase,
    watermark: number,
    judgedThrough: number | null,
  ): Promise<{ more: boolean; n: number }> {
    const bound = Number.isFinite(watermark) ? watermark : null;
    const observations = (
      await deps.graph.read(database, UNJUDGED_OBSERVATIONS, { watermark: bound, limit: PAGE, tenant })
    ).map(observationOf);
    const changes = await deps.graph.read(database, UNJUDGED_CHANGES, { watermark: bound, limit: PAGE });
    if (observations.length === 0 && changes.length === 0) return { more: false, n: 0 };
    const since = new Map<string, { tenant_id: string; agent_id: string; since: number }>();
    for (const c of changes) {
      const key = agentKey(String(c.tenant_id), String(c.agent_id));
      const at = num(c.occurred_at);
      const known = since.get(key);
      if (!known || at < known.since)
        since.set(key, { tenant_id: String(c.tenant_id), agent_id: String(c.agent_id), since: at });
    }
    const rejudged =
      since.size === 0
        ? []
        : (await deps.graph.read(database, observationsSince(scoped), { agents: [...since.values()] })).map(
            observationOf,
          );
    const agents = new Map<string, { tenant_id: string; agent_id: string }>();
    for (const o of [...observations, ...rejudged])
      agents.set(agentKey(o.tenant_id, o.source_agent_id), { tenant_id: o.tenant_id, agent_id: o.source_agent_id });
    for (const s of since.values()) agents.set(agentKey(s.tenant_id, s.agent_id), s);
    const list = [...agents.values()];
    const history = await deps.graph.read(database, registryHistory(scoped), { agents: list });
    const recorded = await deps.graph.read(database, RECORDED_ESCALATION_FINDINGS, { agents: list });
    const terminal =
      deps.terminals.size === 0 || changes.length === 0
        ? []
        : await readTerminal(database, scoped, changes).then(({ histories, recordedTerminal }) =>
            terminalFindings(changes, histories, recordedTerminal, deps.terminals, lateChanges(changes, judgedThrough)),
          );
    const { statements } = judgementStatements({
      observations,
      changes,
      rejudged,
      history,
      recorded,
      watermark,
      judgedThrough,
      scoped,
      terminal,
    });
    const results = await deps.graph.apply(database, statements);
    const found = recordedFindings(results);
    if (found.length > 0) deps.recorded(found);
    return { more: observations.length === PAGE || changes.length === PAGE, n: found.length };
  }

  async function roundNow(): Promise<number> {
    if (!deps.judges()) {
      for (const { database } of deps.databases) deps.waiting?.(database, undefined);
      return 0;
    }
    let recordedCount = 0;
    for (const target of deps.databases) {
      const { database } = target;
      const oldest = await oldestMark(target);
      deps.waiting?.(database, oldest);
      if (oldest === undefined) continue;
      const overdue = oldest < clock.now() - deps.maxWaitMs;
      const watermark = overdue ? Number.POSITIVE_INFINITY : await deps.watermark();
      if (watermark === Number.NEGATIVE_INFINITY) continue;
      // Read once a round: a change this round decides is late only against what earlier rounds decided.
      const [progress] = await deps.graph.read(database, JUDGE_PROGRESS);
      const through = progress?.judged_through;
      const judgedThrough = through === null || through === undefined ? null : num(through);
      for (let n = 0; n < PAGES_PER_ROUND && !stopped; n++) {
        const { more, n: found } = await page(target, watermark, judgedThrough);
        recordedCount += found;
        if (!more) break;
      }
    }
    const retention = deps.historyRetentionMs ?? 0;
    if (retention > 0 && clock.now() - compactedAt >= COMPACT_EVERY_MS) {
      compactedAt = clock.now();
      for (const target of deps.databases)
        await compactHistory({
          graph: deps.graph,
          logger: deps.logger,
          target,
          retentionMs: retention,
          now: clock.now(),
        });
    }
    return recordedCount;
  }

  function round(): Promise<number> {
    if (running) return running;
    running = roundNow().finally(() => {
      running = undefined;
    });
    return running;
  }

  return {
    round,
    every(intervalMs) {
      if (stopped || timer) return;
      const tick = () => {
        timer = setTimeout(async () => {
          try {
            await round();
          } catch (error) {
            if (stopped) return;
            deps.logger.warn(
              { err: errorMessage(error) },
              "judging findings at event time failed; the next round tries again",
            );
          }
          if (!stopped) tick();
        }, intervalMs);
        timer.unref?.();
      };
      tick();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
