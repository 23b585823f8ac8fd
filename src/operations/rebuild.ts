import { HistoryGoneError } from "../adapters/kafka/history.js";
import type { TenantRoute } from "../config.js";
import { wipeAgentRegistryState, wipeDeclared, wipeRegistryEdges } from "../cypher/rebuild.js";
import type { ValidationRules } from "../model/validate.js";
import type { Decoder, GraphWriter, GroupAdmin, TopicReader } from "../ports.js";
import { projectRegistry } from "../projection/registry.js";
import { readRegistryTopic } from "../reconcile/reconcile.js";

/** Registry events applied per transaction while rebuilding. */
const REBUILD_CHUNK = 1000;

export type RebuildResult = {
  readonly tenant: string;
  readonly database: string;
  readonly records: number;
  readonly agents: number;
};

/**
 * §7's wipe-and-rebuild, from what lasts. Refuses while the group has active members, and when the
 * compacted registry topic no longer starts at offset 0 (records deleted, not compacted: the latest
 * snapshot of some agent may be gone). Then, per served tenant, wipes what the registry owns (see
 * cypher/rebuild.ts) and applies the registry topic's records again, in offset order, through the
 * same §3.1/§3.2 statements and version guard as the service. The consumer group's offsets are not
 * touched: nothing else needs re-reading.
 */
export async function rebuildRegistry(options: {
  graph: GraphWriter;
  admin: GroupAdmin;
  reader: TopicReader;
  groupId: string;
  topic: string;
  decoder: Decoder;
  tenants: readonly TenantRoute[];
  shared: ReadonlySet<string>;
  rules: ValidationRules;
}): Promise<RebuildResult[]> {
  await options.admin.assertNoActiveMembers(options.groupId);
  const gaps = await options.admin.historyGaps([options.topic], { earliest: true });
  if (gaps.length > 0) throw new HistoryGoneError(gaps, "rebuild");

  const { events } = await readRegistryTopic(options.reader, options.topic, options.decoder, options.rules);
  const results: RebuildResult[] = [];
  for (const route of options.tenants) {
    const scoped = options.shared.has(route.database);
    const mine = events.filter((event) => event.tenant_id === route.tenantId);
    const latest = new Map<string, string>();
    for (const event of mine) latest.set(event.agent_id, event.kind);
    const snapshotted = [...latest].filter(([, kind]) => kind === "registry-snapshot").map(([id]) => id);
    const scope = scoped ? { tenant_id: route.tenantId } : {};
    await options.graph.runAutoCommit(route.database, wipeRegistryEdges(scoped), scope);
    await options.graph.runAutoCommit(route.database, wipeDeclared(scoped), scope);
    await options.graph.runAutoCommit(route.database, wipeAgentRegistryState(scoped), {
      ...scope,
      agent_ids: snapshotted,
    });
    for (let start = 0; start < mine.length; start += REBUILD_CHUNK) {
      const chunk = mine.slice(start, start + REBUILD_CHUNK).map((event, i) => ({ i, event }));
      await options.graph.apply(route.database, projectRegistry(chunk, scoped).statements);
    }
    results.push({ tenant: route.tenantId, database: route.database, records: mine.length, agents: latest.size });
  }
  return results;
}
