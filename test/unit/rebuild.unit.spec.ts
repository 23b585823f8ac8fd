import { describe, expect, it } from "vitest";
import type { Statement } from "../../src/cypher/statement.js";
import { TransientError } from "../../src/errors.js";
import { Rejection } from "../../src/model/fate.js";
import { RebuildFailedError, rebuildRegistry } from "../../src/operations/rebuild.js";
import type { Decoder, GraphWriter, GroupAdmin, RecordSink, SinkItem, SourceRecord } from "../../src/ports.js";
import { snapshot } from "../support/builders.js";

/**
 * The rebuild's order of work over in-memory ports: what is written in which transaction, what is
 * only tried, and what is dead-lettered before anything is written.
 */
const topic = "registry";
const tenants = ["a", "b", "c"];
const rules = { servedTenants: new Set(tenants), maxListLength: 10, maxIdLength: 256, maxTextLength: 4096 };
const decoder: Decoder = {
  async decode(_stream, value) {
    try {
      return JSON.parse(value.toString()) as Record<string, unknown>;
    } catch {
      return new Rejection("not-avro", "not JSON");
    }
  },
};
const admin: GroupAdmin = {
  assertNoActiveMembers: async () => {},
  historyGaps: async () => [],
  resetOffsets: async () => [],
};

function records(agents: readonly [tenant: string, agent: string][], garbled = 0): SourceRecord[] {
  const good = agents.map(([tenant, agent], offset) => {
    const { kind: _kind, ...value } = snapshot(agent, { tenant_id: tenant });
    return {
      topic,
      partition: 0,
      offset: String(offset),
      timestamp: "1",
      key: Buffer.from(`${tenant}/${agent}`),
      value: Buffer.from(JSON.stringify(value)),
      headers: {},
    };
  });
  const bad = Array.from({ length: garbled }, (_, n) => ({
    ...(good[0] as SourceRecord),
    offset: String(1000 + n),
    value: Buffer.from("garbled"),
  }));
  return [...good, ...bad];
}

/** The agents a list of statements writes through §3.1. */
const agentsOf = (statements: readonly Statement[]) =>
  statements.filter((s) => s.name === "3.1").flatMap((s) => s.params.rows.map((row) => String(row.agent_id)));

/** Neo4j as far as the rebuild can tell: agents named `bad-*` are refused, tenant `down` cannot be written. */
function fakeNeo4j(log: string[]) {
  const run = (kind: string, database: string, statements: readonly Statement[]) => {
    const agents = agentsOf(statements);
    log.push(`${kind} ${database} ${agents.join(",")}`);
    if (database === "down") throw new TransientError("Neo4j unavailable");
    if (agents.some((agent) => agent.startsWith("bad-")))
      throw Object.assign(new Error("Property value is too large to index"), {
        code: "Neo.ClientError.Schema.IndexEntrySizeExceeded",
      });
  };
  const graph: GraphWriter = {
    async apply(database, statements) {
      run("apply", database, statements);
      return [];
    },
    async trial(database, statements) {
      run("trial", database, statements);
    },
    read: async () => [],
    ping: async () => {},
    close: async () => {},
  };
  const sink: RecordSink = {
    async send(items: readonly SinkItem[]) {
      for (const item of items)
        if (item.kind === "dead-letter") log.push(`dead-letter ${item.record.offset} ${item.fate.reason}`);
      return { tooLarge: new Map() };
    },
  };
  return { graph, sink };
}

const rebuild = (
  log: string[],
  input: SourceRecord[],
  routes: { tenantId: string; database: string }[] = [{ tenantId: "a", database: "db-a" }],
) =>
  rebuildRegistry({
    ...fakeNeo4j(log),
    admin,
    reader: {
      async readToEnd(_topics, onRecord) {
        input.forEach(onRecord);
      },
    },
    groupId: "g",
    topic,
    decoder,
    tenants: routes,
    shared: new Set(),
    rules,
    progress: (step) => log.push(`progress ${JSON.stringify(step)}`),
  });

describe("rebuild: all or nothing per tenant", () => {
  it("dead-letters unreadable records before it writes, then wipes and applies a tenant in one transaction", async () => {
    const log: string[] = [];
    const report = await rebuild(
      log,
      records(
        [
          ["a", "a-agt-001"],
          ["a", "a-agt-002"],
        ],
        1,
      ),
    );
    expect(log.filter((line) => !line.startsWith("progress"))).toEqual([
      "dead-letter 1000 not-avro",
      "apply db-a a-agt-001,a-agt-002",
    ]);
    expect(report.tenants).toEqual([
      { tenant: "a", database: "db-a", status: "rebuilt", records: 2, agents: 2, rejected: 0 },
    ]);
    expect(report.deadLettered).toMatchObject([{ source: "registry:0:1000", reason: "not-avro" }]);
  });

  it("says what it is doing as each step starts", async () => {
    const log: string[] = [];
    await rebuild(
      log,
      records(
        [
          ["a", "a-agt-001"],
          ["b", "b-agt-001"],
        ],
        1,
      ),
      [
        { tenantId: "a", database: "db-a" },
        { tenantId: "b", database: "db-b" },
      ],
    );
    expect(log).toEqual([
      `progress {"step":"reading","topic":"${topic}"}`,
      'progress {"step":"read","records":3,"unreadable":1}',
      "dead-letter 1000 not-avro",
      'progress {"step":"writing","tenant":"a","database":"db-a","records":1}',
      "apply db-a a-agt-001",
      'progress {"step":"writing","tenant":"b","database":"db-b","records":1}',
      "apply db-b b-agt-001",
    ]);
  });

  it("the wipe opens the transaction that applies the records", async () => {
    const statements: Statement[][] = [];
    await rebuildRegistry({
      ...fakeNeo4j([]),
      graph: {
        ...fakeNeo4j([]).graph,
        async apply(_database, s) {
          statements.push([...s]);
          return [];
        },
      },
      admin,
      reader: {
        async readToEnd(_topics, onRecord) {
          records([["a", "a-agt-001"]]).forEach(onRecord);
        },
      },
      groupId: "g",
      topic,
      decoder,
      tenants: [{ tenantId: "a", database: "db-a" }],
      shared: new Set(),
      rules,
    });
    expect(statements.map((s) => s.map(({ name }) => name))).toEqual([
      ["rebuild-wipe", "rebuild-wipe", "rebuild-wipe", "3.1", "3.2", "registry-history"],
    ]);
  });

  it("records Neo4j refuses are found in trials that write nothing, dead-lettered, and the rest applied in one transaction", async () => {
    const log: string[] = [];
    const agents = ["a-agt-1", "bad-agt-1", "a-agt-2", "a-agt-3", "a-agt-4", "bad-agt-2", "a-agt-5"];
    const report = await rebuild(log, records(agents.map((agent) => ["a", agent])));
    const applied = log.filter((line) => line.startsWith("apply"));
    expect(applied).toEqual([`apply db-a ${agents.join(",")}`, "apply db-a a-agt-1,a-agt-2,a-agt-3,a-agt-4,a-agt-5"]);
    expect(log.filter((line) => line.startsWith("dead-letter"))).toEqual([
      "dead-letter 1 neo4j-rejected",
      "dead-letter 5 neo4j-rejected",
    ]);
    // Dead-lettered before the write that leaves them out.
    expect(log.indexOf("dead-letter 5 neo4j-rejected")).toBeLessThan(log.lastIndexOf(applied[1] as string));
    expect(report.tenants).toMatchObject([{ status: "rebuilt", records: 5, rejected: 2 }]);
    expect(report.deadLettered.map((d) => [d.source, d.reason, d.message])).toEqual([
      ["registry:0:1", "neo4j-rejected", expect.stringMatching(/^Neo\.ClientError\.Schema\.IndexEntrySizeExceeded: /)],
      ["registry:0:5", "neo4j-rejected", expect.stringMatching(/^Neo\.ClientError\.Schema\.IndexEntrySizeExceeded: /)],
    ]);
  });

  it("a tenant that fails leaves the ones before it rebuilt, and it and the ones after it untouched", async () => {
    const log: string[] = [];
    const rebuilding = rebuild(
      log,
      records([
        ["a", "a-agt-001"],
        ["b", "b-agt-001"],
        ["c", "c-agt-001"],
      ]),
      [
        { tenantId: "a", database: "db-a" },
        { tenantId: "b", database: "down" },
        { tenantId: "c", database: "db-c" },
      ],
    );
    const error = await rebuilding.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RebuildFailedError);
    const failed = error as RebuildFailedError;
    expect(failed.message).toMatch(
      /^rebuild of tenant "b" failed and was rolled back \(its graph is as it was\): Neo4j unavailable/,
    );
    expect(failed.report.tenants.map(({ tenant, status }) => [tenant, status])).toEqual([
      ["a", "rebuilt"],
      ["b", "failed"],
      ["c", "not attempted"],
    ]);
    // A failure that is not the data's is not narrowed down: nothing is tried or dead-lettered.
    expect(log.filter((line) => !line.startsWith("progress"))).toEqual([
      "apply db-a a-agt-001",
      "apply down b-agt-001",
    ]);
  });
});
