import type { Driver, EagerResult } from "neo4j-driver";

/**
 * SHOW TRANSACTIONS, asked again when Neo4j fails the listing itself with "Invalid thread ID
 * parameter: -1". The stack's Neo4j tracks each query's CPU time; listing a query at the moment it
 * has no executing thread asks the JVM for the CPU time of thread -1, which it refuses. The listing
 * races, not the transactions it lists: the next one answers.
 */
export async function showTransactions(
  driver: Driver,
  cypher: string,
  params: Record<string, unknown> = {},
  config: { database?: string } = {},
): Promise<EagerResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await driver.executeQuery(cypher, params, config);
    } catch (error) {
      const listingRaced = error instanceof Error && error.message.includes("Invalid thread ID parameter");
      if (!listingRaced || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
