import { SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import { Kafka, logLevel } from "kafkajs";
import neo4jDriver from "neo4j-driver";
import type { StackEndpoints } from "./api.js";
import type { ServerName } from "./config.js";

/**
 * End-to-end smoke test of a running stack with the same client libraries the
 * projector uses: proves the registry speaks the Confluent wire format to
 * @kafkajs/confluent-schema-registry, that kafkajs can produce and consume on
 * Kafka 4, and that Bolt accepts our credentials. Cleans up what it creates.
 */
export async function verifyStack(e: StackEndpoints, services: readonly ServerName[], log: (m: string) => void) {
  const suffix = `${Date.now()}-${process.pid}`;
  const registry = new SchemaRegistry({ host: e.schemaRegistryUrl });
  const schema = {
    type: "record",
    name: "StackVerify",
    namespace: "dev.agentgraph.stack",
    fields: [
      { name: "id", type: "string" },
      { name: "n", type: "int" },
    ],
  };
  let encoded: Buffer | undefined;

  if (services.includes("registry")) {
    const subject = `stack-verify-${suffix}-value`;
    const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject });
    encoded = await registry.encode(id, { id: "a", n: 1 });
    if (encoded[0] !== 0 || encoded.readInt32BE(1) !== id)
      throw new Error("registry: wire header is not magic 0 + schema id");
    const decoded = (await registry.decode(encoded)) as { id: string; n: number };
    if (decoded.id !== "a" || decoded.n !== 1) throw new Error("registry: decode did not round-trip");
    const byId = await fetch(`${e.schemaRegistryUrl}/schemas/ids/${id}`);
    const body = (await byId.json()) as { schema?: string };
    if (byId.status !== 200 || JSON.parse(body.schema ?? "{}").name !== "StackVerify") {
      throw new Error(`registry: GET /schemas/ids/${id} does not resolve the registered schema`);
    }
    const subjects = await fetch(`${e.schemaRegistryUrl}/subjects`);
    if (subjects.status !== 200 || !((await subjects.json()) as string[]).includes(subject)) {
      throw new Error("registry: GET /subjects does not list the new subject");
    }
    await fetch(`${e.schemaRegistryUrl}/subjects/${subject}`, { method: "DELETE" }).catch(() => {});
    log(`registry: ok (schema id ${id}, encode/decode round-trip, /schemas/ids, /subjects)`);
  }

  if (services.includes("kafka")) {
    const kafka = new Kafka({ clientId: "stack-verify", brokers: e.kafkaBrokers, logLevel: logLevel.NOTHING });
    const topic = `stack-verify-${suffix}`;
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic, messages: [{ key: "k", value: encoded ?? Buffer.from("v") }] });
      await producer.disconnect();
      const consumer = kafka.consumer({ groupId: `stack-verify-${suffix}` });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const got = await new Promise<Buffer | null>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("kafka: no message consumed within 30s")), 30_000);
        void consumer.run({
          eachMessage: async ({ message }) => {
            clearTimeout(timer);
            resolve(message.value);
          },
        });
      });
      await consumer.disconnect();
      if (!got) throw new Error("kafka: consumed an empty message");
      if (encoded && services.includes("registry")) await registry.decode(got);
      await admin.deleteGroups([`stack-verify-${suffix}`]).catch(() => {});
      log("kafka: ok (create topic, produce, consume in a group)");
    } finally {
      await admin.deleteTopics({ topics: [topic] }).catch(() => {});
      await admin.disconnect();
    }
  }

  if (services.includes("neo4j")) {
    const driver = neo4jDriver.driver(e.neo4jUri, neo4jDriver.auth.basic(e.neo4jUser, e.neo4jPassword));
    try {
      const res = await driver.executeQuery("RETURN 1 AS one");
      if (res.records[0]?.get("one").toNumber() !== 1) throw new Error("neo4j: RETURN 1 failed");
      log("neo4j: ok (Bolt login, RETURN 1)");
    } finally {
      await driver.close();
    }
  }
}
