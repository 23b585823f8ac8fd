import type { Stream } from "../topics.js";

/**
 * Which streams to hold back while an upstream stream catches up. Outcomes need their agent's
 * registry snapshot and escalations need their outcomes: consumed side by side from a backlog (a new
 * deployment, a replay, a rebuild), most dependent records would arrive early and take the deferral
 * path — correct, but several times slower than waiting. While the group's lag on an upstream source
 * topic is above `threshold` records, its dependents pause. Steady-state traffic stays below the
 * threshold and flows untouched; retry topics are never held. A threshold of 0 turns this off.
 */
export function heldStreams(sourceLag: Readonly<Record<Stream, number>>, threshold: number): Set<Stream> {
  const held = new Set<Stream>();
  if (threshold <= 0) return held;
  if (sourceLag["registry-mutation"] > threshold) {
    held.add("outcome-created");
    held.add("escalation-edge");
  }
  if (sourceLag["outcome-created"] > threshold) held.add("escalation-edge");
  return held;
}

/**
 * Whether asking the broker for the group's lag could release a held stream. The lags one instance
 * sees on its own partitions (high watermark of its last fetch minus its own commits) are a lower
 * bound on the group's, and holding only grows with lag: if that lower bound already holds every
 * held stream, the group-wide answer would hold them too.
 */
export function mightRelease(
  held: ReadonlySet<Stream>,
  lowerBound: Readonly<Record<Stream, number>>,
  threshold: number,
): boolean {
  const stillHeld = heldStreams(lowerBound, threshold);
  return [...held].some((stream) => !stillHeld.has(stream));
}
