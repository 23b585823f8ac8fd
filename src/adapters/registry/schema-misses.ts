import type { Rejection } from "../../model/fate.js";

/** Ids the registry does not know, remembered at most: a few hundred KB, whatever a flood holds. */
export const MAX_SCHEMA_MISSES = 10_000;

/**
 * The schema ids a registry did not know, each for `ttlMs`, at most `capacity` of them. Kept in the
 * order they were learnt, which is the order they expire in: the expired and, past the capacity, the
 * oldest are dropped from the front as new ones come, so neither age nor a flood of ids grows it.
 */
export function createMissMemory(ttlMs: number, capacity: number, now: () => number) {
  const entries = new Map<number, { rejection: Rejection; until: number }>();
  return {
    get(id: number): Rejection | undefined {
      const entry = entries.get(id);
      return entry && entry.until > now() ? entry.rejection : undefined;
    },
    add(id: number, rejection: Rejection): void {
      const at = now();
      entries.delete(id);
      entries.set(id, { rejection, until: at + ttlMs });
      for (const [oldest, { until }] of entries) {
        if (entries.size <= capacity && until > at) break;
        entries.delete(oldest);
      }
    },
    get size(): number {
      return entries.size;
    },
  };
}
