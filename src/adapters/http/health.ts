import { type Clock, withTimeout } from "../../ports.js";
import type { HealthChecks } from "./server.js";

/** What liveness and readiness look at. */
export interface HealthInputs {
  readonly clock: Clock;
  /** Whether the consumer is in the group now, and since when it made no progress (commits where records wait). */
  readonly consumer: { isJoined(): boolean; lastProgressAt(): number };
  /** Neo4j's `RETURN 1`; a rejection or no answer within `checkTimeoutMs` is "not ready". */
  readonly pingNeo4j: () => Promise<void>;
  /** The registry adapter's readiness probe (createRegistryPing), bounded by its own timeout. */
  readonly pingRegistry: () => Promise<boolean>;
  readonly setReady: (ready: boolean) => void;
  readonly checkTimeoutMs: number;
  /** Liveness fails when the consumer has made no progress for this long. */
  readonly wedgedAfterMs: number;
}

/**
 * Liveness and readiness. Readiness is checked on a timer, not per request: probes and scrapes never
 * queue queries on Neo4j; `/readyz` answers the last check.
 */
export function createHealth(inputs: HealthInputs): Omit<HealthChecks, "started"> & {
  check(): Promise<void>;
  start(intervalMs: number): void;
  stop(): void;
} {
  let readiness = { neo4j: false, registry: false };
  let checking = false;
  let timer: NodeJS.Timeout | undefined;

  const check = async () => {
    if (checking) return;
    checking = true;
    try {
      const [neo4jOk, registryOk] = await Promise.all([
        withTimeout(
          inputs.pingNeo4j(),
          inputs.checkTimeoutMs,
          () => new Error(`no answer within ${inputs.checkTimeoutMs} ms`),
        ).then(
          () => true,
          () => false,
        ),
        inputs.pingRegistry(),
      ]);
      readiness = { neo4j: neo4jOk, registry: registryOk };
      inputs.setReady(inputs.consumer.isJoined() && neo4jOk && registryOk);
    } finally {
      checking = false;
    }
  };

  return {
    live() {
      const idleMs = inputs.clock.now() - inputs.consumer.lastProgressAt();
      return { ok: idleMs < inputs.wedgedAfterMs, detail: { consumerIdleSeconds: Math.round(idleMs / 1000) } };
    },
    async ready() {
      const joined = inputs.consumer.isJoined();
      const { neo4j, registry } = readiness;
      return { ok: joined && neo4j && registry, detail: { joined, neo4j, registry } };
    },
    check,
    start(intervalMs) {
      timer = setInterval(check, intervalMs);
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
