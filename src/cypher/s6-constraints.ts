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

/**
 * A projected node whose scope does not fit the database: with `$shared`, one without a tenant (written
 * while one tenant was served); without, one with a tenant (written while several shared it, and the
 * single-property constraints and the spec's unscoped statements would merge it with another
 * tenant's). Agents first, then the lowest tenant: the refusal names the same thing on every start.
 */
export const MISSCOPED_NODE = `
MATCH (n)
WHERE (n:Agent OR n:Tool OR n:Workflow OR n:Outcome OR n:RegistryFence) AND (n.tenant_id IS NULL) = $shared
RETURN labels(n) AS labels, n.tenant_id AS tenant
ORDER BY CASE WHEN n:Agent THEN 0 WHEN n:Outcome THEN 1 ELSE 2 END, tenant
LIMIT 1
`;
