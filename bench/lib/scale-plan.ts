/**
 * The pure parts of a steady load during which the group is scaled (`--freshness-scale`): the plan,
 * and what each step of it cost — the longest pause in a partition's commits, the freshness of the
 * records published around it, and the records applied twice.
 */
import type { Settled } from "./freshness.js";

/** From `atSeconds` into the measured window on, `instances` projector processes run in the group. */
export interface ScaleStep {
  readonly atSeconds: number;
  readonly instances: number;
}

/**
 * `"1@0,3@40,1@100"` → instances over the measured window: one from its start, three from 40 s, one
 * again from 100 s. The first step is at 0; times rise; 1 to 8 instances.
 */
export function parseScalePlan(text: string): ScaleStep[] {
  const steps = text
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const match = /^(\d+)@(\d+(?:\.\d+)?)$/.exec(part);
      if (!match) throw new Error(`--freshness-scale: "${part}" is not INSTANCES@SECONDS (e.g. 1@0,3@40,1@100)`);
      return { instances: Number(match[1]), atSeconds: Number(match[2]) };
    });
  if (steps.length === 0) throw new Error("--freshness-scale: no steps");
  if (steps[0]?.atSeconds !== 0) throw new Error("--freshness-scale: the first step is at 0 s (e.g. 1@0)");
  for (const [i, step] of steps.entries()) {
    if (step.instances < 1 || step.instances > 8) throw new Error(`--freshness-scale: ${step.instances} instances`);
    const previous = steps[i - 1];
    if (previous && step.atSeconds <= previous.atSeconds) throw new Error("--freshness-scale: times must rise");
  }
  return steps;
}

/**
 * The longest stretch in `[fromMs, toMs)` during which a partition's committed offset did not move,
 * from the times the polls saw it move (sorted): the pause a rebalance puts in its commits, when the
 * load keeps every partition busy. A stretch that began before `fromMs` counts from its start.
 */
export function longestCommitPause(advances: readonly number[], fromMs: number, toMs: number): number {
  let longest = 0;
  let last: number | undefined;
  for (const at of advances) {
    if (at >= toMs) {
      if (last !== undefined) longest = Math.max(longest, toMs - last);
      return longest;
    }
    if (at >= fromMs && last !== undefined) longest = Math.max(longest, at - last);
    last = at;
  }
  if (last !== undefined) longest = Math.max(longest, toMs - last);
  return longest;
}

/** Settled cohorts published (event time) in `[fromMs, toMs)`. */
export function settledBetween(values: readonly Settled[], fromMs: number, toMs: number): Settled[] {
  return values.filter((v) => v.eventTimeMs >= fromMs && v.eventTimeMs < toMs);
}

/**
 * Records a group applied more than once: what every instance processed to a final fate (applied,
 * unchanged, stale, dead-lettered; a deferral is not final, its record comes back from the retry
 * topic) less the records on the topics. Redelivery after a revocation is the usual cause: the old
 * owner's last batch was applied but its offsets were not committed before the new owner fetched.
 */
export function recordsAppliedTwice(processedPerInstance: readonly number[], recordsOnTopics: number): number {
  return processedPerInstance.reduce((sum, n) => sum + n, 0) - recordsOnTopics;
}
