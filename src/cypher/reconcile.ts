/**
 * §5's scheduled-reconciliation candidate reads the registry projection back per agent: properties,
 * tool grants, owned workflows and the targets of declared escalation edges. Only agents the registry
 * projected (they carry a version) are compared; escalation-target placeholders have no registry entry.
 * `$tenant_id` picks one tenant's agents on a database several tenants share; null elsewhere.
 */
export const REGISTRY_PROJECTION_STATE = `
MATCH (a:Agent)
WHERE a.registry_version IS NOT NULL AND ($tenant_id IS NULL OR a.tenant_id = $tenant_id)
RETURN a.agent_id AS agent_id,
       properties(a) AS props,
       [(a)-[:AUTHORIZED_FOR]->(t:Tool) | [t.tool_id, t.name]] AS tools,
       [(a)-[:OWNS_WORKFLOW]->(w:Workflow) | [w.workflow_id, w.name, w.domain, w.version]] AS workflows,
       [(a)-[r:CAN_ESCALATE_TO]->(b:Agent) WHERE r.declared = true | b.agent_id] AS declared
`;
