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
  /** Longest id (`*_id` fields, escalation path entries): ids are index keys, and Neo4j bounds those. */
  readonly maxIdLength: number;
  /** Longest other text (names, status, domain, …). */
  readonly maxTextLength: number;
}

/** The rules for a deployment: the tenants it serves and its configured limits. */
export function validationRules(
  tenants: readonly { readonly tenantId: string }[],
  limits: Omit<ValidationRules, "servedTenants">,
): ValidationRules {
  return { servedTenants: new Set(tenants.map((route) => route.tenantId)), ...limits };
}

type Decoded = Record<string, unknown>;

/**
 * Avro decoding through our reader schema already guarantees field presence and types; these checks
 * cover what a schema cannot say: non-empty ids, the agent-id convention, served tenants, list sizes,
 * and lengths (an id longer than Neo4j's index entry limit would fail every transaction it is in).
 */
export function validateRegistrySnapshot(value: Decoded, rules: ValidationRules): RegistrySnapshot | Rejection {
  return withinLengths(checkRegistrySnapshot(value, rules), rules);
}

function checkRegistrySnapshot(value: Decoded, rules: ValidationRules): RegistrySnapshot | Rejection {
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
    return new Rejection("malformed-id", `tombstone key ${JSON.stringify(key?.slice(0, 200))} is not an agent id`);
  }
  const registryVersion = version === undefined || !/^[0-9]+$/.test(version) ? Number.NaN : Number(version);
  if (!Number.isSafeInteger(registryVersion)) {
    return new Rejection(
      "invalid-field",
      `a tombstone needs a registry_version header with a non-negative integer (got ${JSON.stringify(version ?? null)})`,
    );
  }
  return withinLengths(
    { kind: "registry-tombstone", tenant_id: tenantId, agent_id: parsed.agentId, registry_version: registryVersion },
    rules,
  );
}

export function validateOutcomeCreated(value: Decoded, rules: ValidationRules): OutcomeCreated | Rejection {
  return withinLengths(checkOutcomeCreated(value, rules), rules);
}

function checkOutcomeCreated(value: Decoded, rules: ValidationRules): OutcomeCreated | Rejection {
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
  return withinLengths(checkEscalationEdge(value, rules), rules);
}

function checkEscalationEdge(value: Decoded, rules: ValidationRules): EscalationEdge | Rejection {
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

/**
 * Every string of a valid event within its limit: ids (`*_id` fields and escalation path entries)
 * within maxIdLength, other text within maxTextLength. The first offender names the rejection.
 */
function withinLengths<E extends object>(event: E | Rejection, rules: ValidationRules): E | Rejection {
  if (event instanceof Rejection) return event;
  const offender = firstTooLong(event, false, rules);
  if (!offender) return event;
  const { path, length, limit, key } = offender;
  const where = path.map((step, i) => (typeof step === "number" ? `[${step}]` : i === 0 ? step : `.${step}`)).join("");
  return new Rejection("value-too-long", `${where} has ${length} characters, over ${key} (${limit})`);
}

interface TooLong {
  /** Where the string sits, outermost first: field names and array indexes. */
  readonly path: (string | number)[];
  readonly length: number;
  readonly limit: number;
  readonly key: string;
}

/**
 * The first string over its limit; its path is built on the way out, so a valid event builds none.
 * It runs over every field of every record, so a valid one allocates nothing here: no key list, no
 * pair for the limit.
 */
function firstTooLong(value: unknown, isId: boolean, rules: ValidationRules): TooLong | undefined {
  if (typeof value === "string") {
    const limit = isId ? rules.maxIdLength : rules.maxTextLength;
    if (value.length <= limit) return undefined;
    return { path: [], length: value.length, limit, key: isId ? "MAX_ID_LENGTH" : "MAX_TEXT_LENGTH" };
  }
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = firstTooLong(value[index], isId, rules);
      if (found) {
        found.path.unshift(index);
        return found;
      }
    }
    return undefined;
  }
  if (value !== null && typeof value === "object") {
    for (const field in value) {
      if (!Object.hasOwn(value, field)) continue;
      const itemIsId = field.endsWith("_id") || field === "escalation_path";
      const found = firstTooLong((value as Record<string, unknown>)[field], itemIsId, rules);
      if (found) {
        found.path.unshift(field);
        return found;
      }
    }
  }
  return undefined;
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
