/**
 * §6 Constraints: uniqueness constraints (the one constraint type Community Edition offers), each
 * backing an index. Created idempotently before any write; Outcome.outcome_id is included because every
 * write here MATCHes or MERGEs outcomes by it; RegistryFence.agent_id backs the fence a tombstone
 * leaves for an agent never projected (s3_1-registry-projection.ts), which §3.1 reads per row;
 * Finding.finding_id keeps the findings outbox (cypher/findings.ts) to one node per finding when two
 * transactions MERGE the same one. One plain index joins them: Finding(tenant_id, source_agent_id),
 * by which a registry write finds an agent's open terminal-unreachable finding (cypher/terminal-reach.ts);
 * every Finding carries tenant_id in either layout, so it is the same index in both lists. And one on
 * Finding.published, by which the publisher finds and counts the few findings not yet published after
 * every batch that recorded some: without it each look scanned every finding ever recorded, a cost
 * that grew with the graph (under the bench's steady load of undeclared escalations, Neo4j's CPU fell
 * from 178 to 153 s with the index). And one on Finding.resolves, by which `findings` asks of each
 * finding whether a resolution answers it (LIST_FINDINGS): without it each finding scanned every
 * finding, and the listing grew with the square of their number (bench/findings-list.ts). Indexes are
 * not verified with MIGRATE_ON_START=false: without them the writes are right, only slower.
 * RegistryChange is keyed by agent and version (cypher/registry-history.ts): every registry record
 * MERGEs its change, so two partitions' transactions must not write two nodes for one change.
 */
const FINDING_SOURCE_INDEX =
  "CREATE INDEX finding_tenant_source IF NOT EXISTS FOR (f:Finding) ON (f.tenant_id, f.source_agent_id)";
const FINDING_PUBLISHED_INDEX = "CREATE INDEX finding_published IF NOT EXISTS FOR (f:Finding) ON (f.published)";
const FINDING_RESOLVES_INDEX = "CREATE INDEX finding_resolves IF NOT EXISTS FOR (f:Finding) ON (f.resolves)";
/**
 * And one on Finding(tenant_id, open_until), by which the event-time judge finds the terminal findings
 * not resolved before a page's earliest change (event-time-judge.ts RECORDED_TERMINAL_FINDINGS): without
 * it each page with a registry change read every terminal finding the tenant ever had.
 */
const FINDING_OPEN_UNTIL_INDEX =
  "CREATE INDEX finding_open_until IF NOT EXISTS FOR (f:Finding) ON (f.tenant_id, f.open_until)";
/**
 * What the event-time judge (pipeline/event-time-judge.ts) looks up each round: the observations and
 * registry changes not judged yet (a property only those carry, so the index holds just them), and the
 * observations at or after a registry change's time, which a late change re-judges; the changes older
 * than the history's retention (cypher/registry-history.ts compactRegistryHistory).
 */
const JUDGE_INDEXES = [
  "CREATE INDEX observed_unjudged IF NOT EXISTS FOR ()-[o:OBSERVED]-() ON (o.unjudged)",
  "CREATE INDEX observed_recorded_at IF NOT EXISTS FOR ()-[o:OBSERVED]-() ON (o.recorded_at)",
  "CREATE INDEX registry_change_unjudged IF NOT EXISTS FOR (c:RegistryChange) ON (c.unjudged)",
  "CREATE INDEX registry_change_occurred_at IF NOT EXISTS FOR (c:RegistryChange) ON (c.occurred_at)",
];

export const CONSTRAINTS: readonly string[] = [
  "CREATE CONSTRAINT agent_agent_id IF NOT EXISTS FOR (a:Agent) REQUIRE a.agent_id IS UNIQUE",
  "CREATE CONSTRAINT workflow_workflow_id IF NOT EXISTS FOR (w:Workflow) REQUIRE w.workflow_id IS UNIQUE",
  "CREATE CONSTRAINT tool_tool_id IF NOT EXISTS FOR (t:Tool) REQUIRE t.tool_id IS UNIQUE",
  "CREATE CONSTRAINT outcome_outcome_id IF NOT EXISTS FOR (o:Outcome) REQUIRE o.outcome_id IS UNIQUE",
  "CREATE CONSTRAINT registry_fence_agent_id IF NOT EXISTS FOR (f:RegistryFence) REQUIRE f.agent_id IS UNIQUE",
  "CREATE CONSTRAINT finding_finding_id IF NOT EXISTS FOR (f:Finding) REQUIRE f.finding_id IS UNIQUE",
  "CREATE CONSTRAINT registry_change_key IF NOT EXISTS FOR (c:RegistryChange) REQUIRE (c.agent_id, c.registry_version) IS UNIQUE",
  FINDING_SOURCE_INDEX,
  FINDING_PUBLISHED_INDEX,
  FINDING_RESOLVES_INDEX,
  FINDING_OPEN_UNTIL_INDEX,
  ...JUDGE_INDEXES,
];

export const CONSTRAINT_NAMES: readonly string[] = [
  "agent_agent_id",
  "workflow_workflow_id",
  "tool_tool_id",
  "outcome_outcome_id",
  "registry_fence_agent_id",
  "finding_finding_id",
  "registry_change_key",
];

/**
 * The same constraints when several tenants share the database: ids are unique within a tenant, so
 * each is composite with `tenant_id` first (composite uniqueness constraints exist on Community too).
 * The single-property ones above would forbid two tenants the same id and are dropped there.
 */
export const TENANT_CONSTRAINTS: readonly string[] = [
  "CREATE CONSTRAINT agent_tenant_agent_id IF NOT EXISTS FOR (a:Agent) REQUIRE (a.tenant_id, a.agent_id) IS UNIQUE",
  "CREATE CONSTRAINT workflow_tenant_workflow_id IF NOT EXISTS FOR (w:Workflow) REQUIRE (w.tenant_id, w.workflow_id) IS UNIQUE",
  "CREATE CONSTRAINT tool_tenant_tool_id IF NOT EXISTS FOR (t:Tool) REQUIRE (t.tenant_id, t.tool_id) IS UNIQUE",
  "CREATE CONSTRAINT outcome_tenant_outcome_id IF NOT EXISTS FOR (o:Outcome) REQUIRE (o.tenant_id, o.outcome_id) IS UNIQUE",
  "CREATE CONSTRAINT registry_fence_tenant_agent_id IF NOT EXISTS FOR (f:RegistryFence) REQUIRE (f.tenant_id, f.agent_id) IS UNIQUE",
  "CREATE CONSTRAINT finding_tenant_finding_id IF NOT EXISTS FOR (f:Finding) REQUIRE (f.tenant_id, f.finding_id) IS UNIQUE",
  "CREATE CONSTRAINT registry_change_tenant_key IF NOT EXISTS FOR (c:RegistryChange) REQUIRE (c.tenant_id, c.agent_id, c.registry_version) IS UNIQUE",
  FINDING_SOURCE_INDEX,
  FINDING_PUBLISHED_INDEX,
  FINDING_RESOLVES_INDEX,
  FINDING_OPEN_UNTIL_INDEX,
  ...JUDGE_INDEXES,
];

export const TENANT_CONSTRAINT_NAMES: readonly string[] = [
  "agent_tenant_agent_id",
  "workflow_tenant_workflow_id",
  "tool_tenant_tool_id",
  "outcome_tenant_outcome_id",
  "registry_fence_tenant_agent_id",
  "finding_tenant_finding_id",
  "registry_change_tenant_key",
];

/** A node label the layouts scope, with its key and the constraint of each layout on it. */
interface ScopedLabel {
  readonly label: string;
  readonly key: string;
  /** The one-tenant constraint (an index on the key alone: every node of the label that has one). */
  readonly single: string;
  /** The shared-database constraint (an index on tenant_id and the key: exactly the scoped nodes). */
  readonly composite: string;
  /** Its nodes come from the outcome log and grow without bound; the others are as many as the registry. */
  readonly grows: boolean;
}

/** In the order a refusal prefers to name them: agents, then outcomes, then the rest. */
const SCOPED_LABELS: readonly ScopedLabel[] = [
  { label: "Agent", key: "agent_id", single: "agent_agent_id", composite: "agent_tenant_agent_id", grows: false },
  {
    label: "Outcome",
    key: "outcome_id",
    single: "outcome_outcome_id",
    composite: "outcome_tenant_outcome_id",
    grows: true,
  },
  { label: "Tool", key: "tool_id", single: "tool_tool_id", composite: "tool_tenant_tool_id", grows: false },
  {
    label: "Workflow",
    key: "workflow_id",
    single: "workflow_workflow_id",
    composite: "workflow_tenant_workflow_id",
    grows: false,
  },
  {
    label: "RegistryFence",
    key: "agent_id",
    single: "registry_fence_agent_id",
    composite: "registry_fence_tenant_agent_id",
    grows: false,
  },
];

/** One look for a node of `label` whose scope does not fit the database; a row names its tenant. */
export interface MisscopedProbe {
  readonly label: string;
  readonly cypher: string;
}

/**
 * What start-up and `migrate` read to find a projected node whose scope does not fit the database:
 * on a database several tenants share, a node without a tenant (written while one tenant was served);
 * on one a tenant has to itself, a node with one (written while several shared it, which the
 * single-property constraints and the spec's unscoped statements would merge with another tenant's).
 * `present` is the database's constraint names (SHOW CONSTRAINTS).
 *
 * Every look stops at its first row and none reads the outcomes, which grow without bound, except
 * through an index: it once read every node and sorted them, inside STARTUP_TIMEOUT_MS, on every start
 * (at 10^8 outcomes start-up timed out and the pod crash-looped). Nodes the registry bounds (agents,
 * tools, workflows, fences) are read by label where no index answers.
 * - A node with a tenant is in the composite index on (tenant_id, key), whose first entry in index
 *   order is the lowest tenant's: one index entry answers. Without that index no service has written
 *   scoped outcomes here (a shared service creates it, or with MIGRATE_ON_START=false refuses to start
 *   without it), so outcomes are not looked at.
 * - A node without a tenant is in no index that tells it apart. Outcomes without one were written by a
 *   one-tenant service, which creates or requires the key's own constraint, and a shared `migrate`
 *   drops that constraint once it has found no such node: so outcomes are read only while it exists,
 *   and then (a database last migrated for one tenant) the first outcome read is one without a tenant.
 *   With MIGRATE_ON_START=false (`migrateStep` false) that read is `migrate`'s, not start-up's: the
 *   one-tenant constraints, which forbid two tenants the same id, are reported instead (`stale`).
 */
export function misscopedChecks(
  shared: boolean,
  present: ReadonlySet<string>,
  migrateStep: boolean,
): { readonly probes: readonly MisscopedProbe[]; readonly stale: readonly string[] } {
  const probes: MisscopedProbe[] = [];
  const stale = shared && !migrateStep ? SCOPED_LABELS.map((l) => l.single).filter((name) => present.has(name)) : [];
  for (const { label, key, single, composite, grows } of SCOPED_LABELS) {
    if (shared) {
      if (grows && !(migrateStep && present.has(single))) continue;
      probes.push({ label, cypher: unscopedNode(label) });
    } else {
      if (grows && !present.has(composite)) continue;
      probes.push({ label, cypher: scopedNode(label, key, present.has(composite)) });
    }
  }
  return { probes, stale };
}

/**
 * The lowest tenant of a `label` node that has one. With the composite index (`indexed`) Neo4j scans it
 * in its order and stops at the first entry; the hint keeps it from planning a scan of the key's own
 * index and a sort instead, which it did while the composite index's sample was that of an empty one
 * (cypher/tenant.ts, keyIndex, has the same reason). Without it (registry nodes only) it reads the label.
 */
export const scopedNode = (label: string, key: string, indexed: boolean): string => `
MATCH (n:${label})
${indexed ? `USING INDEX n:${label}(tenant_id, ${key})\n` : ""}WHERE n.tenant_id IS NOT NULL AND n.${key} IS NOT NULL
RETURN n.tenant_id AS tenant
ORDER BY n.tenant_id
LIMIT 1
`;

/** A `label` node without a tenant, if there is one. */
export const unscopedNode = (label: string): string => `
MATCH (n:${label})
WHERE n.tenant_id IS NULL
RETURN null AS tenant
LIMIT 1
`;
