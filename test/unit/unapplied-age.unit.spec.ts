import { describe, expect, it } from "vitest";
import { ageSeconds, oldestUnapplied } from "../../src/pipeline/unapplied-age.js";

const records = (...timestamps: string[]) => timestamps.map((timestamp) => ({ timestamp }));

describe("the oldest unapplied record's age", () => {
  it("takes the oldest Kafka timestamp of the records still to apply, in whatever order they carry them", () => {
    expect(oldestUnapplied(records("1000", "900", "1100"), 5_000)).toBe(900);
    expect(oldestUnapplied(records("1000", "900", "1100").slice(2), 5_000)).toBe(1100);
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
