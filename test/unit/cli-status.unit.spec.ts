import { describe, expect, it } from "vitest";
import { buildStatus, parseMetrics, type StatusInputs } from "../../src/cli/status-report.js";

const METRICS = `# HELP agp_partition_paused 1 while the partition is paused, by reason
# TYPE agp_partition_paused gauge
agp_partition_paused{topic="outcome-created",partition="1",reason="failure"} 1
agp_last_commit_timestamp_seconds{topic="outcome-created",partition="0"} 1780000000.5
agp_last_commit_timestamp_seconds{topic="outcome-created",partition="1"} 1780000010
agp_oldest_unapplied_record_age_seconds{topic="outcome-created",partition="0"} 0
agp_oldest_unapplied_record_age_seconds{topic="outcome-created",partition="1"} 42.5
agp_build_info{version="0.1.0",note="a \\"quoted\\" value"} 1
not a sample line
`;

const base: StatusInputs = {
  group: "g",
  state: "Stable",
  members: [
    {
      memberId: "agent-graph-projector-0000-aaaaaaaa",
      clientId: "agent-graph-projector",
      host: "10.0.0.7",
      assignment: { "outcome-created": [1, 0] },
    },
  ],
  positions: [
    { topic: "outcome-created", partition: 1, committed: "90", high: 100, low: 0 },
    { topic: "outcome-created", partition: 0, committed: "-1", high: 5, low: 2 },
  ],
  metrics: [{ url: "http://10.0.0.7:9464/metrics", samples: parseMetrics(METRICS) }],
  deadLetterReasons: ["invalid-field", "neo4j-rejected", "invalid-field"],
  unpublished: [{ tenant: "default", count: 3 }],
  judgement: [{ database: "neo4j", waiting: 4, oldestWaitSeconds: 2.5, judgedThrough: "2025-12-31T23:59:50.000Z" }],
  now: Date.UTC(2026, 0, 1),
};

describe("status from what it gathered", () => {
  it("parses the Prometheus text format's samples and labels", () => {
    const samples = parseMetrics(METRICS);
    expect(samples).toHaveLength(6);
    expect(samples[0]).toEqual({
      name: "agp_partition_paused",
      labels: { topic: "outcome-created", partition: "1", reason: "failure" },
      value: 1,
    });
    expect(samples[5]?.labels.note).toBe('a "quoted" value');
  });

  it("per partition: owner, committed offset, lag, last commit, pause reason and age; in order", () => {
    const report = buildStatus(base);
    expect(report.partitions).toEqual([
      {
        topic: "outcome-created",
        partition: 0,
        member: "10.0.0.7/aaaaaaaa",
        committed: null,
        end: 5,
        lag: 3,
        lastCommit: new Date(1_780_000_000_500).toISOString(),
        paused: null,
        oldestUnappliedSeconds: 0,
      },
      {
        topic: "outcome-created",
        partition: 1,
        member: "10.0.0.7/aaaaaaaa",
        committed: 90,
        end: 100,
        lag: 10,
        lastCommit: new Date(1_780_000_010_000).toISOString(),
        paused: "failure",
        oldestUnappliedSeconds: 42.5,
      },
    ]);
    expect(report.paused).toEqual([
      { topic: "outcome-created", partition: 1, reason: "failure", member: "10.0.0.7/aaaaaaaa" },
    ]);
    expect(report.totalLag).toBe(13);
    expect(report.oldestUnappliedSeconds).toBe(42.5);
    expect(report.members).toEqual([
      {
        member: "10.0.0.7/aaaaaaaa",
        memberId: "agent-graph-projector-0000-aaaaaaaa",
        host: "10.0.0.7",
        partitions: 2,
        metrics: "read",
      },
    ]);
    expect(report.deadLetters).toEqual([
      { reason: "invalid-field", count: 2 },
      { reason: "neo4j-rejected", count: 1 },
    ]);
    expect(report.unpublishedFindings).toEqual([{ tenant: "default", count: 3 }]);
    expect(report.judgement).toEqual(base.judgement);
    expect(report.notes).toEqual([]);
  });

  it("says what it could not know: metrics unreachable, no member at all", () => {
    const unreachable = buildStatus({
      ...base,
      metrics: [{ url: "http://10.0.0.7:9464/metrics", error: "connect ECONNREFUSED" }],
    });
    expect(unreachable.partitions.map((p) => [p.lastCommit, p.paused, p.oldestUnappliedSeconds])).toEqual([
      [null, null, null],
      [null, null, null],
    ]);
    expect(unreachable.oldestUnappliedSeconds).toBeNull();
    expect(unreachable.members[0]?.metrics).toBe("unreachable");
    expect(unreachable.notes).toEqual([expect.stringMatching(/10\.0\.0\.7:9464.*unreachable.*ECONNREFUSED/)]);

    const empty = buildStatus({ ...base, state: "Empty", members: [], metrics: [] });
    expect(empty.partitions.every((p) => p.member === null)).toBe(true);
    expect(empty.notes).toEqual(["no member is in the group: nothing is consuming"]);
  });
});
