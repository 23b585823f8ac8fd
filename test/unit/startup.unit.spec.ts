import { describe, expect, it } from "vitest";
import type { Clock, Sleep } from "../../src/ports.js";
import { StartupError, StartupStopped, untilDeadline } from "../../src/startup/deadline.js";

/** Time that passes only when start-up waits. */
function fakeTime(): { clock: Clock; sleep: Sleep; slept: number[] } {
  let now = 0;
  const slept: number[] = [];
  return {
    clock: { now: () => now },
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
    slept,
  };
}

describe("untilDeadline", () => {
  it("a failure waiting cannot cure ends start-up at once, naming it", async () => {
    const time = fakeTime();
    const refused = Object.assign(new Error("Unable to create Constraint( name='agent_agent_id' )"), {
      code: "Neo.DatabaseError.Schema.ConstraintCreationFailed",
    });
    const started = untilDeadline(
      "Neo4j at bolt://db:7687",
      10_000,
      () => Promise.reject(refused),
      time.clock,
      time.sleep,
    );
    await expect(started).rejects.toThrow(StartupError);
    await expect(started).rejects.toThrow(
      "Neo4j at bolt://db:7687: Unable to create Constraint( name='agent_agent_id' )",
    );
    expect(time.slept).toEqual([]);
  });

  it("cut off at the deadline, it names the last failure an attempt reported, not the cut-off", async () => {
    const time = fakeTime();
    let attempts = 0;
    const attempt = () => {
      attempts++;
      // Failing until the deadline comes, then an attempt that never answers.
      return time.clock.now() < 10_000 ? Promise.reject(new Error("socket hang up")) : new Promise<never>(() => {});
    };
    const started = untilDeadline("Neo4j at bolt://db:7687", 10_000, attempt, time.clock, time.sleep);
    await expect(started).rejects.toThrow(
      "Neo4j at bolt://db:7687: not reachable within 10 s (STARTUP_TIMEOUT_MS): socket hang up",
    );
    expect(attempts).toBe(6);
    expect(time.slept).toEqual([2_000, 2_000, 2_000, 2_000, 2_000]);
  });

  it("an attempt that never answers at all is reported as such", async () => {
    const time = fakeTime();
    const started = untilDeadline("Kafka at k:9092", 0, () => new Promise<never>(() => {}), time.clock, time.sleep);
    await expect(started).rejects.toThrow(
      "Kafka at k:9092: not reachable within 0 s (STARTUP_TIMEOUT_MS): no answer before the start-up deadline",
    );
  });

  it("a stop request ends an attempt that has no answer yet at once, and is not a failure", async () => {
    const time = fakeTime();
    const stop = new AbortController();
    const started = untilDeadline(
      "Kafka at k:9092",
      60_000,
      () => new Promise<never>(() => {}),
      time.clock,
      time.sleep,
      stop.signal,
    );
    stop.abort("SIGTERM");
    await expect(started).rejects.toThrow(StartupStopped);
  });

  it("a stop request during the pause between attempts ends it before the next attempt", async () => {
    const stop = new AbortController();
    let attempts = 0;
    const started = untilDeadline(
      "Neo4j at bolt://db:7687",
      Date.now() + 60_000,
      () => {
        attempts += 1;
        return Promise.reject(new Error("connection refused"));
      },
      { now: () => Date.now() },
      () => new Promise<void>(() => {}),
      stop.signal,
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort("SIGTERM");
    await expect(started).rejects.toThrow(StartupStopped);
    expect(attempts).toBe(1);
  });
});
