/**
 * A bench script's own connection to the stack's Neo4j, with the service's variables (NEO4J_URI,
 * NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE) and the local stack's defaults, for the scripts that
 * measure one read or statement straight on Neo4j.
 */
import neo4j, { type Driver } from "neo4j-driver";

export interface DirectNeo4j {
  readonly env: { readonly uri: string; readonly user: string; readonly password: string; readonly database: string };
  readonly driver: Driver;
  /** Runs in an auto-commit transaction: `CALL { … } IN TRANSACTIONS` runs only in one. */
  autocommit(cypher: string, params?: Record<string, unknown>): Promise<void>;
}

export function directNeo4j(): DirectNeo4j {
  const env = {
    uri: process.env.NEO4J_URI ?? "bolt://127.0.0.1:7687",
    user: process.env.NEO4J_USER ?? "neo4j",
    password: process.env.NEO4J_PASSWORD ?? "projector-local-pw",
    database: process.env.NEO4J_DATABASE ?? "neo4j",
  };
  const driver = neo4j.driver(env.uri, neo4j.auth.basic(env.user, env.password));
  return {
    env,
    driver,
    async autocommit(cypher, params = {}) {
      const session = driver.session({ database: env.database });
      try {
        await session.run(cypher, params);
      } finally {
        await session.close();
      }
    },
  };
}
