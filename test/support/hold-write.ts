import neo4j from "neo4j-driver";
import type { Harness } from "./harness.js";

/**
 * Runs `cypher` (which returns its count as `n`, expected to be `expected`) in a write transaction left
 * open, and returns the function that rolls it back: its locks are held until then.
 */
export async function holdWrite(
  harness: Harness,
  cypher: string,
  params: Record<string, unknown>,
  expected: number,
  shortfall: string,
): Promise<() => Promise<void>> {
  const session = harness.driver.session({
    database: harness.config.neo4j.database,
    defaultAccessMode: neo4j.session.WRITE,
  });
  const tx = session.beginTransaction();
  const release = async () => {
    try {
      await tx.rollback();
    } finally {
      await session.close();
    }
  };
  try {
    const result = await tx.run(cypher, params);
    if (Number(result.records[0]?.get("n")) !== expected) throw new Error(shortfall);
  } catch (error) {
    await release().catch(() => {});
    throw error;
  }
  return release;
}
