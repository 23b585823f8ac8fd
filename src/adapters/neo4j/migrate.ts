import neo4j, { type Driver } from "neo4j-driver";
import { BACKFILL_OPEN_UNTIL } from "../../cypher/findings.js";
import {
  CONSTRAINT_NAMES,
  CONSTRAINTS,
  misscopedChecks,
  TENANT_CONSTRAINT_NAMES,
  TENANT_CONSTRAINTS,
} from "../../cypher/s6-constraints.js";
import { FatalError } from "../../errors.js";

/**
 * §6: the uniqueness constraints, created idempotently before any write, on every served database —
 * composite with the tenant on a database several tenants share. Such a database must not hold nodes
 * projected while it served one tenant (they carry no tenant), nor a database one tenant has to itself
 * nodes projected while several shared it (they carry one): either is refused, naming the database,
 * as a fatal error, since waiting cannot change it.
 */
export async function migrate(
  driver: Driver,
  databases: Iterable<string>,
  shared: ReadonlySet<string> = new Set(),
): Promise<void> {
  const served = [...new Set(databases)];
  for (const database of served) {
    const isShared = shared.has(database);
    await refuseMisscoped(driver, database, isShared, await constraintNames(driver, database), true);
    if (isShared) {
      for (const name of CONSTRAINT_NAMES)
        await driver.executeQuery(`DROP CONSTRAINT ${name} IF EXISTS`, {}, { database });
      for (const constraint of TENANT_CONSTRAINTS) await createIfAbsent(driver, constraint, database);
    } else {
      for (const constraint of CONSTRAINTS) await createIfAbsent(driver, constraint, database);
    }
    await driver.executeQuery("CALL db.awaitIndexes(300)", {}, { database });
  }
  await backfill(driver, served);
}

/**
 * Properties an older version did not write, given to the nodes it left (cypher/findings.ts
 * BACKFILL_OPEN_UNTIL); a look at every Finding, writing only what lacks them. Not DDL: `migrate` does
 * it, and `run` whether it migrates or verifies (`check`, which changes nothing, does not).
 */
export async function backfill(driver: Driver, databases: Iterable<string>): Promise<void> {
  for (const database of new Set(databases)) {
    // CALL … IN TRANSACTIONS runs only in an auto-commit transaction.
    const session = driver.session({ database });
    try {
      await session.run(BACKFILL_OPEN_UNTIL);
    } finally {
      await session.close();
    }
  }
}

/**
 * Neo4j's answers to a `CREATE … IF NOT EXISTS` that lost a race: another instance, starting at the
 * same time on the same empty database, created the same rule between this statement's check and its
 * creation ("An equivalent index already exists").
 */
const CREATED_MEANWHILE = new Set([
  "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
  "Neo.ClientError.Schema.ConstraintAlreadyExists",
  "Neo.ClientError.Schema.IndexAlreadyExists",
]);

/**
 * Runs one `CREATE … IF NOT EXISTS` of §6. When it lost a race it runs once more, so the outcome is
 * Neo4j's own: the rule the other instance created is seen, and the statement does nothing.
 */
async function createIfAbsent(driver: Driver, statement: string, database: string): Promise<void> {
  try {
    await driver.executeQuery(statement, {}, { database });
  } catch (error) {
    if (!CREATED_MEANWHILE.has(String((error as { code?: unknown }).code))) throw error;
    await driver.executeQuery(statement, {}, { database });
  }
}

/**
 * What `run` does instead of migrate with MIGRATE_ON_START=false, for a principal that may not create
 * constraints: checks that migrate has been run (every §6 constraint of the layout exists, and no node
 * is scoped for another layout), and otherwise stops start-up with one line saying what to run.
 */
export async function verifyMigrated(
  driver: Driver,
  databases: Iterable<string>,
  shared: ReadonlySet<string> = new Set(),
): Promise<void> {
  for (const database of new Set(databases)) {
    const isShared = shared.has(database);
    const present = await constraintNames(driver, database);
    const missing = (isShared ? TENANT_CONSTRAINT_NAMES : CONSTRAINT_NAMES).filter((name) => !present.has(name));
    if (missing.length > 0) {
      throw new FatalError(
        `database "${database}" lacks the §6 constraint(s) ${missing.join(", ")} (MIGRATE_ON_START=false); run "agent-graph-projector migrate" as a user allowed to create constraints`,
      );
    }
    await refuseMisscoped(driver, database, isShared, present, false);
  }
}

async function constraintNames(driver: Driver, database: string): Promise<ReadonlySet<string>> {
  const { records } = await driver.executeQuery(
    "SHOW CONSTRAINTS YIELD name RETURN collect(name) AS names",
    {},
    {
      database,
      routing: neo4j.routing.READ,
    },
  );
  return new Set((records[0]?.get("names") as string[] | undefined) ?? []);
}

/** Refuses a database holding a node projected for the other layout (s6-constraints.ts, misscopedChecks). */
async function refuseMisscoped(
  driver: Driver,
  database: string,
  isShared: boolean,
  present: ReadonlySet<string>,
  migrateStep: boolean,
): Promise<void> {
  const { probes, stale } = misscopedChecks(isShared, present, migrateStep);
  if (stale.length > 0) {
    throw new FatalError(
      `database "${database}" is shared by several tenants but has the one-tenant constraint(s) ${stale.join(", ")}, which forbid two tenants the same id (MIGRATE_ON_START=false); run "agent-graph-projector migrate" as a user allowed to create constraints: it checks the database and replaces them`,
    );
  }
  for (const { label, cypher } of probes) {
    const found = (await driver.executeQuery(cypher, {}, { database })).records[0];
    if (!found) continue;
    throw new FatalError(
      isShared
        ? `database "${database}" is shared by several tenants but holds ${label} nodes without tenant_id, projected while it served one tenant; give each tenant its own database, or clear it and rebuild`
        : `database "${database}" serves one tenant but holds ${label} nodes of tenant "${String(found.get("tenant"))}", projected while several tenants shared it; serve those tenants from it again, or clear it and rebuild`,
    );
  }
}
