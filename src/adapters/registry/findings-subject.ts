import type { Config } from "../../config.js";
import { FatalError } from "../../errors.js";
import { findingSchema } from "../../model/schemas.js";
import { registeredId, registerSubject } from "./schema-registry.js";

const WHAT = "the governance-finding schema";

/** The findings topic's subject (TopicNameStrategy, like the source topics'). */
export function findingsSubject(topic: string): string {
  return `${topic}-value`;
}

/** Registers our findings schema under its subject (setup: `schemas`, or `run` with REGISTER_SCHEMAS=true). */
export function registerFindingSchema(config: Config["registry"], topic: string): Promise<number> {
  return registerSubject(config, findingsSubject(topic), findingSchema(), WHAT);
}

/** The findings schema's id as `run` and other publishers get it: registered, or only looked up (REGISTER_SCHEMAS). */
export function findingSchemaId(config: Pick<Config, "registry" | "registerSchemas">, topic: string): Promise<number> {
  return config.registerSchemas
    ? registerFindingSchema(config.registry, topic)
    : registeredFindingSchema(config.registry, topic);
}

/**
 * The id of our findings schema, which someone registered before: `run` with REGISTER_SCHEMAS=false
 * only reads the registry, so that a read-only registry principal can run it. Not registered is a
 * FatalError saying how to register it.
 */
export async function registeredFindingSchema(config: Config["registry"], topic: string): Promise<number> {
  const subject = findingsSubject(topic);
  const id = await registeredId(config, subject, findingSchema());
  if (id === undefined) {
    throw new FatalError(
      `${WHAT} is not registered under subject ${subject}: register it with \`agent-graph-projector schemas\` (or run once with REGISTER_SCHEMAS=true)`,
    );
  }
  return id;
}
