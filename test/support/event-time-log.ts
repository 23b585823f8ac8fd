import fc from "fast-check";
import {
  type JudgedFinding,
  judgeEscalations,
  type Observation,
  type RecordedFinding,
  type RegistryChange,
} from "../../src/model/event-time-findings.js";

/**
 * Generated logs of registry changes and escalations, the ways Kafka may deliver them, and the judge
 * driven over a delivery as the service drives it: the watermark advances as registry records are
 * applied, and every step judges what fell below it.
 */
export const TENANT = "prop";
export const AGENTS = ["pr-agt-001", "pr-agt-002", "pr-agt-003"] as const;
/** Registry partitions: agents spread over two, each written in occurred_at order (as a producer does). */
export const REGISTRY_PARTITIONS = 2;
const ESCALATION_PARTITIONS = 2;

export interface Log {
  readonly changes: readonly RegistryChange[];
  readonly observations: readonly (Observation & { partition: number })[];
}

const change = fc.record({
  gap: fc.integer({ min: 0, max: 3 }),
  step: fc.integer({ min: 1, max: 2 }),
  tombstone: fc.boolean(),
  declared: fc.subarray([...AGENTS, "human operator"]),
});

/** Per agent 0-4 changes with rising versions and occurred_at (ties allowed); 0-8 escalations. */
export const logArbitrary: fc.Arbitrary<Log> = fc
  .record({
    histories: fc.tuple(...AGENTS.map(() => fc.array(change, { maxLength: 4 }))),
    starts: fc.tuple(...AGENTS.map(() => fc.integer({ min: 0, max: 10 }))),
    observations: fc.array(
      fc.record({
        pair: fc.constantFrom(...AGENTS.flatMap((a) => AGENTS.filter((b) => b !== a).map((b) => [a, b] as const))),
        at: fc.integer({ min: 0, max: 25 }),
        partition: fc.integer({ min: 0, max: ESCALATION_PARTITIONS - 1 }),
      }),
      { maxLength: 8 },
    ),
  })
  .map(({ histories, starts, observations }) => {
    const changes: RegistryChange[] = [];
    AGENTS.forEach((agent, n) => {
      let at = starts[n] as number;
      let version = 0;
      for (const c of histories[n] ?? []) {
        at += c.gap;
        version += c.step;
        changes.push({
          tenant_id: TENANT,
          agent_id: agent,
          registry_version: version,
          occurred_at: at,
          declared: c.tombstone ? [] : c.declared.filter((d) => d !== agent && d.includes("-agt-")),
        });
      }
    });
    return {
      changes,
      observations: observations.map(({ pair, at, partition }, i) => ({
        tenant_id: TENANT,
        source_agent_id: pair[0],
        target_agent_id: pair[1],
        observed_at: at,
        source_outcome_id: `o-${i}-s`,
        target_outcome_id: `o-${i}-t`,
        partition,
      })),
    };
  });

export type Delivered = { registry: number; change: RegistryChange } | { observation: Observation };

/** The registry topic is keyed by agent: a stable hash of it picks the partition. */
const registryPartition = (c: RegistryChange) =>
  [...c.agent_id].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) % 1_000_003, 0) % REGISTRY_PARTITIONS;

/** The log's partitions: registry ones first (each in occurred_at order), then the escalation ones. */
export function partitions(log: Log): Delivered[][] {
  const registry = Array.from({ length: REGISTRY_PARTITIONS }, (_, p) =>
    log.changes
      .filter((c) => registryPartition(c) === p)
      .sort((a, b) => a.occurred_at - b.occurred_at || a.registry_version - b.registry_version)
      .map((c) => ({ registry: p, change: c }) as Delivered),
  );
  const escalations = Array.from({ length: ESCALATION_PARTITIONS }, (_, p) =>
    log.observations.filter((o) => o.partition === p).map(({ partition: _, ...observation }) => ({ observation })),
  );
  return [...registry, ...escalations];
}

/** Interleaves partitions keeping each one's order; `picks` chooses which goes next. */
export function interleave(parts: readonly Delivered[][], picks: readonly number[]): Delivered[] {
  const queues = parts.map((p) => [...p]);
  const out: Delivered[] = [];
  let n = 0;
  for (;;) {
    const ready = queues.filter((q) => q.length > 0);
    if (ready.length === 0) return out;
    const queue = ready[(picks[n++ % Math.max(picks.length, 1)] ?? 0) % ready.length] as Delivered[];
    out.push(queue.shift() as Delivered);
  }
}

export type DeliveryOrder = "event-time" | "interleaved" | "backlog" | "registry-partition-delayed" | "redelivered";
export const DELIVERY_ORDERS: readonly DeliveryOrder[] = [
  "event-time",
  "interleaved",
  "backlog",
  "registry-partition-delayed",
  "redelivered",
];

export function deliver(log: Log, order: DeliveryOrder, picks: readonly number[]): Delivered[] {
  const parts = partitions(log);
  const registry = parts.slice(0, REGISTRY_PARTITIONS);
  const escalations = parts.slice(REGISTRY_PARTITIONS);
  const at = (d: Delivered) => ("change" in d ? d.change.occurred_at : d.observation.observed_at);
  switch (order) {
    case "event-time":
      return parts.flat().sort((a, b) => at(a) - at(b) || ("change" in a ? 0 : 1) - ("change" in b ? 0 : 1));
    case "interleaved":
      return interleave(parts, picks);
    case "backlog":
      // A new deployment's catch-up: the registry is drained before any escalation.
      return [...interleave(registry, picks), ...interleave(escalations, picks)];
    case "registry-partition-delayed":
      return [...interleave([...parts.slice(1)], picks), ...(parts[0] ?? [])];
    case "redelivered": {
      const once = interleave(parts, picks);
      return [...once, ...interleave(parts, [...picks].reverse())];
    }
  }
}

/** One registry partition's progress in a delivery: the highest occurred_at applied on it, and whether all of it is. */
export interface PartitionProgress {
  readonly applied_at: number | null;
  readonly caught_up: boolean;
}

/**
 * The watermark this model drives the judge with: every change with occurred_at below it has been
 * applied, given that each registry partition is written in occurred_at order. A caught-up partition
 * holds nothing back; one that has applied nothing and is not caught up holds it at −∞; `now −
 * allowedLatenessMs` bounds the wait. The service reaches a watermark from offsets instead
 * (src/model/event-time-findings.ts advanceRegistryWatermark); the judge's property is that any sound
 * watermark gives the oracle's findings, and this one is sound for the logs generated here.
 */
export function registryWatermark(
  partitions: readonly PartitionProgress[],
  now: number,
  allowedLatenessMs: number,
): number {
  let watermark = Number.POSITIVE_INFINITY;
  for (const partition of partitions)
    if (!partition.caught_up) watermark = Math.min(watermark, partition.applied_at ?? Number.NEGATIVE_INFINITY);
  return Math.max(watermark, now - allowedLatenessMs);
}

/**
 * Runs the judge over a delivery as the service would: after each record, the watermark from the
 * registry partitions' progress (a partition whose records were all delivered is caught up), then one
 * judge call over what is pending. `judge` is replaceable so a wrong one can be shown to fail.
 */
export function runJudge(
  log: Log,
  delivered: readonly Delivered[],
  judge: typeof judgeEscalations = judgeEscalations,
): JudgedFinding[] {
  const counts = partitions(log)
    .slice(0, REGISTRY_PARTITIONS)
    .map((p) => p.length);
  const applied = counts.map(() => 0);
  const appliedAt: (number | null)[] = counts.map(() => null);
  const history = new Map<string, RegistryChange>();
  let pending: Observation[] = [];
  const found = new Map<string, JudgedFinding>();
  const step = () => {
    const watermark = registryWatermark(
      counts.map((count, p) => ({ applied_at: appliedAt[p] ?? null, caught_up: (applied[p] ?? 0) >= count })),
      Number.NEGATIVE_INFINITY,
      0,
    );
    const recorded: RecordedFinding[] = [...found.values()]
      .filter((f) => f.kind === "undeclared-escalation")
      .map((f) => ({ ...f, resolved: [...found.values()].some((r) => r.resolves === f.finding_id) }));
    const { findings, judged } = judge({ history: [...history.values()], observations: pending, recorded, watermark });
    const done = new Set(judged);
    pending = pending.filter((o) => !done.has(o));
    for (const f of findings) if (!found.has(f.finding_id)) found.set(f.finding_id, f);
  };
  for (const d of delivered) {
    if ("change" in d) {
      const { change: c, registry: p } = d;
      history.set(`${c.agent_id}|${c.registry_version}`, c);
      applied[p] = (applied[p] ?? 0) + 1;
      appliedAt[p] = Math.max(appliedAt[p] ?? Number.NEGATIVE_INFINITY, c.occurred_at);
    } else {
      pending.push(d.observation);
    }
    step();
  }
  step();
  return [...found.values()];
}
