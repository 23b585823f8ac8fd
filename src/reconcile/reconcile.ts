import { REGISTRY_PROJECTION_STATE } from "../cypher/reconcile.js";
import type { RegistryEvent } from "../model/events.js";
import { Rejection } from "../model/fate.js";
import type { ValidationRules } from "../model/validate.js";
import { toEvent } from "../pipeline/stream-rules.js";
import type { Decoder, GraphWriter, SourceRecord, TopicReader } from "../ports.js";
import { projectRegistry } from "../projection/registry.js";
import { type AgentState, type Drift, diffRegistry, registryState } from "./drift.js";

export interface ReconcileResult {
  readonly agents: number;
  readonly drift: readonly Drift[];
  readonly unreadable: number;
  readonly repaired: number;
}

/**
 * Reads the compacted registry topic into the registry's current state, diffs it against the graph's
 * Agent/Workflow/Tool projection and, with `repair`, re-applies §3.1/§3.2 for every drifted agent (the
 * version guard lets an equal version through, so the repair is the projection itself).
 */
export async function reconcileRegistry(options: {
  reader: TopicReader;
  topic: string;
  decoder: Decoder;
  graph: GraphWriter;
  database: string;
  tenantId: string;
  rules: ValidationRules;
  repair: boolean;
  /** false (FINDINGS_ENABLED=false): a repair records no findings (resolutions of the edges it declares). */
  recordFindings?: boolean;
  /** Several tenants share the database: keys carry the tenant (cypher/tenant.ts). */
  scoped?: boolean;
}): Promise<ReconcileResult> {
  const read = await readRegistryTopic(options.reader, options.topic, options.decoder, options.rules);
  const events = read.events.filter((event) => event.tenant_id === options.tenantId);
  const unreadable = read.unreadable;
  const registry = registryState(events);
  const actual = await readProjection(options.graph, options.database, options.scoped ? options.tenantId : null);
  const drift = diffRegistry(new Map([...registry].map(([id, { state }]) => [id, state])), actual);

  let repaired = 0;
  if (options.repair && drift.length > 0) {
    const drifted = [...new Set(drift.map((d) => d.agent_id))].flatMap((id) => {
      const entry = registry.get(id);
      return entry ? [entry.latest] : [];
    });
    const plan = projectRegistry(
      drifted.map((event, i) => ({ i, event })),
      options.scoped === true,
    );
    await options.graph.apply(
      options.database,
      plan.statements,
      options.recordFindings === false ? undefined : plan.followUp,
    );
    repaired = drifted.length;
  }
  return { agents: registry.size, drift, unreadable, repaired };
}

/** The registry topic as read: its events with the records they came from, and the records that did not validate. */
export interface RegistryRead {
  readonly events: RegistryEvent[];
  /** `sources[n]` is the record `events[n]` was read from. */
  readonly sources: SourceRecord[];
  readonly rejected: { readonly record: SourceRecord; readonly rejection: Rejection }[];
  readonly unreadable: number;
}

/**
 * The registry topic read to its end and validated, in offset order per partition (so per agent);
 * records that do not validate are returned apart, with why. Each record is read as the consumer reads it.
 */
export async function readRegistryTopic(
  reader: TopicReader,
  topic: string,
  decoder: Decoder,
  rules: ValidationRules,
): Promise<RegistryRead> {
  const records: SourceRecord[] = [];
  await reader.readToEnd([topic], (record) => records.push(record));
  const events: RegistryEvent[] = [];
  const sources: SourceRecord[] = [];
  const rejected: RegistryRead["rejected"] = [];
  for (const record of records) {
    const event = await toEvent("registry-mutation", record, { decoder, rules });
    if (event instanceof Rejection) rejected.push({ record, rejection: event });
    else if (event.kind === "registry-snapshot" || event.kind === "registry-tombstone") {
      events.push(event);
      sources.push(record);
    }
  }
  return { events, sources, rejected, unreadable: rejected.length };
}

async function readProjection(
  graph: GraphWriter,
  database: string,
  tenantId: string | null,
): Promise<Map<string, AgentState>> {
  const rows = await graph.read(database, REGISTRY_PROJECTION_STATE, { tenant_id: tenantId });
  return new Map(
    rows.map((row) => {
      const props = row.props as Record<string, string | number | null>;
      const state: AgentState = {
        agent_id: String(row.agent_id),
        props: Object.fromEntries(
          ["name", "family", "owner", "decision_scope", "status", "registry_version"].map((k) => [k, props[k] ?? null]),
        ),
        tools: new Map((row.tools as [string, string][]).map(([id, name]) => [id, name])),
        workflows: new Map(
          (row.workflows as [string, string, string, string][]).map(([id, ...rest]) => [id, JSON.stringify(rest)]),
        ),
        declared: new Set(row.declared as string[]),
      };
      return [state.agent_id, state];
    }),
  );
}
