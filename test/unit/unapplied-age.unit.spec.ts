import { describe, expect, it } from "vitest";
import { ageSeconds, oldestUnapplied, oldestUnappliedFrom } from "../../src/pipeline/unapplied-age.js";

const records = (...timestamps: string[]) => timestamps.map((timestamp) => ({ timestamp }));

describe("the oldest unapplied record's age", () => {
  it("takes the oldest Kafka timestamp of the records still to apply, in whatever order they carry them", () => {
    expect(oldestUnapplied(records("1000", "900", "1100"), 5_000)).toBe(900);
    expect(oldestUnapplied(records("1000", "900", "1100").slice(2), 5_000)).toBe(1100);
  });

  it("gives each tail of a batch applied sub-batch by sub-batch what a scan of that tail gives", () => {
    const batch = records("1000", "900", "-1", "1100", "950", "1200");
    const from = oldestUnappliedFrom(batch, 5_000);
    for (let start = 0; start <= batch.length; start++)
      expect(from(start), `from ${start}`).toBe(oldestUnapplied(batch.slice(start), 5_000));
    expect([0, 2, 3, 5, 6].map(from)).toEqual([900, 950, 950, 1200, undefined]);
  });

  it("has nothing to say when nothing waits", () => {
    expect(oldestUnapplied([], 5_000)).toBeUndefined();
    expect(ageSeconds(undefined, 5_000)).toBe(0);
    expect(ageSeconds(null, 5_000)).toBe(0);
  });

  it("counts a record without a usable timestamp from when it was fetched", () => {
    expect(oldestUnapplied(records("-1", "7000"), 5_000)).toBe(5_000);
    expect(oldestUnapplied(records("not a time"), 5_000)).toBe(5_000);
  });

  it("is now minus that timestamp in seconds, and never negative when a producer's clock runs ahead", () => {
    expect(ageSeconds(1_000, 3_500)).toBe(2.5);
    expect(ageSeconds(1_000, 61_000)).toBe(60);
    expect(ageSeconds(4_000, 3_500)).toBe(0);
  });
});
