import { describe, expect, it } from "vitest";
import { createCoalescer } from "../../src/pipeline/coalesce.js";

/** An apply that records each call and finishes when the test says so. */
function recordingApply() {
  const calls: number[][] = [];
  const finish: ((error?: Error) => void)[] = [];
  let active = 0;
  let maxActive = 0;
  const apply = (items: number[]) =>
    new Promise<void>((resolve, reject) => {
      calls.push(items);
      active += 1;
      maxActive = Math.max(maxActive, active);
      finish.push((error) => {
        active -= 1;
        if (error) reject(error);
        else resolve();
      });
    });
  return { apply, calls, finish, maxActive: () => maxActive };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("createCoalescer", () => {
  it("sends the requests of one turn together, and those that wait meanwhile in the next call", async () => {
    const { apply, calls, finish, maxActive } = recordingApply();
    const submit = createCoalescer(apply, 100);
    const first = [submit("t", [1, 2]), submit("t", [3])];
    await tick();
    expect(calls).toEqual([[1, 2, 3]]);

    const second = [submit("t", [4]), submit("t", [5, 6])];
    await tick();
    expect(calls).toHaveLength(1);
    finish[0]?.();
    await Promise.all(first);
    await tick();
    expect(calls).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    finish[1]?.();
    await Promise.all(second);
    expect(maxActive()).toBe(1);
  });

  it("merges up to the oldest waiting request's own maxItems when it names one", async () => {
    const { apply, calls, finish } = recordingApply();
    const submit = createCoalescer(apply, 2);
    const first = submit("t", [1]);
    await tick();
    // Queued while the first call runs; the oldest of them allows 4 items, the coalescer 2.
    const waiting = [submit("t", [2, 3], 4), submit("t", [4, 5]), submit("t", [6])];
    finish[0]?.();
    await first;
    await tick();
    finish[1]?.();
    await tick();
    await tick();
    finish[2]?.();
    await Promise.all(waiting);
    expect(calls).toEqual([[1], [2, 3, 4, 5], [6]]);
  });

  it("keeps keys apart and a call under maxItems, but never splits one request", async () => {
    const { apply, calls, finish } = recordingApply();
    const submit = createCoalescer(apply, 3);
    const all = [submit("a", [1, 2]), submit("b", [10]), submit("a", [3]), submit("a", [4, 5, 6, 7])];
    for (let call = 0; call < 4; call++) {
      await tick();
      finish[call]?.();
      await tick();
    }
    await Promise.all(all);
    expect(calls).toEqual([[1, 2, 3], [10], [4, 5, 6, 7]]);
  });

  it("rejects every request that went into a failed call, and carries on with the next", async () => {
    const { apply, finish } = recordingApply();
    const submit = createCoalescer(apply, 100);
    const a = submit("t", [1]);
    const b = submit("t", [2]);
    await tick();
    const c = submit("t", [3]);
    finish[0]?.(new Error("neo4j down"));
    await expect(a).rejects.toThrow("neo4j down");
    await expect(b).rejects.toThrow("neo4j down");
    await tick();
    finish[1]?.();
    await expect(c).resolves.toBeUndefined();
  });

  it("with concurrency 2, runs two calls at once and merges what waits meanwhile into the next", async () => {
    const { apply, calls, finish, maxActive } = recordingApply();
    const submit = createCoalescer(apply, 3, 2);
    // Over maxItems together: the first call takes [1, 2], the second starts at once with [3, 4].
    const first = [submit("t", [1, 2]), submit("t", [3, 4])];
    await tick();
    expect(calls).toEqual([
      [1, 2],
      [3, 4],
    ]);
    const waiting = [submit("t", [5]), submit("t", [6]), submit("t", [7])];
    await tick();
    expect(calls).toHaveLength(2);
    finish[1]?.();
    await first[1];
    await tick();
    expect(calls[2]).toEqual([5, 6, 7]);
    finish[0]?.();
    finish[2]?.();
    await Promise.all([...first, ...waiting]);
    expect(maxActive()).toBe(2);
  });

  it("with concurrency 2, a lone request starts a call while the other is busy", async () => {
    const { apply, calls, finish } = recordingApply();
    const submit = createCoalescer(apply, 100, 2);
    const a = submit("t", [1]);
    await tick();
    const b = submit("t", [2]);
    await tick();
    expect(calls).toEqual([[1], [2]]);
    finish[0]?.();
    finish[1]?.();
    await Promise.all([a, b]);
  });
});
