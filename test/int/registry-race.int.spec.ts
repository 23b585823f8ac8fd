import { randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { registerSubject } from "../../src/adapters/registry/schema-registry.js";
import { loadConfig } from "../../src/config.js";
import { readerSchema } from "../../src/model/schemas.js";

/**
 * Several instances starting at once each register the schemas they own under a subject that does
 * not exist yet. On the real registry the losers of that race can be answered 409 although the schema
 * is the same; every one of them must get the one id, and none may fail its start-up.
 */
describe("registering one schema from several instances at once", () => {
  const endpoints = inject("endpoints");
  const config = loadConfig({ SCHEMA_REGISTRY_URL: endpoints.schemaRegistryUrl }).registry;

  it("gives every instance the same id", async () => {
    for (let round = 0; round < 3; round++) {
      const subject = `registry-race-${randomUUID()}-value`;
      const ids = await Promise.all(
        Array.from({ length: 6 }, () => registerSubject(config, subject, readerSchema("outcome-created"), "a schema")),
      );
      expect(new Set(ids).size).toBe(1);
    }
  });
});
