import { describe, expect, it } from "vitest";
import { retryDelayMs } from "../../src/adapters/neo4j/graph-writer.js";

describe("retryDelayMs", () => {
  const middle = () => 0.5;

  it("starts from the failed attempt's duration and doubles per attempt", () => {
    expect(retryDelayMs(1, 300, middle)).toBe(300);
    expect(retryDelayMs(2, 300, middle)).toBe(600);
    expect(retryDelayMs(3, 300, middle)).toBe(1200);
  });

  it("waits at least 25 ms after an attempt that failed at once", () => {
    expect(retryDelayMs(1, 0, middle)).toBe(25);
    expect(retryDelayMs(2, 3, middle)).toBe(50);
  });

  it("is capped at 2 s", () => {
    expect(retryDelayMs(10, 300, middle)).toBe(2000);
    expect(retryDelayMs(1, 60_000, middle)).toBe(2000);
  });

  it("jitters by ±50% so that two deadlocked writers part", () => {
    expect(retryDelayMs(1, 400, () => 0)).toBe(200);
    expect(retryDelayMs(1, 400, () => 0.999)).toBe(600);
  });
});
