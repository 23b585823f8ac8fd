import neo4j, { type Driver } from "neo4j-driver";
import type { Config } from "../../config.js";
import { CONSTRAINTS } from "../../cypher/s6-constraints.js";
import type { Statement, StatementResult } from "../../cypher/statement.js";
import type { GraphWriter, Metrics } from "../../ports.js";
import { toPlain } from "./values.js";

export function createDriver(config: Config["neo4j"]): Driver {
  return neo4j.driver(config.uri, neo4j.auth.basic(config.user, config.password ?? ""), {
    maxConnectionPoolSize: config.maxPoolSize,
    connectionAcquisitionTimeout: 30_000,
    maxTransactionRetryTime: 15_000,
    userAgent: "agent-graph-projector",
    disableLosslessIntegers: false,
  });
}

/**
 * The only place statements meet Neo4j. A batch's statements run in order in one managed write
 * transaction; the driver retries it on transient errors (deadlocks, leader switches, lost
 * connections), which is safe because every statement is an idempotent MERGE. Each extra attempt is
 * counted. What still fails after the driver's retry budget reaches the caller, which pauses.
 */
export function createGraphWriter(driver: Driver, metrics: Metrics, txTimeoutMs: number): GraphWriter {
  return {
    async apply(database: string, statements: readonly Statement[]): Promise<StatementResult[]> {
      const session = driver.session({ database, defaultAccessMode: neo4j.session.WRITE });
      let attempts = 0;
      try {
        return await session.executeWrite(
          async (tx) => {
            attempts += 1;
            if (attempts > 1) metrics.recordTransactionRetry();
            const results: StatementResult[] = [];
            for (const statement of statements) {
              const result = await tx.run(statement.cypher, statement.params);
              const counters = result.summary.counters.updates();
              results.push({
                name: statement.name,
                records: result.records.map((record) => toPlain(record.toObject()) as Record<string, unknown>),
                counters: {
                  nodesCreated: counters.nodesCreated,
                  nodesDeleted: counters.nodesDeleted,
                  relationshipsCreated: counters.relationshipsCreated,
                  relationshipsDeleted: counters.relationshipsDeleted,
                  propertiesSet: counters.propertiesSet,
                },
              });
            }
            return results;
          },
          { timeout: txTimeoutMs },
        );
      } finally {
        await session.close();
      }
    },

    async read(database: string, cypher: string, params: Record<string, unknown> = {}) {
      const session = driver.session({ database, defaultAccessMode: neo4j.session.READ });
      try {
        const result = await session.executeRead((tx) => tx.run(cypher, params), { timeout: txTimeoutMs });
        return result.records.map((record) => toPlain(record.toObject()) as Record<string, unknown>);
      } finally {
        await session.close();
      }
    },

    async runAutoCommit(database: string, cypher: string, params: Record<string, unknown> = {}) {
      const session = driver.session({ database, defaultAccessMode: neo4j.session.WRITE });
      try {
        await session.run(cypher, params);
      } finally {
        await session.close();
      }
    },

    async ping() {
      await driver.executeQuery("RETURN 1", {}, { routing: neo4j.routing.READ });
    },

    close: () => driver.close(),
  };
}

/** §6: the uniqueness constraints, created idempotently before any write, on every served database. */
export async function migrate(driver: Driver, databases: Iterable<string>): Promise<void> {
  for (const database of new Set(databases)) {
    for (const constraint of CONSTRAINTS) await driver.executeQuery(constraint, {}, { database });
    await driver.executeQuery("CALL db.awaitIndexes(300)", {}, { database });
  }
}
