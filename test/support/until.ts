/**
 * Polls `probe` until it answers — anything but `undefined` or `false` — and returns the answer; a
 * probe that throws has not answered yet (a server restarting, a topic not created yet), and the
 * last error is named if time runs out.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  { timeoutMs = 60_000, everyMs = 200 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what} (${timeoutMs} ms)${last ? `: ${String(last)}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
