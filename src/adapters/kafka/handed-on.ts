import type { SinkItem } from "../../ports.js";

/** How a copy ended once the broker acknowledged it: a deferred record dead-lettered says why. */
export interface HandedOn {
  readonly tooLarge?: string;
}

/**
 * The copies acknowledged by sends that then failed on a later chunk. The caller hands the same items
 * again (its batch is retried whole), and only those not acknowledged must go: sending the others
 * again makes duplicate dead letters and a second retry chain for each deferred record. An item is
 * known by its source coordinates and its kind, so a record that meanwhile took another way (a
 * deferral that is now a dead letter) is sent. Entries leave once a send that carried them succeeds;
 * those of a partition that moved to another projector are dropped, oldest first, past `capacity`.
 */
export interface HandedOnMemory {
  /** How the item's copy ended, when a failed send had it acknowledged. */
  get(item: SinkItem): HandedOn | undefined;
  remember(item: SinkItem, outcome: HandedOn): void;
  /** A send with these items succeeded: their copies are the caller's to commit past. */
  forget(items: readonly SinkItem[]): void;
  readonly size: number;
}

export const HANDED_ON_CAPACITY = 50_000;

const keyOf = ({ kind, record }: SinkItem) =>
  `${kind}\u0000${record.topic}\u0000${record.partition}\u0000${record.offset}`;

export function createHandedOnMemory(capacity = HANDED_ON_CAPACITY): HandedOnMemory {
  const entries = new Map<string, HandedOn>();
  return {
    get: (item) => entries.get(keyOf(item)),
    remember(item, outcome) {
      const key = keyOf(item);
      entries.delete(key);
      entries.set(key, outcome);
      for (const oldest of entries.keys()) {
        if (entries.size <= capacity) break;
        entries.delete(oldest);
      }
    },
    forget(items) {
      if (entries.size === 0) return;
      for (const item of items) entries.delete(keyOf(item));
    },
    get size() {
      return entries.size;
    },
  };
}
