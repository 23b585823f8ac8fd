import { describe, expect, it } from "vitest";
import { createHandedOnMemory } from "../../src/adapters/kafka/handed-on.js";
import type { SinkItem } from "../../src/ports.js";

const item = (offset: number, kind: "retry" | "dead-letter" = "retry"): SinkItem =>
  ({
    kind,
    stream: "outcome-created",
    record: { topic: "t", partition: 0, offset: String(offset), timestamp: "0", key: null, value: null, headers: {} },
  }) as unknown as SinkItem;

describe("handed-on memory", () => {
  it("knows an item by its source coordinates and kind", () => {
    const memory = createHandedOnMemory();
    memory.remember(item(1), { tooLarge: "why" });
    expect(memory.get(item(1))).toEqual({ tooLarge: "why" });
    expect(memory.get(item(1, "dead-letter"))).toBeUndefined();
    expect(memory.get(item(2))).toBeUndefined();
    memory.forget([item(1)]);
    expect(memory.get(item(1))).toBeUndefined();
    expect(memory.size).toBe(0);
  });

  it("holds at most its capacity, dropping the oldest", () => {
    const memory = createHandedOnMemory(3);
    for (let offset = 0; offset < 10; offset++) memory.remember(item(offset), {});
    expect(memory.size).toBe(3);
    expect(memory.get(item(6))).toBeUndefined();
    expect(memory.get(item(9))).toEqual({});
  });
});
