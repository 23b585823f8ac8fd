import { describe, expect, it } from "vitest";
import { parseEventFile } from "../../src/cli/produce.js";

describe("produce: parsing an event file", () => {
  it("reads NDJSON with a type per line, ISO timestamps and tombstones", () => {
    const text = [
      JSON.stringify({
        type: "registry-mutation",
        event_id: "e1",
        tenant_id: "default",
        registry_version: 1,
        occurred_at: "2026-01-01T00:00:00Z",
        agent_id: "fin-agt-001",
        name: "A",
        status: "active",
        tools: [],
        owned_workflows: [],
        escalation_path: ["human operator"],
      }),
      JSON.stringify({
        type: "outcome-created",
        event_id: "e2",
        tenant_id: "default",
        outcome_id: "o1",
        agent_id: "fin-agt-001",
        status: "ok",
        created_at: 1767225600000,
      }),
      JSON.stringify({ type: "registry-mutation", agent_id: "fin-agt-002", registry_version: 3, tombstone: true }),
    ].join("\n");
    const events = parseEventFile(text);
    expect(events.map((e) => e.kind)).toEqual(["registry-snapshot", "outcome-created", "registry-tombstone"]);
    expect(events[0]).toMatchObject({
      occurred_at: Date.UTC(2026, 0, 1),
      family: null,
      escalation_path: ["human operator"],
    });
    expect(events[1]).toMatchObject({ correlation_id: null });
  });

  it("publishes nothing when any event fails its schema, and says which", () => {
    const text = [
      JSON.stringify({
        type: "outcome-created",
        event_id: "e2",
        tenant_id: "default",
        outcome_id: "o1",
        agent_id: "fin-agt-001",
        status: "ok",
        created_at: 1,
      }),
      JSON.stringify({
        type: "outcome-created",
        event_id: "e3",
        tenant_id: "default",
        outcome_id: 42,
        agent_id: "fin-agt-001",
        status: "ok",
        created_at: 1,
      }),
      JSON.stringify({ type: "weather-report" }),
    ].join("\n");
    expect(() => parseEventFile(text)).toThrow(
      /#2: invalid outcome-created event at outcome_id[\s\S]*#3: "type" must be one of/,
    );
  });

  it("accepts a JSON array too", () => {
    const events = parseEventFile(
      JSON.stringify([
        {
          type: "escalation-edge",
          event_id: "e",
          tenant_id: "default",
          source_outcome_id: "a",
          target_outcome_id: "b",
          observed_at: 5,
        },
      ]),
    );
    expect(events).toEqual([
      {
        kind: "escalation-edge",
        event_id: "e",
        tenant_id: "default",
        source_outcome_id: "a",
        target_outcome_id: "b",
        observed_at: 5,
      },
    ]);
  });
});
