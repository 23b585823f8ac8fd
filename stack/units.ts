import fs from "node:fs";
import type { ServerName, StackConfig } from "./config.js";
import { kafkaDefs, kafkaNodeDef } from "./servers/kafka.js";
import { neo4j } from "./servers/neo4j.js";
import { registry } from "./servers/registry.js";
import { type ServerDef, unitOf } from "./servers/types.js";

const SERVERS: Record<Exclude<ServerName, "kafka">, ServerDef> = { registry, neo4j };

/** The processes of a server under this config: one, or for Kafka one per node. */
export function defsOf(cfg: StackConfig, name: ServerName): ServerDef[] {
  return name === "kafka" ? kafkaDefs(cfg) : [SERVERS[name]];
}

/**
 * Kafka nodes that have a directory under STACK_HOME, whatever layout the current config asks for:
 * `down`, `status` and `reset` must find a cluster started with STACK_KAFKA_BROKERS=3 also when the
 * variable is not set now (and the single node when it is).
 */
export function knownKafkaDefs(cfg: StackConfig): ServerDef[] {
  const defs = new Map(kafkaDefs(cfg).map((def) => [unitOf(def), def]));
  const entries = fs.existsSync(cfg.home) ? fs.readdirSync(cfg.home) : [];
  for (const entry of entries) {
    const id = entry === "kafka" ? 1 : Number(/^kafka-(\d+)$/.exec(entry)?.[1] ?? Number.NaN);
    if (!Number.isInteger(id) || defs.has(entry)) continue;
    const def = kafkaNodeDef(id, entry === "kafka" ? 1 : Math.max(3, id));
    defs.set(entry, def);
  }
  return [...defs.values()];
}

export function knownDefsOf(cfg: StackConfig, name: ServerName): ServerDef[] {
  return name === "kafka" ? knownKafkaDefs(cfg) : [SERVERS[name]];
}
