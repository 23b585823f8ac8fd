import type { Driver } from "neo4j-driver";
import { describe, expect, it } from "vitest";
import { migrate } from "../../src/adapters/neo4j/migrate.js";
import { BACKFILL_OPEN_UNTIL } from "../../src/cypher/findings.js";
import { CONSTRAINTS } from "../../src/cypher/s6-constraints.js";

/** Neo4j's error as the driver raises it. */
const neo4jError = (code: string, message: string) => Object.assign(new Error(message), { code });

/**
 * A Neo4j stand-in on which another instance wins the race for `raced`: the first run of that
 * statement fails with `error`, as Neo4j answers the loser of two `CREATE … IF NOT EXISTS` on an
 * empty database; asked again, it does nothing. Every other statement succeeds.
 */
function racedDriver(raced: string, error: Error) {
  const ran: string[] = [];
  let lost = false;
  const driver = {
    async executeQuery(cypher: string) {
      ran.push(cypher);
      if (cypher === raced && !lost) {
        lost = true;
        throw error;
      }
      return { records: cypher.startsWith("SHOW CONSTRAINTS") ? [{ get: () => [] }] : [] };
    },
    // The backfill's auto-commit query.
    session: () => ({ run: async (cypher: string) => void ran.push(cypher), close: async () => {} }),
  } as unknown as Driver;
  return { driver, ran };
}

describe("migrate when another instance creates the same rule at the same time", () => {
  const index = CONSTRAINTS.find((statement) => statement.startsWith("CREATE INDEX")) as string;

  it("takes 'An equivalent index already exists' as done, and puts the rest of §6 in place", async () => {
    const { driver, ran } = racedDriver(
      index,
      neo4jError(
        "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
        "An equivalent index already exists, 'Index( id=7, name='finding_tenant_source' )'.",
      ),
    );
    await migrate(driver, ["neo4j"]);
    for (const statement of CONSTRAINTS) expect(ran).toContain(statement);
    expect(ran.filter((cypher) => cypher === index)).toHaveLength(2);
    expect(ran.at(-1)).toBe(BACKFILL_OPEN_UNTIL);
  });

  it("still fails on any other refusal", async () => {
    const { driver } = racedDriver(
      index,
      neo4jError("Neo.ClientError.Security.Forbidden", "Schema operations are not allowed for user 'projector'"),
    );
    await expect(migrate(driver, ["neo4j"])).rejects.toThrow("Schema operations are not allowed");
  });
});
