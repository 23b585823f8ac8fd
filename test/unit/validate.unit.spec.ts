import { describe, expect, it } from "vitest";
import { Rejection } from "../../src/model/fate.js";
import {
  type ValidationRules,
  validateEscalationEdge,
  validateOutcomeCreated,
  validateRegistrySnapshot,
  validateRegistryTombstone,
  validationRules,
} from "../../src/model/validate.js";

// What the Avro reader schema hands validation: every field present and of its type. These checks cover
// what a schema cannot say (see validate.ts): non-empty ids, the agent-id convention, served tenants, list
// sizes and lengths. Tombstone tenant and version rules are covered in fencing-inputs.unit.spec.ts.

const rules = (overrides: Partial<ValidationRules> = {}): ValidationRules => ({
  ...validationRules([{ tenantId: "acme" }, { tenantId: "globex" }], {
    maxListLength: 3,
    maxIdLength: 20,
    maxTextLength: 30,
  }),
  ...overrides,
});

const registryValue = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  event_id: "evt-1",
  tenant_id: "acme",
  registry_version: 4,
  occurred_at: 1_700_000_000_000,
  agent_id: "fin-agt-001",
  name: "Invoice checker",
  family: "fin",
  owner: null,
  decision_scope: "payments",
  status: "active",
  tools: [{ tool_id: "tl-1", name: "Ledger" }],
  owned_workflows: [{ workflow_id: "wf-1", name: "Close", domain: "finance", version: "2" }],
  escalation_path: ["os-agt-004", "human operator"],
  ...overrides,
});

const outcomeValue = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  event_id: "evt-2",
  tenant_id: "acme",
  outcome_id: "out-1",
  agent_id: "fin-agt-001",
  status: "succeeded",
  correlation_id: null,
  created_at: 1_700_000_000_000,
  ...overrides,
});

const edgeValue = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  event_id: "evt-3",
  tenant_id: "globex",
  source_outcome_id: "out-1",
  target_outcome_id: "out-2",
  observed_at: 1_700_000_000_000,
  ...overrides,
});

function rejection(result: unknown): { reason: string; message: string } {
  expect(result).toBeInstanceOf(Rejection);
  const { reason, message } = result as Rejection;
  return { reason, message };
}

describe("validationRules", () => {
  it("serves exactly the configured tenants and carries the limits", () => {
    const built = validationRules([{ tenantId: "acme" }, { tenantId: "acme" }, { tenantId: "globex" }], {
      maxListLength: 7,
      maxIdLength: 256,
      maxTextLength: 4096,
    });
    expect([...built.servedTenants].sort()).toEqual(["acme", "globex"]);
    expect(built).toMatchObject({ maxListLength: 7, maxIdLength: 256, maxTextLength: 4096 });
  });
});

describe("validateRegistrySnapshot (§3.1, §3.2)", () => {
  it("accepts a valid snapshot and keeps every field; human terminals stay in the path (§3.2 filters them)", () => {
    expect(validateRegistrySnapshot(registryValue(), rules())).toEqual({
      kind: "registry-snapshot",
      event_id: "evt-1",
      tenant_id: "acme",
      registry_version: 4,
      occurred_at: 1_700_000_000_000,
      agent_id: "fin-agt-001",
      name: "Invoice checker",
      family: "fin",
      owner: null,
      decision_scope: "payments",
      status: "active",
      tools: [{ tool_id: "tl-1", name: "Ledger" }],
      owned_workflows: [{ workflow_id: "wf-1", name: "Close", domain: "finance", version: "2" }],
      escalation_path: ["os-agt-004", "human operator"],
    });
  });

  it("keeps a null escalation path null and an empty one empty", () => {
    expect(validateRegistrySnapshot(registryValue({ escalation_path: null }), rules())).toMatchObject({
      escalation_path: null,
    });
    expect(validateRegistrySnapshot(registryValue({ escalation_path: [] }), rules())).toMatchObject({
      escalation_path: [],
    });
  });

  it("reads absent optional text as null", () => {
    const value = registryValue();
    delete value.family;
    delete value.decision_scope;
    expect(validateRegistrySnapshot(value, rules())).toMatchObject({ family: null, decision_scope: null });
  });

  it("a tool or workflow named twice counts once, the last entry's properties winning (§3.1 MERGE by id)", () => {
    const result = validateRegistrySnapshot(
      registryValue({
        tools: [
          { tool_id: "tl-1", name: "Old" },
          { tool_id: "tl-2", name: "Other" },
          { tool_id: "tl-1", name: "New" },
        ],
        owned_workflows: [
          { workflow_id: "wf-1", name: "A", domain: "d", version: "1" },
          { workflow_id: "wf-1", name: "B", domain: "d", version: "2" },
        ],
      }),
      rules(),
    );
    expect(result).toMatchObject({
      tools: [
        { tool_id: "tl-2", name: "Other" },
        { tool_id: "tl-1", name: "New" },
      ],
      owned_workflows: [{ workflow_id: "wf-1", name: "B", domain: "d", version: "2" }],
    });
  });

  it("rejects a tenant not served here (unserved-tenant)", () => {
    expect(rejection(validateRegistrySnapshot(registryValue({ tenant_id: "initech" }), rules()))).toEqual({
      reason: "unserved-tenant",
      message: 'tenant "initech" is not served here',
    });
  });

  it("rejects an empty event_id (invalid-field)", () => {
    expect(rejection(validateRegistrySnapshot(registryValue({ event_id: "" }), rules()))).toEqual({
      reason: "invalid-field",
      message: "event_id is empty",
    });
  });

  it("checks the tenant before anything else", () => {
    expect(
      rejection(validateRegistrySnapshot(registryValue({ tenant_id: "initech", agent_id: "nope" }), rules())).reason,
    ).toBe("unserved-tenant");
  });

  it.each(["fin-agt-", "fin-001", "agt-001", "", "fin-agt-01a"])(
    "rejects agent_id %j that does not follow <prefix>-agt-NNN (malformed-id)",
    (agentId) => {
      const { reason, message } = rejection(validateRegistrySnapshot(registryValue({ agent_id: agentId }), rules()));
      expect(reason).toBe("malformed-id");
      expect(message).toContain("<prefix>-agt-NNN");
    },
  );

  it.each([-1, 1.5, Number.NaN, 2 ** 53])("rejects registry_version %s (invalid-field)", (version) => {
    const { reason, message } = rejection(
      validateRegistrySnapshot(registryValue({ registry_version: version }), rules()),
    );
    expect(reason).toBe("invalid-field");
    expect(message).toContain("is not a non-negative integer");
  });

  it("accepts registry_version 0", () => {
    expect(validateRegistrySnapshot(registryValue({ registry_version: 0 }), rules())).toMatchObject({
      registry_version: 0,
    });
  });

  it.each([
    ["tools", { tool_id: "t", name: "n" }],
    ["owned_workflows", { workflow_id: "w", name: "n", domain: "d", version: "1" }],
    ["escalation_path", "os-agt-004"],
  ])("rejects %s over MAX_LIST_LENGTH (list-too-long); at the limit it passes", (field, entry) => {
    const atLimit = [0, 1, 2].map((i) =>
      typeof entry === "string"
        ? `os-agt-00${i}`
        : { ...entry, [field === "tools" ? "tool_id" : "workflow_id"]: `${i}` },
    );
    expect(validateRegistrySnapshot(registryValue({ [field]: atLimit }), rules())).not.toBeInstanceOf(Rejection);
    const over = [...atLimit, typeof entry === "string" ? "os-agt-009" : entry];
    expect(rejection(validateRegistrySnapshot(registryValue({ [field]: over }), rules()))).toEqual({
      reason: "list-too-long",
      message: `${field} has 4 entries, over the limit of 3`,
    });
  });

  it("rejects an empty tool_id or workflow_id (invalid-field)", () => {
    expect(
      rejection(validateRegistrySnapshot(registryValue({ tools: [{ tool_id: "", name: "x" }] }), rules())),
    ).toEqual({ reason: "invalid-field", message: "a tools entry has an empty tool_id" });
    expect(
      rejection(
        validateRegistrySnapshot(
          registryValue({ owned_workflows: [{ workflow_id: "", name: "x", domain: "d", version: "1" }] }),
          rules(),
        ),
      ),
    ).toEqual({ reason: "invalid-field", message: "an owned_workflows entry has an empty workflow_id" });
  });

  it("bounds ids by MAX_ID_LENGTH: agent_id, nested tool_id/workflow_id and escalation path entries", () => {
    const id20 = `${"f".repeat(14)}-agt-1`; // 20 characters: at the limit
    expect(id20).toHaveLength(20);
    expect(validateRegistrySnapshot(registryValue({ agent_id: id20 }), rules())).not.toBeInstanceOf(Rejection);
    const id21 = `${"f".repeat(15)}-agt-1`;
    expect(rejection(validateRegistrySnapshot(registryValue({ agent_id: id21 }), rules()))).toEqual({
      reason: "value-too-long",
      message: "agent_id has 21 characters, over MAX_ID_LENGTH (20)",
    });
    expect(
      rejection(validateRegistrySnapshot(registryValue({ tools: [{ tool_id: "t".repeat(21), name: "x" }] }), rules())),
    ).toEqual({ reason: "value-too-long", message: "tools[0].tool_id has 21 characters, over MAX_ID_LENGTH (20)" });
    expect(
      rejection(
        validateRegistrySnapshot(
          registryValue({ owned_workflows: [{ workflow_id: "w".repeat(21), name: "x", domain: "d", version: "1" }] }),
          rules(),
        ),
      ),
    ).toEqual({
      reason: "value-too-long",
      message: "owned_workflows[0].workflow_id has 21 characters, over MAX_ID_LENGTH (20)",
    });
    // An escalation path entry is an id even when it is a human terminal.
    expect(
      rejection(validateRegistrySnapshot(registryValue({ escalation_path: ["os-agt-004", "h".repeat(21)] }), rules())),
    ).toEqual({ reason: "value-too-long", message: "escalation_path[1] has 21 characters, over MAX_ID_LENGTH (20)" });
  });

  it("bounds other text by MAX_TEXT_LENGTH: name, status, nested tool names and workflow domains", () => {
    expect(validateRegistrySnapshot(registryValue({ name: "n".repeat(30) }), rules())).not.toBeInstanceOf(Rejection);
    expect(rejection(validateRegistrySnapshot(registryValue({ name: "n".repeat(31) }), rules()))).toEqual({
      reason: "value-too-long",
      message: "name has 31 characters, over MAX_TEXT_LENGTH (30)",
    });
    // Text longer than an id but within the text limit is fine: the two limits are separate.
    expect(validateRegistrySnapshot(registryValue({ status: "s".repeat(25) }), rules())).not.toBeInstanceOf(Rejection);
    expect(
      rejection(validateRegistrySnapshot(registryValue({ tools: [{ tool_id: "t", name: "n".repeat(31) }] }), rules())),
    ).toEqual({ reason: "value-too-long", message: "tools[0].name has 31 characters, over MAX_TEXT_LENGTH (30)" });
    expect(
      rejection(
        validateRegistrySnapshot(
          registryValue({ owned_workflows: [{ workflow_id: "w", name: "x", domain: "d".repeat(31), version: "1" }] }),
          rules(),
        ),
      ),
    ).toEqual({
      reason: "value-too-long",
      message: "owned_workflows[0].domain has 31 characters, over MAX_TEXT_LENGTH (30)",
    });
  });

  it("names the first offender when several values are too long", () => {
    expect(
      rejection(validateRegistrySnapshot(registryValue({ event_id: "e".repeat(21), name: "n".repeat(31) }), rules()))
        .message,
    ).toBe("event_id has 21 characters, over MAX_ID_LENGTH (20)");
  });
});

describe("validateRegistryTombstone", () => {
  it("rejects a tombstone whose tenant is not served (unserved-tenant)", () => {
    expect(rejection(validateRegistryTombstone("initech/fin-agt-001", undefined, "3", rules()))).toEqual({
      reason: "unserved-tenant",
      message: 'tenant "initech" is not served here',
    });
  });

  it("rejects a key that is not an agent id, or no key at all (malformed-id)", () => {
    expect(rejection(validateRegistryTombstone("acme/not-an-agent", undefined, "3", rules())).reason).toBe(
      "malformed-id",
    );
    const one = rules({ servedTenants: new Set(["acme"]) });
    expect(rejection(validateRegistryTombstone(null, undefined, "3", one)).reason).toBe("malformed-id");
  });

  it("rejects a version header that is not a plain non-negative integer (invalid-field)", () => {
    for (const version of ["-1", "1.0", " 3", "9007199254740993"]) {
      expect(rejection(validateRegistryTombstone("acme/fin-agt-001", undefined, version, rules())).reason).toBe(
        "invalid-field",
      );
    }
  });

  it("bounds the agent id from the key by MAX_ID_LENGTH (value-too-long)", () => {
    expect(rejection(validateRegistryTombstone(`acme/${"f".repeat(15)}-agt-1`, undefined, "3", rules()))).toEqual({
      reason: "value-too-long",
      message: "agent_id has 21 characters, over MAX_ID_LENGTH (20)",
    });
  });

  it("accepts version 0 from the header", () => {
    expect(validateRegistryTombstone("globex/fin-agt-001", "globex", "0", rules())).toEqual({
      kind: "registry-tombstone",
      tenant_id: "globex",
      agent_id: "fin-agt-001",
      registry_version: 0,
    });
  });
});

describe("validateOutcomeCreated (§3.3)", () => {
  it("accepts a valid outcome", () => {
    expect(validateOutcomeCreated(outcomeValue({ correlation_id: "c-1" }), rules())).toEqual({
      kind: "outcome-created",
      event_id: "evt-2",
      tenant_id: "acme",
      outcome_id: "out-1",
      agent_id: "fin-agt-001",
      status: "succeeded",
      correlation_id: "c-1",
      created_at: 1_700_000_000_000,
    });
  });

  it("rejects an unserved tenant, an empty event_id, an empty outcome_id and a malformed agent_id", () => {
    expect(rejection(validateOutcomeCreated(outcomeValue({ tenant_id: "initech" }), rules())).reason).toBe(
      "unserved-tenant",
    );
    expect(rejection(validateOutcomeCreated(outcomeValue({ event_id: "" }), rules()))).toEqual({
      reason: "invalid-field",
      message: "event_id is empty",
    });
    expect(rejection(validateOutcomeCreated(outcomeValue({ outcome_id: "" }), rules()))).toEqual({
      reason: "invalid-field",
      message: "outcome_id is empty",
    });
    expect(rejection(validateOutcomeCreated(outcomeValue({ agent_id: "human operator" }), rules()))).toEqual({
      reason: "malformed-id",
      message: 'agent_id "human operator" does not follow <prefix>-agt-NNN',
    });
  });

  it("bounds outcome_id and correlation_id by MAX_ID_LENGTH and status by MAX_TEXT_LENGTH", () => {
    expect(rejection(validateOutcomeCreated(outcomeValue({ outcome_id: "o".repeat(21) }), rules())).message).toBe(
      "outcome_id has 21 characters, over MAX_ID_LENGTH (20)",
    );
    expect(rejection(validateOutcomeCreated(outcomeValue({ correlation_id: "c".repeat(21) }), rules())).message).toBe(
      "correlation_id has 21 characters, over MAX_ID_LENGTH (20)",
    );
    expect(rejection(validateOutcomeCreated(outcomeValue({ status: "s".repeat(31) }), rules())).message).toBe(
      "status has 31 characters, over MAX_TEXT_LENGTH (30)",
    );
  });
});

describe("validateEscalationEdge (§3.4)", () => {
  it("accepts a valid edge in any served tenant", () => {
    expect(validateEscalationEdge(edgeValue(), rules())).toEqual({
      kind: "escalation-edge",
      event_id: "evt-3",
      tenant_id: "globex",
      source_outcome_id: "out-1",
      target_outcome_id: "out-2",
      observed_at: 1_700_000_000_000,
    });
  });

  it("rejects an unserved tenant, an empty event_id, an empty end and a self-escalation", () => {
    expect(rejection(validateEscalationEdge(edgeValue({ tenant_id: "initech" }), rules())).reason).toBe(
      "unserved-tenant",
    );
    expect(rejection(validateEscalationEdge(edgeValue({ event_id: "" }), rules())).message).toBe("event_id is empty");
    for (const end of [{ source_outcome_id: "" }, { target_outcome_id: "" }]) {
      expect(rejection(validateEscalationEdge(edgeValue(end), rules()))).toEqual({
        reason: "invalid-field",
        message: "source_outcome_id and target_outcome_id must be non-empty",
      });
    }
    expect(
      rejection(validateEscalationEdge(edgeValue({ source_outcome_id: "out-1", target_outcome_id: "out-1" }), rules())),
    ).toEqual({ reason: "invalid-field", message: "outcome out-1 cannot escalate to itself" });
  });

  it("bounds both outcome ids by MAX_ID_LENGTH", () => {
    expect(rejection(validateEscalationEdge(edgeValue({ target_outcome_id: "o".repeat(21) }), rules())).message).toBe(
      "target_outcome_id has 21 characters, over MAX_ID_LENGTH (20)",
    );
  });
});
