import { randomUUID } from "node:crypto";
import avro from "avsc";
import { afterEach, describe, expect, it } from "vitest";
import { findingRecord } from "../../src/adapters/kafka/finding-publisher.js";
import { listFindings } from "../../src/cli/findings.js";
import { registryHistory } from "../../src/cypher/registry-history.js";
import { registryChange } from "../../src/model/event-time-findings.js";
import type { RegistryEvent } from "../../src/model/events.js";
import { finding } from "../../src/model/findings.js";
import { findingSchema } from "../../src/model/schemas.js";
import { escalation, outcome, snapshot, tombstone } from "../support/builders.js";
import { findingContent, waitForPublished } from "../support/findings.js";
import { Harness } from "../support/harness.js";

const A = "ev-agt-001";
const B = "ev-agt-002";
const C = "ev-agt-003";

const byChange = (
  a?: { agent_id: unknown; registry_version: number },
  b?: { agent_id: unknown; registry_version: number },
) => (`${a?.agent_id}|${a?.registry_version}` < `${b?.agent_id}|${b?.registry_version}` ? -1 : 1);

/** The governance-finding schema as it was before the evidence fields: the first six. */
function todaysSchema(): Record<string, unknown> {
  const schema = findingSchema();
  return { ...schema, fields: (schema.fields as unknown[]).slice(0, 6) };
}

async function registryCall(harness: Harness, method: string, path: string, body?: unknown) {
  const response = await fetch(`${harness.config.registry.url}${path}`, {
    method,
    headers: { "content-type": "application/vnd.schemaregistry.v1+json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${JSON.stringify(json)}`);
  return json;
}

describe("findings carry their evidence; the registry's history is kept (issue 53)", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it("the subject takes the evidence fields under BACKWARD, and a consumer on today's schema reads a new record", async () => {
    harness = await Harness.create("et-compat");
    const h = harness;
    const subject = encodeURIComponent(`et-compat-${randomUUID().slice(0, 8)}-value`);
    const register = async (schema: object) =>
      Number((await registryCall(h, "POST", `/subjects/${subject}/versions`, { schema: JSON.stringify(schema) })).id);
    await register(todaysSchema());
    await registryCall(h, "PUT", `/config/${subject}`, { compatibility: "BACKWARD" });
    const newId = await register(findingSchema());
    const versions = (await registryCall(h, "GET", `/subjects/${subject}/versions`)) as unknown as number[];
    expect(versions).toHaveLength(2);

    const row = {
      ...finding("default", "undeclared-escalation", A, B),
      detected_at: 1_767_225_600_000,
      observed_at: 1_767_225_590_000,
      source_outcome_id: "o-1",
      target_outcome_id: "o-2",
      registry_version: 3,
      registry_occurred_at: 1_767_225_500_000,
      late: false,
    };
    const payload = await h.registry.encode(newId, findingRecord(row));
    // The Confluent frame: a magic byte and the 4-byte schema id, then the Avro body.
    const writer = avro.Type.forSchema(findingSchema() as avro.Schema);
    const reader = avro.Type.forSchema(todaysSchema() as avro.Schema);
    const old = reader.fromBuffer(payload.subarray(5), reader.createResolver(writer)) as Record<string, unknown>;
    expect({ ...old }).toEqual(findingContent(row));
    // And today's records, read with the new schema, get the defaults.
    const oldPayload = reader.toBuffer(findingContent(row));
    const upgraded = writer.fromBuffer(oldPayload, writer.createResolver(reader)) as Record<string, unknown>;
    expect({ ...upgraded }).toMatchObject({ observed_at: null, registry_version: null, detected_at: 0, late: false });
  });

  it("the published record and `findings` show the escalation; every registry record's change is in the graph", async () => {
    harness = await Harness.create("et-evidence", {
      TOPIC_GOVERNANCE_FINDINGS: `findings-${randomUUID().slice(0, 8)}`,
    });
    const h = harness;
    await h.clearGraph();
    await h.startProjector();
    const t0 = Date.UTC(2026, 0, 1, 10, 0);
    const registry: RegistryEvent[] = [
      snapshot(A, { registry_version: 1, occurred_at: t0, escalation_path: [B, "human operator"] }),
      snapshot(B, { registry_version: 1, occurred_at: t0, escalation_path: [] }),
      snapshot(C, { registry_version: 1, occurred_at: t0, escalation_path: [A] }),
      snapshot(A, { registry_version: 2, occurred_at: t0 + 60_000, escalation_path: [] }),
    ];
    const before = Date.now();
    await h.publish([...registry, tombstone(C, 2)]);
    // A lower version arriving late: stale for the graph, still a change of the history.
    const late = snapshot(B, { registry_version: 0, occurred_at: t0 - 60_000, escalation_path: [A] });
    await h.publish([late]);
    const observedAt = t0 + 30_000;
    await h.publish([
      outcome("ev-o1", A),
      outcome("ev-o2", C),
      { ...escalation("ev-o1", "ev-o2"), observed_at: observedAt },
    ]);
    await h.waitForCaughtUp();
    const after = Date.now();

    const expected = finding("default", "undeclared-escalation", A, C);
    const [published] = await waitForPublished(h, [expected.finding_id]);
    expect(published?.value).toEqual(expected);
    expect(published?.record).toMatchObject({
      observed_at: observedAt,
      source_outcome_id: "ev-o1",
      target_outcome_id: "ev-o2",
      late: false,
    });
    expect(Number(published?.record.detected_at)).toBeGreaterThanOrEqual(before);
    const [listed] = await listFindings(h.graph(), h.config.tenants, false);
    expect(listed).toMatchObject({
      finding_id: expected.finding_id,
      observed_at: observedAt,
      source_outcome_id: "ev-o1",
    });

    const history = await h.graph().read(h.config.neo4j.database, registryHistory(false), {
      agents: [A, B, C].map((agent_id) => ({ tenant_id: "default", agent_id })),
    });
    const stored = history
      .map((row) => ({
        tenant_id: row.tenant_id,
        agent_id: row.agent_id,
        registry_version: Number(row.registry_version),
        occurred_at: Number(row.occurred_at),
        declared: row.declared,
        retired: row.retired,
      }))
      .sort(byChange);
    const tomb = stored.find((row) => row.agent_id === C && row.registry_version === 2);
    // A tombstone's time is its Kafka record timestamp.
    expect(tomb?.occurred_at).toBeGreaterThanOrEqual(before - 1_000);
    expect(tomb?.occurred_at).toBeLessThanOrEqual(after);
    const want = [...registry, late, { ...tombstone(C, 2), occurred_at: tomb?.occurred_at }].map((event) =>
      registryChange(event),
    );
    expect(stored).toEqual(want.sort(byChange));
  });
});
