import { describe, expect, it } from "vitest";
import { registryChange } from "../../src/model/event-time-findings.js";
import { projectRegistry } from "../../src/projection/registry.js";
import { snapshot, tombstone } from "../support/builders.js";

const A = "hi-agt-001";
const B = "hi-agt-002";
const C = "hi-agt-003";

describe("a registry record's change to its agent's history", () => {
  it("declares the agent ids of its escalation path, not its human terminals", () => {
    const event = snapshot(A, {
      registry_version: 3,
      occurred_at: 1_000,
      escalation_path: [C, "human operator", B, C],
    });
    expect(registryChange(event)).toEqual({
      tenant_id: "default",
      agent_id: A,
      registry_version: 3,
      occurred_at: 1_000,
      declared: [B, C],
      retired: false,
    });
    expect(registryChange(snapshot(A, { escalation_path: null }))?.declared).toEqual([]);
  });

  it("a deregistered snapshot or a tombstone declares nothing; a tombstone takes its Kafka timestamp", () => {
    expect(registryChange(snapshot(A, { status: "deregistered", escalation_path: [B] }))).toMatchObject({
      declared: [],
      retired: true,
    });
    expect(registryChange({ ...tombstone(A, 4), occurred_at: 2_000 })).toEqual({
      tenant_id: "default",
      agent_id: A,
      registry_version: 4,
      occurred_at: 2_000,
      declared: [],
      retired: true,
    });
    expect(registryChange(tombstone(A, 4))).toBeUndefined();
  });
});

describe("the registry plan records the history of every record", () => {
  it("superseded and stale ones too, one row per change, a tombstone winning a tie, in key order", () => {
    const batch = [
      snapshot(B, { registry_version: 5, occurred_at: 50, escalation_path: [A] }),
      snapshot(A, { registry_version: 2, occurred_at: 20, escalation_path: [B] }),
      // Superseded inside the batch (a lower version after a higher one): its change still counts.
      snapshot(A, { registry_version: 1, occurred_at: 10, escalation_path: [C] }),
      { ...tombstone(B, 5), occurred_at: 60 },
      snapshot(B, { registry_version: 5, occurred_at: 50, escalation_path: [A] }),
    ];
    const plan = projectRegistry(batch.map((event, i) => ({ i, event })));
    const history = plan.statements.find((s) => s.name === "registry-history");
    expect(history?.params.rows).toEqual([
      {
        tenant_id: "default",
        agent_id: A,
        registry_version: 1,
        occurred_at: 10,
        declared: [C],
        retired: false,
        deleted: false,
      },
      {
        tenant_id: "default",
        agent_id: A,
        registry_version: 2,
        occurred_at: 20,
        declared: [B],
        retired: false,
        deleted: false,
      },
      {
        tenant_id: "default",
        agent_id: B,
        registry_version: 5,
        occurred_at: 60,
        declared: [],
        retired: true,
        deleted: true,
      },
    ]);
    // The history statement comes last and decides no record's fate.
    expect(plan.statements.at(-1)?.name).toBe("registry-history");
  });
});
