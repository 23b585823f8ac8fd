import { randomUUID } from "node:crypto";
import { COMPATIBILITY, SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import { Kafka, logLevel } from "kafkajs";
import neo4j from "neo4j-driver";
import { afterAll, describe, expect, inject, it } from "vitest";
import { REGISTRY_PROJECTION } from "../../src/cypher/s3_1-registry-projection.js";
import { CONSTRAINT_NAMES, CONSTRAINTS } from "../../src/cypher/s6-constraints.js";
import { snapshotRow } from "../../src/projection/registry.js";
import { snapshot, workflow } from "../support/builders.js";

/** Proof that the servers under test are real: Kafka with a group and commits, the registry, Neo4j. */
describe("the servers under test", () => {
  const endpoints = inject("endpoints");
  const driver = neo4j.driver(endpoints.neo4jUri, neo4j.auth.basic(endpoints.neo4jUser, endpoints.neo4jPassword));
  afterAll(() => driver.close());

  it("Kafka: produce, consume in a consumer group, and read the committed offset back", async () => {
    const kafka = new Kafka({ clientId: "stack-proof", brokers: endpoints.kafkaBrokers, logLevel: logLevel.NOTHING });
    const topic = `stack-proof-${randomUUID()}`;
    const groupId = `stack-proof-${randomUUID()}`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 10 }, (_, n) => ({ key: `k${n}`, value: `v${n}` })) });
    const consumer = kafka.consumer({ groupId });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen: string[] = [];
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(String(message.value));
          if (seen.length === 10) resolve();
        },
      });
    });
    await consumer.disconnect();
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const total = committed?.partitions.reduce((sum, p) => sum + Number(p.offset), 0);
    await producer.disconnect();
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();
    expect(seen.sort()).toEqual(Array.from({ length: 10 }, (_, n) => `v${n}`).sort());
    expect(total).toBe(10);
  });

  it("schema registry: register an Avro schema and round-trip a record with magic byte and schema id on the wire", async () => {
    const registry = new SchemaRegistry({ host: endpoints.schemaRegistryUrl });
    const subject = `stack-proof-${randomUUID()}-value`;
    const schema = {
      type: "record",
      name: "Probe",
      namespace: "dev.agentgraph.test",
      fields: [{ name: "n", type: "long" }],
    };
    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
      { subject, compatibility: COMPATIBILITY.BACKWARD },
    );
    const wire = await registry.encode(id, { n: 42 });
    expect(wire[0]).toBe(0);
    expect(wire.readInt32BE(1)).toBe(id);
    expect(await registry.decode(wire)).toEqual({ n: 42 });
    const subjects = (await (await fetch(`${endpoints.schemaRegistryUrl}/subjects`)).json()) as string[];
    expect(subjects).toContain(subject);
  });

  it("Neo4j: the §6 constraints are created idempotently (twice) and §3.1 with its CALL subqueries runs", async () => {
    for (let n = 0; n < 2; n++) for (const constraint of CONSTRAINTS) await driver.executeQuery(constraint);
    const { records } = await driver.executeQuery("SHOW CONSTRAINTS YIELD name, type RETURN name, type");
    const names = records.map((r) => r.get("name"));
    for (const name of CONSTRAINT_NAMES) expect(names).toContain(name);
    const agentId = `proof${randomUUID().slice(0, 6)}-agt-001`;
    const rows = [
      snapshotRow({
        i: 0,
        event: snapshot(agentId, { owned_workflows: [{ ...workflow(`${agentId}-wf`), name: "w", domain: "d" }] }),
      }),
    ];
    const result = await driver.executeQuery(REGISTRY_PROJECTION, { rows });
    expect(result.records.map((r) => r.get("i"))).toHaveLength(1);
    const check = await driver.executeQuery(
      "MATCH (a:Agent {agent_id: $id})-[:OWNS_WORKFLOW]->(w:Workflow) RETURN count(w) AS n",
      { id: agentId },
    );
    expect(check.records[0]?.get("n").toNumber()).toBe(1);
    await driver.executeQuery("MATCH (n) WHERE n.agent_id = $id OR n.workflow_id = $wf DETACH DELETE n", {
      id: agentId,
      wf: `${agentId}-wf`,
    });
  });
});
