import type { Admin, Kafka } from "kafkajs";
import { requireSourceTopics } from "../adapters/kafka/admin.js";
import { createKafka } from "../adapters/kafka/client.js";
import {
  checkRegistry,
  createAvroDecoder,
  createSchemaRegistry,
  registerSchemas,
} from "../adapters/registry/schema-registry.js";
import type { Decoder, DecoderMetrics } from "../ports.js";
import { redactUserinfo } from "../redact.js";
import type { TopicNames } from "../topics.js";
import type { StartupContext } from "./context.js";

/** The connect phase for the schema registry: reachable, the reader schemas registered if asked to. */
export async function connectRegistry(
  ctx: StartupContext,
  names: TopicNames,
  metrics?: DecoderMetrics,
): Promise<Decoder> {
  const { config, logger, clock } = ctx;
  await ctx.step(`schema registry at ${redactUserinfo(config.registry.url)}`, () => checkRegistry(config.registry));
  if (config.registerSchemas) {
    const ids = await ctx.step("registering the reader schemas (REGISTER_SCHEMAS)", () =>
      registerSchemas(config.registry, names.source),
    );
    logger.info({ schemaIds: ids }, "reader schemas registered");
  }
  const registry = createSchemaRegistry(config.registry);
  return createAvroDecoder(registry, {
    missTtlMs: config.registry.missTtlMs,
    now: () => clock.now(),
    ...(metrics ? { metrics } : {}),
  });
}

export interface OpenKafka {
  readonly kafka: Kafka;
  readonly admin: Admin;
  /** How start-up failures about Kafka name it. */
  readonly brokers: string;
}

/** The connect phase for Kafka: the admin client, and the source topics, which the producers own, exist. */
export async function connectKafka(ctx: StartupContext, names: TopicNames): Promise<OpenKafka> {
  const kafka = createKafka(ctx.config.kafka, ctx.logger);
  const admin = kafka.admin();
  ctx.opened(() => admin.disconnect());
  const brokers = `Kafka at ${ctx.config.kafka.brokers.join(",")}`;
  await ctx.step(brokers, async () => {
    await admin.connect();
    await requireSourceTopics(admin, names, ctx.confirmWithinMs());
  });
  return { kafka, admin, brokers };
}
