import { GroupActiveError } from "../adapters/kafka/group-admin.js";
import { HistoryGoneError } from "../adapters/kafka/history.js";
import type { TenantRoute } from "../config.js";
import { wipeAgentRegistryState, wipeDeclared, wipeRegistryEdges } from "../cypher/rebuild.js";
import type { Statement } from "../cypher/statement.js";
import { boundedText, classify, errorMessage, neo4jCode } from "../errors.js";
import type { RegistryEvent } from "../model/events.js";
import type { RejectReason } from "../model/fate.js";
import type { ValidationRules } from "../model/validate.js";
import type { Decoder, GraphWriter, GroupAdmin, RecordSink, SinkItem, SourceRecord, TopicReader } from "../ports.js";
import type { Indexed } from "../projection/plan.js";
import { projectRegistry } from "../projection/registry.js";
import { readRegistryTopic } from "../reconcile/reconcile.js";

/** Where one tenant stands after a rebuild. Anything but `rebuilt` left that tenant's graph as it was. */
export type RebuildStatus = "rebuilt" | "failed" | "not attempted" | "would be rebuilt";

export type RebuildResult = {
  readonly tenant: string;
  readonly database: string;
  readonly status: RebuildStatus;
  /** Registry records of the tenant applied (or that would have been). */
  readonly records: number;
  readonly agents: number;
  /** Records of the tenant Neo4j refused, dead-lettered and left out. */
  readonly rejected: number;
};

/** The steps of a rebuild, in order; `writing` once per tenant. */
export type RebuildStep =
  | { readonly step: "reading"; readonly topic: string }
  | { readonly step: "read"; readonly records: number; readonly unreadable: number }
  | { readonly step: "writing"; readonly tenant: string; readonly database: string; readonly records: number };

/** A registry record the rebuild left out and dead-lettered, and why. */
export type NotApplied = {
  readonly source: string;
  readonly key: string | null;
  readonly reason: RejectReason;
  readonly message: string;
};

export interface RebuildReport {
  readonly tenants: readonly RebuildResult[];
  readonly deadLettered: readonly NotApplied[];
}

/**
 * A tenant's rebuild failed: its transaction was rolled back, so its graph is as it was, as is every
 * tenant after it (not attempted); the tenants before it are rebuilt. `report` says which is which.
 */
export class RebuildFailedError extends Error {
  override readonly name = "RebuildFailedError";
  constructor(
    readonly report: RebuildReport,
    tenant: string,
    cause: unknown,
  ) {
    super(
      `rebuild of tenant "${tenant}" failed and was rolled back (its graph is as it was): ${boundedText(errorMessage(cause))}`,
      { cause },
    );
  }
}

/**
 * §7's wipe-and-rebuild, from what lasts, all or nothing per tenant. Refuses while the group has
 * active members, and when the compacted registry topic no longer starts at offset 0 (records
 * deleted, not compacted: the latest snapshot of some agent may be gone).
 *
 * Everything is read and validated before the graph changes; records that do not validate are
 * dead-lettered with their reason (as the service does when it consumes them) and reported. Then,
 * per served tenant, one write transaction wipes what the registry owns (see cypher/rebuild.ts) and
 * applies the tenant's registry records again, in offset order, through the same §3.1/§3.2
 * statements and version guard as the service: a failure anywhere (Neo4j away past the writer's
 * retry budget, the process killed) rolls it all back. When Neo4j refuses the data itself, the
 * records it refuses are found in transactions that are rolled back (halving, as the service
 * narrows a batch), dead-lettered as `neo4j-rejected`, and the tenant is rebuilt without them.
 *
 * Tenants are rebuilt one after another, each in its own transaction; when one fails, the ones
 * before it stay rebuilt and it and the ones after it are unchanged (RebuildFailedError). Running
 * the rebuild again is safe. The consumer group's offsets are not touched: nothing else needs re-reading.
 */
export async function rebuildRegistry(options: {
  graph: GraphWriter;
  admin: GroupAdmin;
  reader: TopicReader;
  /** Where records that cannot be read or written are dead-lettered. */
  sink: RecordSink;
  groupId: string;
  topic: string;
  decoder: Decoder;
  tenants: readonly TenantRoute[];
  shared: ReadonlySet<string>;
  rules: ValidationRules;
  /** Told as each step starts, so a long rebuild says what it is doing. */
  progress?: (step: RebuildStep) => void;
}): Promise<RebuildReport> {
  const { graph, sink } = options;
  const progress = options.progress ?? (() => {});
  await options.admin.assertNoActiveMembers(options.groupId);
  const gaps = await options.admin.historyGaps([options.topic], { earliest: true });
  if (gaps.length > 0) throw new HistoryGoneError(gaps, "rebuild");

  progress({ step: "reading", topic: options.topic });
  const read = await readRegistryTopic(options.reader, options.topic, options.decoder, options.rules);
  progress({ step: "read", records: read.events.length + read.rejected.length, unreadable: read.rejected.length });
  const deadLetters: NotApplied[] = [];
  const unreadable = read.rejected.map(({ record, rejection }) =>
    deadLetter(record, rejection.reason, boundedText(rejection.message)),
  );
  await send(sink, unreadable, deadLetters);

  const results = tenantResults(options.tenants, read.events, "not attempted");
  const report = (): RebuildReport => ({ tenants: [...results], deadLettered: [...deadLetters] });

  for (const [n, route] of options.tenants.entries()) {
    const scoped = options.shared.has(route.database);
    const mine: Indexed<RegistryEvent>[] = [];
    read.events.forEach((event, i) => {
      if (event.tenant_id === route.tenantId) mine.push({ i, event });
    });
    const build = (events: readonly Indexed<RegistryEvent>[]) => rebuildStatements(route.tenantId, scoped, events);
    const result = results[n] as RebuildResult;
    progress({ step: "writing", tenant: route.tenantId, database: route.database, records: mine.length });
    try {
      let refused: Refused[] = [];
      try {
        await graph.apply(route.database, build(mine));
      } catch (error) {
        refused = await refusedRecords(graph, route.database, build, mine, error);
        const left = new Set(refused.map(({ i }) => i));
        const rest = mine.filter(({ i }) => !left.has(i));
        // Dead-lettered before the write, so that a record left out is never lost unreported.
        const items = refused.map(({ i, error: cause }) =>
          deadLetter(read.sources[i] as SourceRecord, "neo4j-rejected", rejectedMessage(cause)),
        );
        await send(sink, items, deadLetters);
        await graph.apply(route.database, build(rest));
      }
      results[n] = { ...result, status: "rebuilt", records: result.records - refused.length, rejected: refused.length };
    } catch (error) {
      results[n] = { ...result, status: "failed" };
      throw new RebuildFailedError(report(), route.tenantId, error);
    }
  }
  return report();
}

function tenantResults(
  tenants: readonly TenantRoute[],
  events: readonly RegistryEvent[],
  status: RebuildStatus,
): RebuildResult[] {
  return tenants.map((route) => {
    const mine = events.filter((event) => event.tenant_id === route.tenantId);
    return {
      tenant: route.tenantId,
      database: route.database,
      status,
      records: mine.length,
      agents: new Set(mine.map((event) => event.agent_id)).size,
      rejected: 0,
    };
  });
}

/** What `rebuild --dry-run` reports: the rebuild's report as it would begin, and what would stop it now. */
export interface RebuildPlan extends RebuildReport {
  readonly dryRun: true;
  /** Why the rebuild itself would refuse now (instances running, history gone), if it would. */
  readonly refusals: readonly string[];
}

/**
 * The rebuild's reading half and its checks, changing nothing: per tenant the records and agents it
 * would apply, and the records it would dead-letter as unreadable or invalid. Records Neo4j would
 * refuse are found only by writing, so a dry run cannot name them.
 */
export async function planRebuild(
  options: Pick<
    Parameters<typeof rebuildRegistry>[0],
    "admin" | "reader" | "groupId" | "topic" | "decoder" | "tenants" | "rules"
  >,
): Promise<RebuildPlan> {
  const refusals: string[] = [];
  await options.admin.assertNoActiveMembers(options.groupId).catch((error: unknown) => {
    if (!(error instanceof GroupActiveError)) throw error;
    refusals.push(error.message);
  });
  const gaps = await options.admin.historyGaps([options.topic], { earliest: true });
  if (gaps.length > 0) refusals.push(new HistoryGoneError(gaps, "rebuild").message);
  const read = await readRegistryTopic(options.reader, options.topic, options.decoder, options.rules);
  return {
    dryRun: true,
    refusals,
    tenants: tenantResults(options.tenants, read.events, "would be rebuilt"),
    deadLettered: read.rejected.map(({ record, rejection }) => ({
      source: `${record.topic}:${record.partition}:${record.offset}`,
      key: record.key?.toString() ?? null,
      reason: rejection.reason,
      message: boundedText(rejection.message),
    })),
  };
}

/** One tenant's rebuild, to run in one transaction: the wipe, then §3.1/§3.2 over its events. */
export function rebuildStatements(
  tenantId: string,
  scoped: boolean,
  events: readonly Indexed<RegistryEvent>[],
): Statement[] {
  const latest = new Map<string, RegistryEvent["kind"]>();
  for (const { event } of events) latest.set(event.agent_id, event.kind);
  const snapshotted = [...latest].filter(([, kind]) => kind === "registry-snapshot").map(([id]) => id);
  const tenant = [{ tenant_id: tenantId }];
  return [
    { name: "rebuild-wipe", cypher: wipeRegistryEdges(scoped), params: { rows: tenant } },
    { name: "rebuild-wipe", cypher: wipeDeclared(scoped), params: { rows: tenant } },
    {
      name: "rebuild-wipe",
      cypher: wipeAgentRegistryState(scoped),
      params: { rows: snapshotted.map((agent_id) => ({ tenant_id: tenantId, agent_id })) },
    },
    ...projectRegistry(events, scoped).statements,
  ];
}

type Refused = { readonly i: number; readonly error: unknown };

/**
 * The records Neo4j refuses, found by halving in transactions that are rolled back. A failure that
 * is not the data's (errors.ts: transient or fatal) is thrown; so is the first failure when no
 * record alone is refused (the rest will fail again and be rolled back), and an unrecognised error
 * on a lone record while Neo4j does not answer.
 */
async function refusedRecords(
  graph: GraphWriter,
  database: string,
  build: (events: readonly Indexed<RegistryEvent>[]) => Statement[],
  events: readonly Indexed<RegistryEvent>[],
  first: unknown,
): Promise<Refused[]> {
  recordFaultOrThrow(first);
  const search = async (part: readonly Indexed<RegistryEvent>[], known?: unknown): Promise<Refused[]> => {
    let error = known;
    if (error === undefined) {
      try {
        await graph.trial(database, build(part));
        return [];
      } catch (caught) {
        recordFaultOrThrow(caught);
        error = caught;
      }
    }
    if (part.length === 1) {
      if (classify(error) === "unknown") await graph.ping();
      return [{ i: (part[0] as Indexed<RegistryEvent>).i, error }];
    }
    const half = Math.ceil(part.length / 2);
    return [...(await search(part.slice(0, half))), ...(await search(part.slice(half)))];
  };
  const refused = await search(events, first);
  if (refused.length === 0) throw first;
  return refused;
}

function recordFaultOrThrow(error: unknown): void {
  const retryClass = classify(error);
  if (retryClass === "transient" || retryClass === "fatal") throw error;
}

function rejectedMessage(error: unknown): string {
  const code = neo4jCode(error) ?? (error instanceof Error ? error.name : "error");
  return boundedText(`${code}: ${errorMessage(error)}`);
}

function deadLetter(record: SourceRecord, reason: RejectReason, message: string): SinkItem {
  return { kind: "dead-letter", record, stream: "registry-mutation", fate: { kind: "dead-lettered", reason, message } };
}

async function send(sink: RecordSink, items: readonly SinkItem[], reported: NotApplied[]): Promise<void> {
  if (items.length === 0) return;
  await sink.send(items);
  for (const item of items) {
    if (item.kind !== "dead-letter") continue;
    const { record, fate } = item;
    reported.push({
      source: `${record.topic}:${record.partition}:${record.offset}`,
      key: record.key?.toString() ?? null,
      reason: fate.reason,
      message: fate.message,
    });
  }
}
