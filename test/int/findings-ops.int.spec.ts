import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ensureTopics, findingsTopicSpec, replicationFor } from "../../src/adapters/kafka/admin.js";
import { readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { registerFindingSchema } from "../../src/adapters/registry/findings-subject.js";
import { LIST_FINDINGS } from "../../src/cypher/findings.js";
import { type Finding, finding } from "../../src/model/findings.js";
import { atSecond, escalation, outcome, snapshot } from "../support/builders.js";
import { runCli } from "../support/cli.js";
import { Harness } from "../support/harness.js";
import { until } from "../support/until.js";

const BEFORE_THE_ESCALATIONS = atSecond(0);
const AFTER_THE_ESCALATIONS = atSecond(200);

/** The finding ids on the findings topic now. */
async function publishedIds(h: Harness): Promise<string[]> {
  const decoding: Promise<Finding>[] = [];
  await readTopicsToEnd(h.kafka, [h.names.findings], (record) => {
    decoding.push(h.registry.decode(record.value as Buffer));
  });
  return (await Promise.all(decoding)).map((f) => f.finding_id);
}

/** Operating the findings outbox on real servers: its schema subject, and who publishes what. */
describe("governance findings, operated", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it("the findings subject is ours: run registers it when missing whatever REGISTER_SCHEMAS says, and keeps one registered before as it is", async () => {
    const h = await Harness.create("findings-subject");
    harness = h;
    await h.clearGraph();
    const versionsOf = (subject: string) =>
      fetch(`${h.config.registry.url}/subjects/${encodeURIComponent(subject)}/versions`).then(async (r) =>
        r.status === 200 ? ((await r.json()) as number[]) : r.status,
      );

    // Missing, with REGISTER_SCHEMAS=false (which now concerns only the producers' subjects): registered.
    const missing = `findings-${randomUUID().slice(0, 8)}`;
    expect(await versionsOf(`${missing}-value`)).toBe(404);
    await h.startProjector({
      TOPIC_GOVERNANCE_FINDINGS: missing,
      REGISTER_SCHEMAS: "false",
      STARTUP_TIMEOUT_MS: "15000",
    });
    expect(await versionsOf(`${missing}-value`)).toEqual([1]);
    await h.stopProjectors();

    // Registered beforehand (as `schemas` does): the service starts and adds no version.
    const registered = `findings-${randomUUID().slice(0, 8)}`;
    const id = await registerFindingSchema(h.config.registry, registered);
    await h.startProjector({
      TOPIC_GOVERNANCE_FINDINGS: registered,
      REGISTER_SCHEMAS: "false",
      STARTUP_TIMEOUT_MS: "15000",
    });
    expect(await versionsOf(`${registered}-value`)).toEqual([1]);
    expect(id).toBeGreaterThan(0);
  });

  it("REGISTER_SCHEMAS=true registers the findings schema itself", async () => {
    const h = await Harness.create("findings-subject-register");
    harness = h;
    await h.clearGraph();
    const topic = `findings-${randomUUID().slice(0, 8)}`;
    await h.startProjector({ TOPIC_GOVERNANCE_FINDINGS: topic, REGISTER_SCHEMAS: "true" });
    const listed = await fetch(`${h.config.registry.url}/subjects/${encodeURIComponent(`${topic}-value`)}/versions`);
    expect(listed.status).toBe(200);
  });

  it("FINDINGS_ENABLED=false: starts without the findings subject or topic, projects the escalation, records no finding", async () => {
    const h = await Harness.create("findings-disabled");
    harness = h;
    await h.clearGraph();
    // Neither registered nor created: a deployment that publishes no findings needs neither.
    const topic = `findings-${randomUUID().slice(0, 8)}`;
    await h.startProjector({ TOPIC_GOVERNANCE_FINDINGS: topic, REGISTER_SCHEMAS: "false", FINDINGS_ENABLED: "false" });
    const [A, B] = ["fd-agt-001", "fd-agt-002"];
    await h.publish([
      snapshot(A, { escalation_path: [] }),
      snapshot(B, { escalation_path: [] }),
      outcome("fd-o-a", A),
      outcome("fd-o-b", B),
      escalation("fd-o-a", "fd-o-b", 100),
    ]);
    await h.waitForCaughtUp();
    // The registry then declares the edge: no resolution either.
    await h.publish([snapshot(A, { registry_version: 2, escalation_path: [B] })]);
    await h.waitForCaughtUp();

    const edges = await h
      .graph()
      .read(
        h.config.neo4j.database,
        "MATCH (:Agent {agent_id: $a})-[e:CAN_ESCALATE_TO]->(:Agent {agent_id: $b}) RETURN e.observed_count AS observed, e.declared AS declared",
        { a: A, b: B },
      );
    expect(edges).toEqual([{ observed: 1, declared: true }]);
    expect(await h.graph().read(h.config.neo4j.database, LIST_FINDINGS, { tenant: null, open: false })).toEqual([]);
    expect(await h.admin.listTopics()).not.toContain(topic);
    const subject = await fetch(`${h.config.registry.url}/subjects/${encodeURIComponent(`${topic}-value`)}/versions`);
    expect(subject.status).toBe(404);
  });

  it("reconcile --repair publishes the resolution it records, before it returns", { timeout: 240_000 }, async () => {
    const h = await Harness.create("findings-repair");
    harness = h;
    await h.clearGraph();
    const [B, C] = ["rp-agt-002", "rp-agt-003"];
    const opened = finding("default", "undeclared-escalation", B, C);
    const resolved = finding("default", "undeclared-escalation-resolved", B, C);
    await h.startProjector();
    await h.publish([
      snapshot(B, { escalation_path: [], occurred_at: BEFORE_THE_ESCALATIONS }),
      snapshot(C, { escalation_path: [], occurred_at: BEFORE_THE_ESCALATIONS }),
      outcome("rp-o-b", B),
      outcome("rp-o-c", C),
      escalation("rp-o-b", "rp-o-c", 100),
    ]);
    await h.waitForCaughtUp();
    await until("the finding published", async () => (await publishedIds(h)).includes(opened.finding_id));
    // The registry declares B→C while no instance runs: the graph drifts, and only a repair applies it.
    await h.stopProjectors();
    // Declared after the escalation (observed at second 100), so it resolves the finding.
    await h.publish([snapshot(B, { registry_version: 2, escalation_path: [C], occurred_at: AFTER_THE_ESCALATIONS })]);

    const repair = await runCli(h.env, ["reconcile", "--repair"], 90_000);
    expect(repair.code, repair.output).toBe(0);
    expect(repair.stdout).toContain("repaired 1 agent(s)");
    // Right after the command, no service running: the resolution is on the topic and marked published.
    expect(await publishedIds(h)).toContain(resolved.finding_id);
    expect(repair.stdout).toContain("published 1 finding(s)");
    const inGraph = await h.graph().read(h.config.neo4j.database, LIST_FINDINGS, { tenant: null, open: false });
    expect(inGraph.map((f) => [f.finding_id, f.published]).sort()).toEqual(
      [
        [opened.finding_id, true],
        [resolved.finding_id, true],
      ].sort(),
    );
  });

  it("agp_findings_unpublished counts what waits in the outbox: the findings while the topic is away, 0 once published", async () => {
    const h = await Harness.create("findings-unpublished");
    harness = h;
    await h.clearGraph();
    // No findings topic: the transaction records the findings, publishing them fails until it exists.
    await h.admin.deleteTopics({ topics: [h.names.findings] });
    const service = await h.startProjector({ CREATE_TOPICS_ON_START: "false" });
    const gauge = () => service.metrics.registry.getSingleMetricAsString("agp_findings_unpublished");
    await h.publish([
      snapshot("up-agt-001", { escalation_path: [] }),
      snapshot("up-agt-002", { escalation_path: [] }),
      outcome("up-o-1", "up-agt-001"),
      outcome("up-o-2", "up-agt-002"),
      escalation("up-o-1", "up-o-2", 100),
      escalation("up-o-2", "up-o-1", 101),
    ]);
    await h.waitForCaughtUp();
    await until("two findings counted as unpublished", async () =>
      (await gauge()).includes('agp_findings_unpublished{tenant="default"} 2'),
    );

    await ensureTopics(h.admin, [
      findingsTopicSpec(h.names, { partitions: 1, ...(await replicationFor(h.admin, undefined)) }),
    ]);
    await until("the findings published and the gauge back to 0", async () =>
      (await gauge()).includes('agp_findings_unpublished{tenant="default"} 0'),
    );
    expect(await publishedIds(h)).toHaveLength(2);
  });
});
