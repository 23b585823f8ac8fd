import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import neo4j, { type Driver } from "neo4j-driver";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RotationGrace } from "../../src/adapters/credentials.js";
import { createDriver, createGraphWriter, credentialsAccepted } from "../../src/adapters/neo4j/graph-writer.js";
import { loadConfig } from "../../src/config.js";
import type { Statement } from "../../src/cypher/statement.js";
import { classify } from "../../src/errors.js";
import { noopMetrics } from "../../src/ports.js";
import { LoopbackProxy } from "../support/tcp-proxy.js";

const probe: Statement = { name: "outcome", cypher: "UNWIND $rows AS row RETURN row", params: { rows: [{ i: 1 }] } };
const USER = "agp_rotating";

/**
 * A Neo4j password that rotates while the projector runs, on the real server: the password is
 * changed on the server (as an operator or a secrets manager does) and in the mounted file, a little
 * apart and in either order; every connection is then cut (a restart or failover: the pool must
 * authenticate anew). Writes go on without a restart. A wrong password still ends in a final error —
 * at once before the password has ever worked, after the grace once it has.
 */
describe("a Neo4j password that rotates while the writer runs", () => {
  const endpoints = inject("endpoints");
  const target = new URL(endpoints.neo4jUri.replace(/^[a-z+]+:/, "http:"));
  const proxy = new LoopbackProxy(target.hostname, Number(target.port));
  let admin: Driver;
  let dir: string;
  let passwordFile: string;
  let uri: string;

  const setServerPassword = (password: string) =>
    admin.executeQuery(
      `ALTER USER ${USER} SET PASSWORD $password CHANGE NOT REQUIRED`,
      { password },
      {
        database: "system",
      },
    );
  const writerFor = (grace: RotationGrace) => {
    const config = loadConfig({ NEO4J_URI: uri, NEO4J_USER: USER, NEO4J_PASSWORD_FILE: passwordFile });
    const driver = createDriver(config.neo4j, grace);
    return { driver, writer: createGraphWriter(driver, noopMetrics, 5_000) };
  };
  const outcome = (promise: Promise<unknown>) =>
    promise.then(
      () => "applied",
      (error: unknown) => classify(error),
    );

  beforeAll(async () => {
    admin = neo4j.driver(endpoints.neo4jUri, neo4j.auth.basic(endpoints.neo4jUser, endpoints.neo4jPassword));
    await admin.executeQuery(
      `CREATE OR REPLACE USER ${USER} SET PASSWORD $password CHANGE NOT REQUIRED`,
      { password: "rotation-one" },
      { database: "system" },
    );
    dir = mkdtempSync(join(tmpdir(), "agp-neo4j-rotation-"));
    passwordFile = join(dir, "password");
    writeFileSync(passwordFile, "rotation-one\n");
    uri = `bolt://127.0.0.1:${await proxy.listen()}`;
  });
  afterAll(async () => {
    await proxy.close();
    await admin?.executeQuery(`DROP USER ${USER} IF EXISTS`, {}, { database: "system" }).catch(() => {});
    await admin?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("server first, then the file: writes in flight wait for the file and apply", async () => {
    const { driver, writer } = writerFor(new RotationGrace());
    try {
      expect(await outcome(writer.apply("neo4j", [probe]))).toBe("applied");
      credentialsAccepted(driver);

      await setServerPassword("rotation-two");
      proxy.dropAll();
      const write = outcome(writer.apply("neo4j", [probe]));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      writeFileSync(passwordFile, "rotation-two\n");
      expect(await write).toBe("applied");
    } finally {
      await driver.close();
    }
  });

  it("the file first, then the server: pooled connections take the new password once the server has it", async () => {
    const { driver, writer } = writerFor(new RotationGrace());
    try {
      expect(await outcome(writer.apply("neo4j", [probe]))).toBe("applied");
      credentialsAccepted(driver);

      writeFileSync(passwordFile, "rotation-three\n");
      const write = outcome(writer.apply("neo4j", [probe]));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      await setServerPassword("rotation-three");
      proxy.dropAll();
      expect(await write).toBe("applied");
      expect(await outcome(writer.apply("neo4j", [probe]))).toBe("applied");
    } finally {
      await driver.close();
    }
  });

  it("a password that never worked is final at once; one that stops working is final after the grace", async () => {
    writeFileSync(passwordFile, "not-the-password\n");
    const fresh = writerFor(new RotationGrace());
    try {
      const started = Date.now();
      expect(await outcome(fresh.writer.apply("neo4j", [probe]))).toBe("fatal");
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await fresh.driver.close();
    }

    writeFileSync(passwordFile, "rotation-three\n");
    const { driver, writer } = writerFor(new RotationGrace(3_000));
    try {
      expect(await outcome(writer.apply("neo4j", [probe]))).toBe("applied");
      credentialsAccepted(driver);
      writeFileSync(passwordFile, "not-the-password\n");
      proxy.dropAll();
      // Within the grace the writer retries (transient); past it the refusal is final.
      const started = Date.now();
      expect(await outcome(writer.apply("neo4j", [probe]))).toBe("fatal");
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_500);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await driver.close();
    }
  });
});
