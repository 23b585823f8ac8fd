import type { TestProject } from "vitest/node";
import { endpointsOf, ownServers } from "../support/global-setup.js";

/**
 * The local stack with a three-node Kafka (STACK_KAFKA_BROKERS=3, unless set otherwise) for the
 * cluster project. A single Kafka node of the same stack shares its ports, so it is stopped first and
 * started again afterwards. With servers of the user's own (KAFKA_BROKERS, NEO4J_URI and
 * SCHEMA_REGISTRY_URL set) those are used and the failover specs, which restart brokers, skip.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const env = process.env;
  const own = ownServers(env);
  if (own) {
    project.provide("endpoints", own);
    return async () => {};
  }
  env.STACK_KAFKA_BROKERS ??= "3";
  const log = (line: string) => console.log(`[stack] ${line}`);
  const { stackDown, stackUp } = await import("../../stack/api.js");
  const single = (await stackDown({ services: ["kafka"], units: ["kafka"], log })).some(
    (r) => r.outcome !== "not running",
  );
  const up = await stackUp({ log });
  project.provide("endpoints", endpointsOf(up));
  return async () => {
    if (env.STACK_KEEP === "1") return;
    if (up.startedAnything) await stackDown({ services: up.started, log });
    else await stackDown({ services: ["kafka"], log });
    if (single) await stackUp({ env: { ...env, STACK_KAFKA_BROKERS: "1" }, services: ["kafka"], log });
  };
}
