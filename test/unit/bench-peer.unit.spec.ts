import { describe, expect, it } from "vitest";
import { compareGraphs } from "../../bench/lib/correctness.js";
import { patchPom } from "../../bench/peer/build.js";
import { PEER_STATEMENTS, timestampFields } from "../../bench/peer/statements.js";
import { connectorConfig } from "../../bench/peer/worker.js";
import { ESCALATION_DECLARED } from "../../src/cypher/s3_2-escalation-declared.js";
import { ESCALATION } from "../../src/cypher/s3_4-escalation-observed.js";
import { canonicalize } from "../../src/model/graph.js";

describe("the peer's statements", () => {
  it("carry the projector's §3 statements, per record, without a final RETURN", () => {
    for (const cypher of Object.values(PEER_STATEMENTS)) {
      expect(cypher).not.toContain("$rows");
      expect(cypher).not.toMatch(/\nRETURN [^\n]*$/);
      expect(cypher.startsWith("WITH event")).toBe(true);
    }
    // §3.2's reconciliation and §3.4's ON CREATE increment are there word for word.
    expect(PEER_STATEMENTS["registry-mutation"]).toContain(
      "WHERE stale.declared = true AND NOT t.agent_id IN escalation_path",
    );
    expect(ESCALATION_DECLARED).toContain("WHERE stale.declared = true AND NOT t.agent_id IN escalation_path");
    expect(PEER_STATEMENTS["escalation-edge"]).toContain("ON CREATE SET r.observed_count = r.observed_count + 1");
    expect(ESCALATION).toContain("ON CREATE SET r.observed_count = r.observed_count + 1");
    // ESCALATED_TO's fate report (OPTIONAL MATCH of the producers) is the projector's, not the peer's.
    expect(PEER_STATEMENTS["escalation-edge"]).not.toContain("OPTIONAL MATCH");
  });

  it("give every time the statements read as epoch milliseconds a value converted from the record's LocalDateTime", () => {
    for (const [stream, cypher] of Object.entries(PEER_STATEMENTS)) {
      const header = cypher.split("\n")[0] as string;
      const readAsMillis = [...cypher.matchAll(/epochMillis: toInteger\(row\.(\w+)\)/g)].map((m) => m[1]);
      expect(readAsMillis.length, stream).toBeGreaterThan(0);
      for (const field of readAsMillis)
        expect(header, `${stream}: ${field}`).toMatch(new RegExp(`\\b${field}: datetime\\(`));
    }
    expect(timestampFields("registry-mutation")).toEqual(["occurred_at"]);
    expect(timestampFields("outcome-created")).toEqual(["created_at"]);
    expect(timestampFields("escalation-edge")).toEqual(["observed_at"]);
  });

  it("go one per topic into the connector's Cypher strategy", () => {
    const config = connectorConfig({
      topics: { a: "WITH event AS row RETURN 1", b: "X" },
      neo4j: { uri: "bolt://h:1", user: "u", password: "p", database: "neo4j" },
      batchSize: 2000,
      tasks: 2,
    });
    expect(config.topics).toBe("a,b");
    expect(config["neo4j.cypher.topic.a"]).toBe("WITH event AS row RETURN 1");
    expect(config["neo4j.batch-size"]).toBe("2000");
    expect(config["consumer.override.max.poll.records"]).toBe("2000");
    expect(config["tasks.max"]).toBe("2");
  });
});

describe("patchPom", () => {
  it("drops test-scope dependencies, the testing module and repositories, and nothing else", () => {
    const pom = `<project><modules><module>common</module><module>testing</module></modules>
<dependencies>
  <dependency><groupId>a</groupId><artifactId>kept</artifactId></dependency>
  <dependency><groupId>io.confluent</groupId><artifactId>x</artifactId><scope>test</scope></dependency>
  <dependency><groupId>b</groupId><artifactId>also-kept</artifactId><scope>provided</scope></dependency>
</dependencies>
<repositories><repository><id>confluent</id></repository></repositories></project>`;
    const patched = patchPom(pom);
    expect(patched).toContain("<artifactId>kept</artifactId>");
    expect(patched).toContain("<artifactId>also-kept</artifactId>");
    expect(patched).not.toContain("io.confluent");
    expect(patched).not.toContain("<module>testing</module>");
    expect(patched).toContain("<module>common</module>");
    expect(patched).not.toContain("<repositories>");
  });
});

describe("compareGraphs", () => {
  const rel = (from: string, type: string, to: string, props: Record<string, string | number | boolean> = {}) => ({
    from,
    type,
    to,
    props,
  });
  const nodes = [
    { label: "Agent" as const, props: { agent_id: "a" } },
    { label: "Agent" as const, props: { agent_id: "b" } },
  ];
  it("counts what the reader of §4 would notice", () => {
    const expected = canonicalize(nodes, [
      rel("Agent:a", "PRODUCED", "Outcome:1"),
      rel("Agent:b", "PRODUCED", "Outcome:2"),
      rel("Outcome:1", "OBSERVED", "Outcome:2", { recorded_at: 5 }),
      rel("Outcome:1", "ESCALATED_TO", "Outcome:2", { observed_at: 5 }),
      rel("Agent:a", "CAN_ESCALATE_TO", "Agent:b", { declared: true, observed_count: 1 }),
    ]);
    const actual = canonicalize(nodes, [
      rel("Agent:a", "PRODUCED", "Outcome:1"),
      rel("Outcome:1", "ESCALATED_TO", "Outcome:2", { observed_at: 5 }),
      rel("Agent:a", "CAN_ESCALATE_TO", "Agent:b", { declared: false, observed_count: 0 }),
    ]);
    const errors = compareGraphs(expected, actual);
    expect(errors).toMatchObject({
      missingProduced: 1,
      missingObserved: 1,
      missingEscalatedTo: 0,
      wrongObservedCount: 1,
      wrongDeclared: 1,
      otherDifferences: 0,
    });
    expect(compareGraphs(expected, expected)).toMatchObject({
      missingProduced: 0,
      missingObserved: 0,
      wrongObservedCount: 0,
      wrongDeclared: 0,
      otherDifferences: 0,
    });
  });
});
