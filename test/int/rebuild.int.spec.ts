import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGroupAdmin } from "../../src/adapters/kafka/group-admin.js";
import { historyGaps } from "../../src/adapters/kafka/history.js";
import { createTopicReader, readTopicsToEnd } from "../../src/adapters/kafka/read-topic.js";
import { createAvroDecoder } from "../../src/adapters/registry/schema-registry.js";
import { diffGraphs } from "../../src/model/graph.js";
import { rebuildRegistry } from "../../src/operations/rebuild.js";
import { generateEventLog, SMALL_WORKLOAD } from "../../workload/generate.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * §7's rebuild on topics the broker really expires and compacts: segments roll every half second,
 * outcome and escalation records expire after one, and the registry topic is compacted with its
 * tombstones removed — before the rebuild. The graph after it must equal the graph before, compared
 * as multisets (a duplicate node or relationship is a difference).
 */
describe("rebuild from what lasts, on real servers", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("rebuild");
    await harness.clearGraph();
  });
  afterAll(() => harness?.close());

  it("after retention deleted outcomes and escalations and compaction removed old snapshots and tombstones, the rebuilt graph is identical", async () => {
    const log = generateEventLog(1507, {
      ...SMALL_WORKLOAD,
      editsPerAgent: 2,
      deregisterRatio: 0.4,
      reregisterRatio: 0.4,
      outcomeUpdateRatio: 0.2,
      sharedNodeConflictRatio: 0.3,
    });
    await harness.startProjector();
    for (const phase of [log.registry, log.outcomes, log.escalations]) {
      await harness.publish(phase);
      await harness.waitForCaughtUp();
    }
    const before = await harness.dump();
    expect(diffGraphs(referenceGraph([...log.registry, ...log.outcomes, ...log.escalations]), before)).toEqual([]);
    await harness.stopProjectors();

    // Now let the broker expire and compact. AlterConfigs replaces a topic's whole configuration.
    const registryTopic = harness.names.source["registry-mutation"];
    const expiring = [harness.names.source["outcome-created"], harness.names.source["escalation-edge"]];
    await harness.admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: 2,
          name: registryTopic,
          configEntries: [
            { name: "cleanup.policy", value: "compact" },
            { name: "segment.ms", value: "500" },
            { name: "min.cleanable.dirty.ratio", value: "0.001" },
            { name: "min.compaction.lag.ms", value: "0" },
            { name: "delete.retention.ms", value: "500" },
          ],
        },
        ...expiring.map((name) => ({
          type: 2,
          name,
          configEntries: [
            { name: "cleanup.policy", value: "delete" },
            { name: "segment.ms", value: "500" },
            { name: "retention.ms", value: "1000" },
          ],
        })),
      ],
    });
    const publishedTombstones = log.registry.filter((e) => e.kind === "registry-tombstone").length;
    expect(publishedTombstones).toBeGreaterThan(0);
    const highBefore = new Map<string, string>();
    for (const topic of expiring)
      for (const p of await harness.admin.fetchTopicOffsets(topic)) highBefore.set(`${topic}/${p.partition}`, p.high);

    // Segments roll only when a record arrives after segment.ms, so keep appending exact copies of
    // each stream's last records (idempotent: the graph already holds them) until the broker has
    // deleted everything published before, compacted the registry and dropped tombstones.
    // Registry fillers are copies of agents' latest records: a copy of an older one would become its
    // key's latest value on the compacted topic (what `dlq redrive` avoids) and change the registry.
    const latest = new Map(log.registry.map((event) => [event.agent_id, event]));
    const fillers = [...latest.values()].filter((event) => event.kind === "registry-snapshot").slice(-3);
    const deadline = Date.now() + 200_000;
    let state = "";
    for (;;) {
      await sleep(1500);
      await harness.publish([log.outcomes.at(-1), log.escalations.at(-1)].filter((e) => e !== undefined));
      await harness.publish(fillers);
      let expired = true;
      for (const topic of expiring)
        for (const p of await harness.admin.fetchTopicOffsets(topic)) {
          const high = BigInt(highBefore.get(`${topic}/${p.partition}`) ?? "0");
          if (high > 0n && BigInt(p.low) < high) expired = false;
        }
      let records = 0;
      let tombstones = 0;
      const keys = new Set<string>();
      await readTopicsToEnd(harness.kafka, [registryTopic], (record) => {
        records += 1;
        keys.add(String(record.key));
        if (record.value === null) tombstones += 1;
      });
      state = `expired=${expired} registry records=${records} tombstones=${tombstones} keys=${keys.size}`;
      if (expired && records < log.registry.length && tombstones < publishedTombstones) break;
      if (Date.now() > deadline) throw new Error(`the broker did not expire and compact in time: ${state}`);
    }

    // Replaying the expired topics from the start is refused, naming topic and partition.
    expect(await historyGaps(harness.admin, expiring, { earliest: true })).not.toEqual([]);
    const replay = await new Promise<{ code: number | null; err: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        ["bin/agent-graph-projector.js", "replay", "--to-earliest", "--topics", "outcome"],
        { env: { ...process.env, ...harness.env }, stdio: ["ignore", "pipe", "pipe"] },
      );
      let err = "";
      child.stderr.on("data", (chunk) => (err += chunk));
      child.on("close", (code) => resolve({ code, err }));
    });
    expect(replay.code, replay.err).toBe(1);
    expect(replay.err).toMatch(new RegExp(`${expiring[0]} partition \\d+ starts at offset [1-9]`));
    // The compacted registry topic still starts at offset 0: nothing a rebuild needs is gone.
    expect(await historyGaps(harness.admin, [registryTopic], { earliest: true })).toEqual([]);

    // Tamper with the registry projection so that the rebuild has something to restore.
    await harness.driver.executeQuery("MATCH (:Agent)-[r:AUTHORIZED_FOR]->() WITH r LIMIT 3 DELETE r");
    // Only agents the compacted topic still describes: compaction may have removed every record of a
    // deregistered one, whose properties a rebuild then keeps as the graph holds them.
    await harness.driver.executeQuery("MATCH (a:Agent) WHERE a.status = 'active' WITH a LIMIT 2 SET a.name = 'stray'");
    await harness.driver.executeQuery(
      "MATCH (a:Agent)-[r:CAN_ESCALATE_TO]->(:Agent) WHERE r.declared = true WITH r LIMIT 2 SET r.declared = false",
    );
    expect(await harness.dump()).not.toEqual(before);

    const rebuilt = await rebuildRegistry({
      graph: harness.graph(),
      admin: createGroupAdmin(harness.admin),
      reader: createTopicReader(harness.kafka),
      sink: harness.sink(),
      groupId: harness.config.kafka.group,
      topic: registryTopic,
      decoder: createAvroDecoder(harness.registry),
      tenants: harness.config.tenants,
      shared: new Set(),
      rules: { servedTenants: new Set(["default"]), maxListLength: 1000, maxIdLength: 256, maxTextLength: 4096 },
    });
    expect(rebuilt.tenants[0]?.records).toBeLessThan(log.registry.length);
    expect(await harness.dump()).toEqual(before);
  }, 300_000);
});
