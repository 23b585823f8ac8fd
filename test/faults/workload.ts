import type { EscalationEdge, OutcomeCreated, ProjectorEvent, RegistryEvent } from "../../src/model/events.js";
import { generateEventLog, prng, SMALL_WORKLOAD } from "../../workload/generate.js";
import type { Harness } from "../support/harness.js";
import { SCALE, sleep } from "./settings.js";

export interface Workload {
  readonly registry: readonly RegistryEvent[];
  readonly outcomes: readonly OutcomeCreated[];
  readonly escalations: readonly EscalationEdge[];
  readonly hotAgents: readonly string[];
  readonly all: readonly ProjectorEvent[];
}

/**
 * A generated log where most outcomes (and so most escalations between outcomes) belong to three hot
 * agents, so that concurrent batches MERGE the same Agent nodes and CAN_ESCALATE_TO edges.
 */
export function hotWorkload(
  seed: number,
  size: { outcomes: number; escalations: number } = { outcomes: 450 * SCALE, escalations: 400 * SCALE },
): Workload {
  const log = generateEventLog(seed, { ...SMALL_WORKLOAD, agents: 16, editsPerAgent: 2, ...size });
  const agents = [...new Set(log.registry.map((event) => event.agent_id))];
  const hotAgents = agents.slice(2, 5);
  const random = prng(seed + 1);
  const outcomes = log.outcomes.map((outcome) =>
    random() < 0.85 ? { ...outcome, agent_id: hotAgents[Math.floor(random() * 3)] as string } : outcome,
  );
  return {
    registry: log.registry,
    outcomes,
    escalations: log.escalations,
    hotAgents,
    all: [...log.registry, ...outcomes, ...log.escalations],
  };
}

/**
 * Publishes a workload while faults are injected: the registry at once, then outcomes and escalations
 * interleaved in small chunks at a steady pace, so that there is always something being consumed.
 * `hold()`/`release()` stop publishing while the broker is down; `flush()` publishes the rest at once.
 */
export class Publisher {
  private gate: Promise<void> = Promise.resolve();
  private open: () => void = () => {};
  private flushing = false;
  private inFlight: Promise<unknown> = Promise.resolve();
  readonly done: Promise<void>;

  constructor(
    harness: Harness,
    workload: Workload,
    opts: { chunk: number; intervalMs: number; registryFirst?: boolean },
  ) {
    const rest: ProjectorEvent[] = [];
    const o = workload.outcomes;
    const e = workload.escalations;
    // Outcomes run a little ahead of the escalations that name them; some escalations still overtake
    // their outcomes and go through the retry topics.
    for (let i = 0, j = 0; i < o.length || j < e.length; ) {
      for (let k = 0; k < 3 && i < o.length; k++) rest.push(o[i++] as ProjectorEvent);
      for (let k = 0; k < 2 && j < e.length; k++) rest.push(e[j++] as ProjectorEvent);
    }
    this.done = (async () => {
      if (opts.registryFirst !== false) await harness.publish(workload.registry);
      for (let start = 0; start < rest.length; start += opts.chunk) {
        await this.gate;
        this.inFlight = harness.publish(rest.slice(start, start + opts.chunk));
        await this.inFlight;
        if (!this.flushing) await sleep(opts.intervalMs);
      }
    })();
    this.done.catch(() => {}); // flush() reports it
  }

  /** Stops publishing after the chunk in flight, which it waits for. */
  async hold(): Promise<void> {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
    await this.inFlight.catch(() => {});
  }

  release(): void {
    this.open();
  }

  async flush(): Promise<void> {
    this.flushing = true;
    this.release();
    await this.done;
  }
}
