import { scopedKey } from "./tenant.js";

/**
 * §4 Example queries: the governance questions users run on the projected graph. On a database
 * several tenants share, the agents a query starts from are the tenant's (`$tenant_id`); every edge
 * it follows stays inside that tenant, since the projection never links two tenants' nodes.
 */
const tenantOnly = (scoped: boolean): string => (scoped ? " {tenant_id: $tenant_id}" : "");

/** What has this agent ever produced. */
export const agentProduced = (scoped: boolean): string => `
MATCH (a:Agent {${scopedKey(scoped, "$tenant_id")}agent_id: $agent_id})-[:PRODUCED]->(o:Outcome)
RETURN o.outcome_id AS outcome_id, o.status AS status, o.correlation_id AS correlation_id
ORDER BY o.created_at DESC
LIMIT toInteger($limit)
`;

/** Undeclared escalations: an escalation happened that the registry never authorised. */
export const undeclaredEscalations = (scoped: boolean): string => `
MATCH (a:Agent${tenantOnly(scoped)})-[r:CAN_ESCALATE_TO]->(b:Agent)
WHERE r.declared = false AND r.observed_count > 0
RETURN a.agent_id AS from_agent, b.agent_id AS to_agent, r.observed_count AS observed_count,
       r.last_observed_at AS last_observed_at
ORDER BY from_agent, to_agent
`;

/** Declared but never exercised: a registered escalation path with no runtime record. */
export const declaredNeverExercised = (scoped: boolean): string => `
MATCH (a:Agent${tenantOnly(scoped)})-[r:CAN_ESCALATE_TO]->(b:Agent)
WHERE r.declared = true AND r.observed_count = 0
RETURN a.agent_id AS from_agent, b.agent_id AS to_agent
ORDER BY from_agent, to_agent
`;

/**
 * Whether agent `a` reaches a control terminal (`$terminal_ids`) over declared edges only. The same
 * test decides §4's question below and the terminal-unreachable findings (cypher/terminal-reach.ts).
 * The far end has no label (CAN_ESCALATE_TO only ever ends at an Agent): with `t:Agent`, a plan made
 * while the graph held agents and few edges scanned every Agent's index entry per row and expanded
 * into `a`, instead of walking down from `a` (test/int/query-plans).
 */
export const reachesTerminal = (a: string): string => `EXISTS {
    MATCH (${a})-[:CAN_ESCALATE_TO*1.. {declared: true}]->(t)
    WHERE t.agent_id IN $terminal_ids
  }`;

/**
 * Agents without a reachable control terminal over declared edges only. The outer guard excludes the
 * terminals themselves: `*1..` needs a hop, so a terminal could never reach itself.
 */
export const agentsWithoutReachableTerminal = (scoped: boolean): string => `
MATCH (a:Agent${tenantOnly(scoped)})
WHERE NOT a.agent_id IN $terminal_ids
  AND NOT ${reachesTerminal("a")}
RETURN a.agent_id AS agent_without_reachable_terminal
ORDER BY agent_without_reachable_terminal
`;

/** The queries for a database of one tenant, as the spec writes them. */
export const AGENT_PRODUCED = agentProduced(false);
export const UNDECLARED_ESCALATIONS = undeclaredEscalations(false);
export const DECLARED_NEVER_EXERCISED = declaredNeverExercised(false);
export const AGENTS_WITHOUT_REACHABLE_TERMINAL = agentsWithoutReachableTerminal(false);
