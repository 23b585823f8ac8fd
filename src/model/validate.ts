import {
  type EscalationEdge,
  isAgentId,
  type OutcomeCreated,
  type OwnedWorkflow,
  type RegistrySnapshot,
  type RegistryTombstone,
  type ToolGrant,
} from "./events.js";
import { Rejection } from "./fate.js";
import { parseRegistryKey } from "./registry-key.js";

/** What validation needs to know about this deployment. */
export interface ValidationRules {
  readonly servedTenants: ReadonlySet<string>;
  readonly maxListLength: number;
}

type Decoded = Record<string, unknown>;

/**
 * Avro decoding through our reader schema already guarantees field presence and types; these checks
 * cover what a schema cannot say: non-empty ids, the agent-id convention, served tenants, list sizes.
 */
export function validateRegistrySnapshot(value: Decoded, rules: ValidationRules): RegistrySnapshot | Rejection {
  const common = checkCommon(value, rules);
  if (common) return common;
  const agentId = String(value.agent_id);
  if (!isAgentId(agentId))
    return new Rejection("malformed-id", `agent_id "${agentId}" does not follow <prefix>-agt-NNN`);
  const version = Number(value.registry_version);
  if (!Number.isSafeInteger(version) || version < 0) {
    return new Rejection(
      "invalid-field",
      `registry_version ${String(value.registry_version)} is not a non-negative integer`,
    );
  }
  const tools = value.tools as ToolGrant[];
  const workflows = value.owned_workflows as OwnedWorkflow[];
  const path = value.escalation_path as string[] | null;
  for (const [field, list] of [
    ["tools", tools],
    ["owned_workflows", workflows],
    ["escalation_path", path ?? []],
  ] as const) {
    if (list.length > rules.maxListLength) {
      return new Rejection(
        "list-too-long",
        `${field} has ${list.length} entries, over the limit of ${rules.maxListLength}`,
      );
    }
  }
  if (tools.some((tool) => tool.tool_id === ""))
    return new Rejection("invalid-field", "a tools entry has an empty tool_id");
  if (workflows.some((wf) => wf.workflow_id === "")) {
    return new Rejection("invalid-field", "an owned_workflows entry has an empty workflow_id");
  }
  return {
    kind: "registry-snapshot",
    event_id: String(value.event_id),
    tenant_id: String(value.tenant_id),
    registry_version: version,
    occurred_at: Number(value.occurred_at),
    agent_id: agentId,
    name: String(value.name),
    family: nullableString(value.family),
    owner: nullableString(value.owner),
    decision_scope: nullableString(value.decision_scope),
    status: String(value.status),
    // A snapshot naming the same tool or workflow twice means it once; the last entry's properties win.
    tools: lastById(
      tools.map((t) => ({ tool_id: t.tool_id, name: t.name })),
      (t) => t.tool_id,
    ),
    owned_workflows: lastById(
      workflows.map((w) => ({ workflow_id: w.workflow_id, name: w.name, domain: w.domain, version: w.version })),
      (w) => w.workflow_id,
    ),
    escalation_path: path === null ? null : [...path],
  };
}

/**
 * A tombstone carries no value. Its tenant comes from its key (`<tenant_id>/<agent_id>`, see
 * registry-key.ts) or a `tenant_id` header — or, where one tenant is served, is that tenant; one that
 * names no tenant while several are served cannot be placed and is rejected. Its version comes from a
 * `registry_version` header: a tombstone without one cannot be fenced — a late one would deregister an
 * agent registered again since — so it is rejected too.
 */
export function validateRegistryTombstone(
  key: string | null,
  headerTenant: string | undefined,
  version: string | undefined,
  rules: ValidationRules,
): RegistryTombstone | Rejection {
  const parsed = key === null ? undefined : parseRegistryKey(key);
  if (parsed?.tenantId !== undefined && headerTenant !== undefined && parsed.tenantId !== headerTenant) {
    return new Rejection(
      "invalid-field",
      `tombstone key names tenant "${parsed.tenantId}" but its tenant_id header "${headerTenant}"`,
    );
  }
  const only = rules.servedTenants.size === 1 ? [...rules.servedTenants][0] : undefined;
  const tenantId = parsed?.tenantId ?? headerTenant ?? only;
  if (tenantId === undefined) {
    return new Rejection(
      "invalid-field",
      "a tombstone must name its tenant (key <tenant_id>/<agent_id> or a tenant_id header) when several tenants are served",
    );
  }
  if (!rules.servedTenants.has(tenantId))
    return new Rejection("unserved-tenant", `tenant "${tenantId}" is not served here`);
  if (parsed === undefined || !isAgentId(parsed.agentId)) {
    return new Rejection("malformed-id", `tombstone key ${JSON.stringify(key)} is not an agent id`);
  }
  const registryVersion = version === undefined || !/^[0-9]+$/.test(version) ? Number.NaN : Number(version);
  if (!Number.isSafeInteger(registryVersion)) {
    return new Rejection(
      "invalid-field",
      `a tombstone needs a registry_version header with a non-negative integer (got ${JSON.stringify(version ?? null)})`,
    );
  }
  return {
    kind: "registry-tombstone",
    tenant_id: tenantId,
    agent_id: parsed.agentId,
    registry_version: registryVersion,
  };
}

export function validateOutcomeCreated(value: Decoded, rules: ValidationRules): OutcomeCreated | Rejection {
  const common = checkCommon(value, rules);
  if (common) return common;
  const outcomeId = String(value.outcome_id);
  const agentId = String(value.agent_id);
  if (outcomeId === "") return new Rejection("invalid-field", "outcome_id is empty");
  if (!isAgentId(agentId))
    return new Rejection("malformed-id", `agent_id "${agentId}" does not follow <prefix>-agt-NNN`);
  return {
    kind: "outcome-created",
    event_id: String(value.event_id),
    tenant_id: String(value.tenant_id),
    outcome_id: outcomeId,
    agent_id: agentId,
    status: String(value.status),
    correlation_id: nullableString(value.correlation_id),
    created_at: Number(value.created_at),
  };
}

export function validateEscalationEdge(value: Decoded, rules: ValidationRules): EscalationEdge | Rejection {
  const common = checkCommon(value, rules);
  if (common) return common;
  const source = String(value.source_outcome_id);
  const target = String(value.target_outcome_id);
  if (source === "" || target === "")
    return new Rejection("invalid-field", "source_outcome_id and target_outcome_id must be non-empty");
  if (source === target) return new Rejection("invalid-field", `outcome ${source} cannot escalate to itself`);
  return {
    kind: "escalation-edge",
    event_id: String(value.event_id),
    tenant_id: String(value.tenant_id),
    source_outcome_id: source,
    target_outcome_id: target,
    observed_at: Number(value.observed_at),
  };
}

function checkCommon(value: Decoded, rules: ValidationRules): Rejection | undefined {
  const tenant = String(value.tenant_id);
  if (!rules.servedTenants.has(tenant))
    return new Rejection("unserved-tenant", `tenant "${tenant}" is not served here`);
  if (String(value.event_id) === "") return new Rejection("invalid-field", "event_id is empty");
  return undefined;
}

function nullableString(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function lastById<T>(items: readonly T[], id: (item: T) => string): T[] {
  const byId = new Map<string, T>();
  for (const item of items) {
    byId.delete(id(item));
    byId.set(id(item), item);
  }
  return [...byId.values()];
}
