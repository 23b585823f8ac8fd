import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { resetOffsets } from "../../src/adapters/kafka/group-admin.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import { diffGraphs } from "../../src/model/graph.js";
import { STREAMS } from "../../src/topics.js";
import { generateEventLog, prng, SMALL_WORKLOAD } from "../../workload/generate.js";
import { Harness } from "../support/harness.js";
import { referenceGraph } from "../support/reference-model.js";

/**
 * Order independence: the same event set published in any interleaving across the three topics (each
 * key's own events keep their order, as Kafka keeps them per partition) converges, once consumed, to
 * the reference model's in-order graph — observed_count included. Early records are deferred through
 * the retry topics until their preconditions hold.
 */
function keyOf(event: ProjectorEvent): string {
  if (event.kind === "registry-snapshot" || event.kind === "registry-tombstone") return `r:${event.agent_id}`;
  if (event.kind === "outcome-created") return `o:${event.outcome_id}`;
  return `e:${event.source_outcome_id}`;
}

/** Interleaves events by the given priorities while keeping each key's events in their log order. */
function interleave(events: readonly ProjectorEvent[], priorities: readonly number[]): ProjectorEvent[] {
  const queues = new Map<string, ProjectorEvent[]>();
  for (const event of events) queues.set(keyOf(event), [...(queues.get(keyOf(event)) ?? []), event]);
  const slots = events.map((event, n) => ({ key: keyOf(event), priority: priorities[n % priorities.length] ?? 0, n }));
  slots.sort((a, b) => a.priority - b.priority || a.n - b.n);
  return slots.map((slot) => (queues.get(slot.key) as ProjectorEvent[]).shift() as ProjectorEvent);
}

describe("convergence for any arrival order, on real servers", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await Harness.create("disorder", {
      RETRY_BACKOFF_MS: "100",
      RETRY_BACKOFF_MAX_MS: "500",
      RETRY_MAX_ATTEMPTS: "200",
    });
  });
  afterEach(() => harness.stopProjectors());
  afterAll(() => harness?.close());

  it("escalations first, then outcomes, then the registry: the worst order", async () => {
    await harness.clearGraph();
    const log = generateEventLog(404, { ...SMALL_WORKLOAD, agents: 10, outcomes: 40, escalations: 30 });
    await harness.startProjector();
    await harness.publish(log.escalations);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await harness.publish(log.outcomes);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await harness.publish(log.registry);
    await harness.waitForCaughtUp(120_000);
    expect(
      diffGraphs(referenceGraph([...log.registry, ...log.outcomes, ...log.escalations]), await harness.dump()),
    ).toEqual([]);
    await harness.stopProjectors();
  });

  it("property: random interleavings of a generated event set", async () => {
    await harness.startProjector();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10_000 }),
        fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 64 }),
        async (seed, priorities) => {
          await harness.clearGraph();
          const log = generateEventLog(seed, {
            ...SMALL_WORKLOAD,
            agents: 6 + (seed % 5),
            outcomes: 25,
            escalations: 20,
          });
          const events = [...log.registry, ...log.outcomes, ...log.escalations];
          const shuffled = interleave(events, priorities);
          for (let start = 0; start < shuffled.length; start += 20)
            await harness.publish(shuffled.slice(start, start + 20));
          await harness.waitForCaughtUp(120_000);
          expect(diffGraphs(referenceGraph(events), await harness.dump())).toEqual([]);
        },
      ),
      {
        seed: Number(process.env.PROPERTY_SEED ?? 4242),
        numRuns: Number(process.env.PROPERTY_RUNS ?? 3),
        endOnFailure: true,
      },
    );
    await harness.stopProjectors();
  });

  it("property: tombstones, re-registrations, outcome corrections, conflicting shared nodes, late copies, old prefixes and a replay change nothing the log does not", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10_000 }),
        fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 64 }),
        async (seed, priorities) => {
          await harness.clearGraph();
          await harness.startProjector();
          const runStart = Date.now();
          const log = generateEventLog(seed, {
            ...SMALL_WORKLOAD,
            agents: 6 + (seed % 5),
            outcomes: 25,
            escalations: 20,
            deregisterRatio: 0.4,
            reregisterRatio: 0.5,
            outcomeUpdateRatio: 0.3,
            outcomeRepeatRatio: 0.1,
            sharedNodeConflictRatio: 0.3,
          });
          const events = [...log.registry, ...log.outcomes, ...log.escalations];
          const expected = referenceGraph(events);
          const shuffled = interleave(events, priorities);
          for (let start = 0; start < shuffled.length; start += 20)
            await harness.publish(shuffled.slice(start, start + 20));
          await harness.waitForCaughtUp(120_000);
          expect(diffGraphs(expected, await harness.dump()), "after the log").toEqual([]);

          // Late copies (what retries and `dlq redrive` bring back) of a random third of the log, and an
          // old prefix of the registry log published again by its producer.
          const random = prng(seed);
          await harness.publishLate(events.filter(() => random() < 0.33));
          await harness.publish(log.registry.slice(0, Math.ceil(log.registry.length * random())));
          await harness.waitForCaughtUp(120_000);
          expect(diffGraphs(expected, await harness.dump()), "after late copies and an old prefix").toEqual([]);

          // A replay: every source topic read again from this run's first record (earlier runs share
          // the topics).
          await harness.stopProjectors();
          await resetOffsets(
            harness.admin,
            harness.config.kafka.group,
            STREAMS.map((stream) => harness.names.source[stream]),
            { timestamp: runStart },
          );
          await harness.startProjector();
          await harness.waitForCaughtUp(120_000);
          expect(diffGraphs(expected, await harness.dump()), "after a replay").toEqual([]);
          await harness.stopProjectors();
        },
      ),
      {
        seed: Number(process.env.PROPERTY_SEED ?? 1515),
        numRuns: Number(process.env.PROPERTY_RUNS ?? 3),
        endOnFailure: true,
      },
    );
  });
});
