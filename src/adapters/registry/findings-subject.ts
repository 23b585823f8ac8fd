import type { Config } from "../../config.js";
import { FatalError } from "../../errors.js";
import { findingSchema } from "../../model/schemas.js";
import { registeredId, registerSubject } from "./schema-registry.js";

const WHAT = "the governance-finding schema";

/** The findings topic's subject (TopicNameStrategy, like the source topics'). */
export function findingsSubject(topic: string): string {
  return `${topic}-value`;
}

/** Registers our findings schema under its subject (setup: `schemas`, the demo, the tests). */
export function registerFindingSchema(config: Config["registry"], topic: string): Promise<number> {
  return registerSubject(config, findingsSubject(topic), findingSchema(), WHAT);
}

/** The id of our findings schema when its subject holds it already, else undefined: a look-up only (`check`). */
export function registeredFindingSchemaId(config: Config["registry"], topic: string): Promise<number | undefined> {
  return registeredId(config, findingsSubject(topic), findingSchema());
}

/**
 * The findings schema's id as `run` and other publishers get it. The subject is ours, so it is
 * registered when it does not hold our schema yet, whatever REGISTER_SCHEMAS says (that key is about
 * the producers' subjects); one that holds it is used as it is, by a lookup a read-only registry
 * principal may make. A registration the registry refuses is a FatalError saying how to set it up.
 */
export async function findingSchemaId(config: Pick<Config, "registry">, topic: string): Promise<number> {
  const subject = findingsSubject(topic);
  const id = await registeredFindingSchemaId(config.registry, topic);
  if (id !== undefined) return id;
  try {
    return await registerFindingSchema(config.registry, topic);
  } catch (error) {
    if (!(error instanceof FatalError)) throw error;
    throw new FatalError(
      `${WHAT} is not registered under subject ${subject} and registering it failed (${error.message}): register it with \`agent-graph-projector schemas\` as a principal the registry lets write`,
      { cause: error },
    );
  }
}
