/**
 * Runs at most `concurrency` applications at a time and merges the requests that wait meanwhile: when
 * one in progress ends, everything queued for the same key as the oldest request (up to that request's
 * `maxItems`, the coalescer's unless the request names its own) goes in the next call. Each caller's
 * promise settles with the call its items went into.
 *
 * Used for every stream, keyed by topic:
 * - the registry, one call at a time: §3.1/§3.2 batches of two partitions deadlock on each other, and
 *   six partitions' batches applied as one transaction cost a fraction of six transactions;
 * - outcomes and escalations, as many calls as the graph writer has slots: a caught-up consumer
 *   fetches a few records per partition, and twelve partitions' sub-batches applied as twelve
 *   transactions spent about twice the CPU per record, Neo4j's and ours, of a backlog's large ones —
 *   at half the capacity that queued records for a second. Merged while they wait, they commit together.
 *
 * A new request starts its call on the next turn of the event loop rather than at once, so that the
 * batches of one fetch, handed over together, go together.
 */
export function createCoalescer<T>(
  apply: (items: T[]) => Promise<void>,
  maxItems: number,
  concurrency = 1,
): (key: string, items: readonly T[], maxItems?: number) => Promise<void> {
  interface Request {
    readonly key: string;
    readonly items: readonly T[];
    readonly maxItems: number;
    readonly resolve: () => void;
    readonly reject: (error: unknown) => void;
  }
  const queue: Request[] = [];
  let running = 0;
  let starting = false;

  /** The oldest request and those of its key that fit beside it, taken off the queue. */
  function takeNext(): Request[] {
    const head = queue[0] as Request;
    const taken: Request[] = [];
    let count = 0;
    for (let i = 0; i < queue.length; ) {
      const request = queue[i] as Request;
      if (request.key === head.key && (taken.length === 0 || count + request.items.length <= head.maxItems)) {
        taken.push(request);
        count += request.items.length;
        queue.splice(i, 1);
      } else i++;
    }
    return taken;
  }

  async function work(): Promise<void> {
    while (queue.length > 0) {
      const taken = takeNext();
      try {
        await apply(taken.flatMap((request) => request.items));
        for (const request of taken) request.resolve();
      } catch (error) {
        for (const request of taken) request.reject(error);
      }
    }
    running -= 1;
  }

  function start(): void {
    starting = false;
    while (running < concurrency && queue.length > 0) {
      running += 1;
      void work();
    }
  }

  return (key, items, itemsCap = maxItems) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ key, items, maxItems: itemsCap, resolve, reject });
      if (!starting && running < concurrency) {
        starting = true;
        setImmediate(start);
      }
    });
}
