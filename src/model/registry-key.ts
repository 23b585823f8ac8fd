/**
 * The registry topic's record key: `<tenant_id>/<agent_id>`. The topic is compacted by key, so a key
 * of the agent id alone would let compaction merge two tenants' agents of one id into one entry.
 * Tenant ids cannot contain "/" (TENANTS allows letters, digits, `.`, `_` and `-`), so the first "/"
 * ends the tenant. A bare `agent_id` key still works where one tenant is served.
 */
export function registryKey(tenantId: string, agentId: string): string {
  return `${tenantId}/${agentId}`;
}

const TENANT_PREFIX = /^([A-Za-z0-9_.-]+)\/(.+)$/;

export function parseRegistryKey(key: string): { tenantId?: string; agentId: string } {
  const match = TENANT_PREFIX.exec(key);
  return match ? { tenantId: match[1] as string, agentId: match[2] as string } : { agentId: key };
}
