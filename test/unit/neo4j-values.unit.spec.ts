import neo4j from "neo4j-driver";
import { describe, expect, it } from "vitest";
import { plainRecord, serverMs, toPlain } from "../../src/adapters/neo4j/values.js";

describe("Neo4j values to plain values", () => {
  it("passes scalars through and turns null and undefined into null", () => {
    expect([true, false, 0, 1.5, "", "text"].map(toPlain)).toEqual([true, false, 0, 1.5, "", "text"]);
    expect(toPlain(null)).toBeNull();
    expect(toPlain(undefined)).toBeNull();
  });

  it("reads integers as numbers and datetimes as epoch milliseconds", () => {
    expect(toPlain(neo4j.int(42))).toBe(42);
    expect(toPlain(neo4j.types.DateTime.fromStandardDate(new Date(1_700_000_000_123)))).toBe(1_700_000_000_123);
    expect(toPlain(new neo4j.types.Date(2026, 12, 3))).toBe("2026-12-03");
    expect(toPlain(new neo4j.types.Duration(0, 1, 30, 0))).toBe("P1DT30S");
  });

  it("reads nodes and relationships as their properties, lists and maps item by item", () => {
    const node = new neo4j.types.Node(neo4j.int(1), ["Agent"], { agent_id: "a", version: neo4j.int(3) }, "4:x:1");
    const relationship = new neo4j.types.Relationship(
      neo4j.int(2),
      neo4j.int(1),
      neo4j.int(3),
      "PRODUCED",
      { n: neo4j.int(7) },
      "5:x:2",
      "4:x:1",
      "4:x:3",
    );
    expect(toPlain(node)).toEqual({ agent_id: "a", version: 3 });
    expect(toPlain(relationship)).toEqual({ n: 7 });
    expect(toPlain([neo4j.int(1), [neo4j.int(2)], null])).toEqual([1, [2], null]);
    expect(toPlain({ i: neo4j.int(5), nested: { existed: true, at: null } })).toEqual({
      i: 5,
      nested: { existed: true, at: null },
    });
  });

  it("reads a result record as a plain object of its fields", () => {
    const record = new neo4j.Record(["i", "existed", "ids"], [neo4j.int(9), false, [neo4j.int(1), neo4j.int(2)]]);
    expect(plainRecord(record)).toEqual({ i: 9, existed: false, ids: [1, 2] });
    expect(plainRecord(new neo4j.Record([], []))).toEqual({});
  });
});

describe("Neo4j's own time on a statement", () => {
  it("adds the time to the first row and the time to the last, as integers or numbers", () => {
    expect(serverMs({ resultAvailableAfter: neo4j.int(12), resultConsumedAfter: neo4j.int(3) })).toBe(15);
    expect(serverMs({ resultAvailableAfter: 4, resultConsumedAfter: 0 })).toBe(4);
  });

  it("says nothing when the server did not say (the driver's -1, or no value)", () => {
    expect(serverMs({ resultAvailableAfter: neo4j.int(-1), resultConsumedAfter: neo4j.int(-1) })).toBeUndefined();
    expect(serverMs({ resultAvailableAfter: undefined, resultConsumedAfter: undefined })).toBeUndefined();
  });
});
