import { REGISTRY_PROJECTION, REGISTRY_TOMBSTONE } from "../cypher/s3_1-registry-projection.js";
import { ESCALATION_DECLARED } from "../cypher/s3_2-escalation-declared.js";
import type { Statement, StatementResult } from "../cypher/statement.js";
import type { RegistryEvent, RegistrySnapshot } from "../model/events.js";
import { applied, type Fate, stale, unchanged } from "../model/fate.js";
import { type Indexed, type Plan, returnedIndexes } from "./plan.js";

/**
 * One round of registry writes: at most one unit per agent. Several rounds arise only when a batch holds a
 * tombstone for an agent between its snapshots; they run in order in the same transaction.
 */
export interface RegistryRound {
  readonly snapshots: readonly Indexed<RegistrySnapshot>[];
  readonly tombstones: readonly Indexed<RegistryEvent>[];
}

/**
 * Collapses a batch of registry events (in offset order) into rounds that leave the graph exactly as
 * applying every event in order would. A run of snapshots of one agent collapses to its highest
 * registry_version, the last among equals: under the version guard, that is the only one whose effect
 * survives the run. A run of tombstones collapses to one. Runs alternate, and each becomes a round.
 * Returns the rounds and the events that were superseded inside the batch.
 */
export function collapseRegistry(events: readonly Indexed<RegistryEvent>[]): {
  rounds: RegistryRound[];
  superseded: number[];
} {
  const unitsByAgent = new Map<string, Indexed<RegistryEvent>[]>();
  const superseded: number[] = [];
  for (const item of events) {
    const units = unitsByAgent.get(item.event.agent_id) ?? [];
    unitsByAgent.set(item.event.agent_id, units);
    const last = units.at(-1);
    if (last === undefined || last.event.kind !== item.event.kind) {
      units.push(item);
      continue;
    }
    const keepNew =
      item.event.kind === "registry-tombstone" ||
      (last.event.kind === "registry-snapshot" && item.event.registry_version >= last.event.registry_version);
    if (keepNew) {
      superseded.push(last.i);
      units[units.length - 1] = item;
    } else {
      superseded.push(item.i);
    }
  }
  const rounds: RegistryRound[] = [];
  for (const units of unitsByAgent.values()) {
    units.forEach((unit, depth) => {
      if (rounds[depth] === undefined) rounds[depth] = { snapshots: [], tombstones: [] };
      const round = rounds[depth];
      if (unit.event.kind === "registry-snapshot") {
        (round.snapshots as Indexed<RegistrySnapshot>[]).push(unit as Indexed<RegistrySnapshot>);
      } else {
        (round.tombstones as Indexed<RegistryEvent>[]).push(unit);
      }
    });
  }
  return { rounds, superseded };
}

export function snapshotRow({ i, event }: Indexed<RegistrySnapshot>): Record<string, unknown> {
  return {
    i,
    agent_id: event.agent_id,
    registry_version: event.registry_version,
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
 * `registry-mutation` → §3.1 then §3.2, per round. A snapshot §3.1 did not let through is stale; a
 * tombstone for an agent never projected is unchanged. A snapshot superseded inside the batch is stale.
 */
export function projectRegistry(events: readonly Indexed<RegistryEvent>[]): Plan {
  const { rounds, superseded } = collapseRegistry(events);
  const statements: Statement[] = [];
  for (const round of rounds) {
    if (round.tombstones.length > 0) {
      const rows = round.tombstones.map(({ i, event }) => ({ i, agent_id: event.agent_id }));
      statements.push({ name: "3.1-tombstone", cypher: REGISTRY_TOMBSTONE, params: { rows } });
    }
    if (round.snapshots.length > 0) {
      const rows = round.snapshots.map(snapshotRow);
      statements.push({ name: "3.1", cypher: REGISTRY_PROJECTION, params: { rows } });
      statements.push({ name: "3.2", cypher: ESCALATION_DECLARED, params: { rows } });
    }
  }
  return {
    statements,
    fates(results: readonly StatementResult[]) {
      const fates = new Map<number, Fate>();
      statements.forEach((statement, position) => {
        if (statement.name === "3.2") return;
        const passed = returnedIndexes(results[position]);
        for (const row of statement.params.rows) {
          const i = Number(row.i);
          if (statement.name === "3.1") fates.set(i, passed.has(i) ? applied : stale);
          else fates.set(i, passed.has(i) ? applied : unchanged);
        }
      });
      for (const i of superseded) fates.set(i, stale);
      return fates;
    },
  };
}
