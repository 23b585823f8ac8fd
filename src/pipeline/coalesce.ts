/**
 * Runs one application at a time and merges the requests that wait meanwhile: when the one in
 * progress ends, everything queued for the same key (up to `maxItems` items in all) goes in the next
 * call. Each caller's promise settles with the call its items went into.
 *
 * Used for the registry stream: §3.1/§3.2 batches of two partitions deadlock on each other, so they
 * are applied one at a time, and six partitions' batches applied as one transaction cost a fraction
 * of six transactions. A new request starts its call on the next turn of the event loop rather than
 * at once, so that the batches of one fetch, handed over together, go together.
 */
export function createCoalescer<T>(
  apply: (items: T[]) => Promise<void>,
  maxItems: number,
): (key: string, items: readonly T[]) => Promise<void> {
  interface Request {
    readonly key: string;
    readonly items: readonly T[];
    readonly resolve: () => void;
    readonly reject: (error: unknown) => void;
  }
  const queue: Request[] = [];
  let running = false;

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const head = queue[0] as Request;
      const taken: Request[] = [];
      let count = 0;
      for (let i = 0; i < queue.length; ) {
        const request = queue[i] as Request;
        if (request.key === head.key && (taken.length === 0 || count + request.items.length <= maxItems)) {
          taken.push(request);
          count += request.items.length;
          queue.splice(i, 1);
        } else i++;
      }
      try {
        await apply(taken.flatMap((request) => request.items));
        for (const request of taken) request.resolve();
      } catch (error) {
        for (const request of taken) request.reject(error);
      }
    }
    running = false;
  }

  return (key, items) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ key, items, resolve, reject });
      if (!running) {
        running = true;
        setImmediate(() => void drain());
      }
    });
}
