import { describe, expect, it } from "vitest";
import { CONSTRAINT_NAMES, misscopedChecks, TENANT_CONSTRAINT_NAMES } from "../../src/cypher/s6-constraints.js";

const labelsOf = (checks: ReturnType<typeof misscopedChecks>) => checks.probes.map((probe) => probe.label);
const none = new Set<string>();
const single = new Set(CONSTRAINT_NAMES);
const composite = new Set(TENANT_CONSTRAINT_NAMES);
const both = new Set([...CONSTRAINT_NAMES, ...TENANT_CONSTRAINT_NAMES]);

/**
 * Start-up's look for nodes of the other layout never reads the outcomes but through an index (it
 * used to read every node, on every start); test/int/query-plans pins the plans on Neo4j.
 */
describe("misscopedChecks: what start-up and migrate read to refuse a database of the other layout", () => {
  it("one tenant: outcomes only through the composite index, which exists once a shared service ran", () => {
    expect(labelsOf(misscopedChecks(false, single, false))).toEqual(["Agent", "Tool", "Workflow", "RegistryFence"]);
    expect(labelsOf(misscopedChecks(false, both, false))).toEqual([
      "Agent",
      "Outcome",
      "Tool",
      "Workflow",
      "RegistryFence",
    ]);
    expect(labelsOf(misscopedChecks(false, both, true))).toEqual(labelsOf(misscopedChecks(false, both, false)));
    expect(misscopedChecks(false, both, false).stale).toEqual([]);
  });

  it("one tenant: every look is for the lowest tenant of a node with one, in the composite index's order", () => {
    const agent = misscopedChecks(false, both, false).probes[0];
    expect(agent?.cypher).toMatchInlineSnapshot(`
      "
      MATCH (n:Agent)
      USING INDEX n:Agent(tenant_id, agent_id)
      WHERE n.tenant_id IS NOT NULL AND n.agent_id IS NOT NULL
      RETURN n.tenant_id AS tenant
      ORDER BY n.tenant_id
      LIMIT 1
      "
    `);
  });

  it("shared, at start-up: no outcome is read; the one-tenant constraints, if any, are reported instead", () => {
    expect(misscopedChecks(true, composite, false)).toEqual({
      probes: ["Agent", "Tool", "Workflow", "RegistryFence"].map((label) => ({
        label,
        cypher: expect.stringContaining(`MATCH (n:${label})\nWHERE n.tenant_id IS NULL`),
      })),
      stale: [],
    });
    const checks = misscopedChecks(true, both, false);
    expect(labelsOf(checks)).toEqual(["Agent", "Tool", "Workflow", "RegistryFence"]);
    expect(checks.stale).toEqual([
      "agent_agent_id",
      "outcome_outcome_id",
      "tool_tool_id",
      "workflow_workflow_id",
      "registry_fence_agent_id",
    ]);
  });

  it("shared, in migrate: outcomes are read while the one-tenant outcome constraint exists, which migrate then drops", () => {
    expect(labelsOf(misscopedChecks(true, none, true))).toEqual(["Agent", "Tool", "Workflow", "RegistryFence"]);
    expect(labelsOf(misscopedChecks(true, composite, true))).toEqual(["Agent", "Tool", "Workflow", "RegistryFence"]);
    const checks = misscopedChecks(true, single, true);
    expect(labelsOf(checks)).toEqual(["Agent", "Outcome", "Tool", "Workflow", "RegistryFence"]);
    expect(checks.stale).toEqual([]);
  });
});
