import type { Driver } from "neo4j-driver";
import type { PrometheusMetrics } from "../adapters/metrics/prometheus.js";
import { createDriver, createGraphWriter, credentialsAccepted } from "../adapters/neo4j/graph-writer.js";
import { backfill, migrate, verifyMigrated } from "../adapters/neo4j/migrate.js";
import { sharedDatabases } from "../config.js";
import type { GraphWriter } from "../ports.js";
import { redactUserinfo } from "../redact.js";
import type { StartupContext } from "./context.js";

/** The two ways start-up can make sure of the §6 constraints on the served databases. */
export interface GraphSchema {
  migrate(): Promise<void>;
  verify(): Promise<void>;
  /** What an older version left without a property this one seeks by (migrate does it too). */
  backfill(): Promise<void>;
}

export interface OpenGraph {
  readonly driver: Driver;
  readonly graph: GraphWriter;
  readonly schema: GraphSchema;
}

/** The connect phase for Neo4j: the driver (it connects lazily) and the writer over it. */
export function openGraph(
  ctx: StartupContext,
  metrics: PrometheusMetrics,
  databases: ReadonlyMap<string, string>,
): OpenGraph {
  const { config, clock } = ctx;
  const driver = createDriver(config.neo4j);
  ctx.opened(() => driver.close());
  const graph = createGraphWriter(driver, metrics, config.neo4j.txTimeoutMs, config.neo4j.maxConcurrentWrites, {
    clock,
  });
  const shared = sharedDatabases(config.tenants);
  return {
    driver,
    graph,
    schema: {
      // Past this phase the password has worked once: a refusal later may be a rotation (credentials.ts).
      migrate: () => migrate(driver, databases.values(), shared).then(() => credentialsAccepted(driver)),
      verify: () => verifyMigrated(driver, databases.values(), shared).then(() => credentialsAccepted(driver)),
      backfill: () => backfill(driver, databases.values()),
    },
  };
}

/**
 * The verify-or-migrate phase: creates the constraints (MIGRATE_ON_START) or, for a principal that
 * may not, checks that they exist, then (`writes`: `run`, not `check`) backfills what migrate would.
 * Nothing is consumed before this has succeeded.
 */
export async function prepareGraph(
  ctx: StartupContext,
  schema: GraphSchema,
  databases: ReadonlyMap<string, string>,
  writes: boolean,
): Promise<void> {
  await ctx.step(`Neo4j at ${redactUserinfo(ctx.config.neo4j.uri)}`, () =>
    ctx.config.migrateOnStart ? schema.migrate() : schema.verify().then(() => (writes ? schema.backfill() : undefined)),
  );
  ctx.logger.info({ databases: [...new Set(databases.values())] }, "constraints in place");
}
