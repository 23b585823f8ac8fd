import { recordRegistryChanges } from "../cypher/registry-history.js";
import { registryProjection, registryTombstone } from "../cypher/s3_1-registry-projection.js";
import { escalationDeclared } from "../cypher/s3_2-escalation-declared.js";
import type { Statement, StatementResult } from "../cypher/statement.js";
import { registryChange } from "../model/event-time-findings.js";
import type { RegistryEvent, RegistrySnapshot } from "../model/events.js";
import { applied, type Fate, stale, unchanged } from "../model/fate.js";
import { type Indexed, type Plan, returnedIndexes } from "./plan.js";

/**
 * One round of registry writes: at most one unit per agent, so no key repeats inside an UNWIND. Rounds
 * run in order in the same transaction.
 */
export interface RegistryRound {
  readonly snapshots: readonly Indexed<RegistrySnapshot>[];
  readonly tombstones: readonly Indexed<RegistryEvent>[];
}

/**
 * Reduces a batch of registry events (in offset order) to the ones whose effect in-order application
 * would keep, and spreads them over rounds. An event below the highest snapshot version seen earlier
 * in the batch for its agent could not pass the version guard, so it is superseded; so is an exact
 * repeat of the unit before it. Usually one snapshot per agent is left — the highest version, the last
 * among equals. A tombstone does not supersede what follows it here (whether it fences depends on the
 * agent being in the graph, which only the guard knows), so the units after it run in later rounds.
 * When a batch holds several rising events of one agent they all stay, one round each: an
 * intermediate snapshot can leave nodes and revoked declarations behind, and the graph must not
 * depend on where batch boundaries fell.
 */
export function collapseRegistry(events: readonly Indexed<RegistryEvent>[]): {
  rounds: RegistryRound[];
  superseded: number[];
} {
  const unitsByAgent = new Map<string, Indexed<RegistryEvent>[]>();
  const highestVersion = new Map<string, number>();
  const superseded: number[] = [];
  for (const item of events) {
    const { event } = item;
    // Ids are unique within a tenant: two tenants' agents of one id are two agents.
    const agent = `${event.tenant_id}\u0000${event.agent_id}`;
    const units = unitsByAgent.get(agent) ?? [];
    unitsByAgent.set(agent, units);
    const highest = highestVersion.get(agent) ?? Number.NEGATIVE_INFINITY;
    if (event.registry_version < highest) {
      superseded.push(item.i);
      continue;
    }
    if (event.kind === "registry-snapshot") highestVersion.set(agent, event.registry_version);
    const last = units.at(-1);
    if (last !== undefined && sameEffect(last.event, event)) {
      superseded.push(last.i);
      units[units.length - 1] = item;
    } else {
      units.push(item);
    }
  }
  const rounds: { snapshots: Indexed<RegistrySnapshot>[]; tombstones: Indexed<RegistryEvent>[] }[] = [];
  for (const units of unitsByAgent.values()) {
    units.forEach((unit, depth) => {
      if (rounds[depth] === undefined) rounds[depth] = { snapshots: [], tombstones: [] };
      const round = rounds[depth];
      if (unit.event.kind === "registry-snapshot") round.snapshots.push({ i: unit.i, event: unit.event });
      else round.tombstones.push(unit);
    });
  }
  return { rounds, superseded };
}

/** Two registry events whose application leaves the same graph (ids and timestamps aside). */
function sameEffect(a: RegistryEvent, b: RegistryEvent): boolean {
  if (a.kind === "registry-tombstone" || b.kind === "registry-tombstone")
    return a.kind === b.kind && a.registry_version === b.registry_version;
  const { event_id: _a, occurred_at: _b, ...left } = a;
  const { event_id: _c, occurred_at: _d, ...right } = b;
  return JSON.stringify(left) === JSON.stringify(right);
}

export function snapshotRow({ i, event }: Indexed<RegistrySnapshot>): Record<string, unknown> {
  return {
    i,
    tenant_id: event.tenant_id,
    agent_id: event.agent_id,
    registry_version: event.registry_version,
    occurred_at: event.occurred_at,
    name: event.name,
    family: event.family,
    owner: event.owner,
    decision_scope: event.decision_scope,
    status: event.status,
    tools: event.tools,
    owned_workflows: event.owned_workflows,
    escalation_path: event.escalation_path,
  };
}

/**
 * `registry-mutation` → §3.1 then §3.2, per round. A snapshot or tombstone the version guard did not
 * let through is stale; a tombstone for an agent never projected is unchanged. An event superseded
 * inside the batch is stale. `scoped`: several tenants share the database (cypher/tenant.ts).
 */
export function projectRegistry(events: readonly Indexed<RegistryEvent>[], scoped = false): Plan {
  const { rounds, superseded } = collapseRegistry(events);
  const statements: Statement[] = [];
  for (const round of rounds) {
    if (round.tombstones.length > 0) {
      const rows = round.tombstones.map(({ i, event }) => ({
        i,
        tenant_id: event.tenant_id,
        agent_id: event.agent_id,
        registry_version: event.registry_version,
      }));
      statements.push({ name: "3.1-tombstone", cypher: registryTombstone(scoped), params: { rows } });
    }
    if (round.snapshots.length > 0) {
      const rows = round.snapshots.map(snapshotRow);
      statements.push({ name: "3.1", cypher: registryProjection(scoped), params: { rows } });
      statements.push({ name: "3.2", cypher: escalationDeclared(scoped), params: { rows } });
    }
  }
  const history = historyStatement(events, scoped);
  if (history) statements.push(history);
  return {
    statements,
    // Findings are judged at event time from the history this transaction adds to
    // (pipeline/event-time-judge.ts), not from the order in which records happen to be applied.
    fates(results: readonly StatementResult[]) {
      const fates = new Map<number, Fate>();
      statements.forEach((statement, position) => {
        if (statement.name === "3.2" || statement.name === "reachability" || statement.name === "registry-history")
          return;
        if (statement.name === "3.1-tombstone") {
          const found = new Map<number, boolean>();
          for (const record of results[position]?.records ?? []) found.set(Number(record.i), record.applied === true);
          for (const row of statement.params.rows) {
            const i = Number(row.i);
            const wasApplied = found.get(i);
            fates.set(i, wasApplied === undefined ? unchanged : wasApplied ? applied : stale);
          }
          return;
        }
        const passed = returnedIndexes(results[position]);
        for (const row of statement.params.rows) {
          const i = Number(row.i);
          fates.set(i, passed.has(i) ? applied : stale);
        }
      });
      for (const i of superseded) fates.set(i, stale);
      return fates;
    },
  };
}

/**
 * Every record of the batch adds its change to the registry's history (cypher/registry-history.ts),
 * superseded and stale ones too, so the history does not depend on batching or delivery order. One row
 * per change, a tombstone's winning a tie; rows in key order, so concurrent transactions lock in one order.
 */
function historyStatement(events: readonly Indexed<RegistryEvent>[], scoped: boolean): Statement | undefined {
  const rows = new Map<string, Record<string, unknown>>();
  for (const { event } of events) {
    const change = registryChange(event);
    if (!change) continue;
    const key = JSON.stringify([change.tenant_id, change.agent_id, change.registry_version]);
    const deleted = event.kind === "registry-tombstone";
    if (rows.get(key)?.deleted === true) continue;
    rows.set(key, { ...change, deleted });
  }
  if (rows.size === 0) return undefined;
  const sorted = [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
  return { name: "registry-history", cypher: recordRegistryChanges(scoped), params: { rows: sorted } };
}
