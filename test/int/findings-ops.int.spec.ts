import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { registerFindingSchema } from "../../src/adapters/registry/findings-subject.js";
import { Harness } from "../support/harness.js";

/** Operating the findings outbox on real servers: its schema subject, and who publishes what. */
describe("governance findings, operated", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it("REGISTER_SCHEMAS=false only looks the findings schema up: unregistered stops start-up naming the subject", async () => {
    const h = await Harness.create("findings-subject");
    harness = h;
    const topic = `findings-${randomUUID().slice(0, 8)}`;
    const subject = `${topic}-value`;
    const env = { TOPIC_GOVERNANCE_FINDINGS: topic, REGISTER_SCHEMAS: "false", STARTUP_TIMEOUT_MS: "15000" };
    const versions = () =>
      fetch(`${h.config.registry.url}/subjects/${encodeURIComponent(subject)}/versions`).then((r) => r.status);

    await expect(h.startProjector(env)).rejects.toThrow(
      new RegExp(
        `the governance-finding schema is not registered under subject ${subject}: register it with \`agent-graph-projector schemas\` \\(or run once with REGISTER_SCHEMAS=true\\)$`,
      ),
    );
    // A read-only principal could not have registered it; nor did we.
    expect(await versions()).toBe(404);

    // Registered beforehand (as `schemas` does), the service starts and keeps the subject as it is.
    const id = await registerFindingSchema(h.config.registry, topic);
    await h.startProjector(env);
    const listed = await fetch(`${h.config.registry.url}/subjects/${encodeURIComponent(subject)}/versions`);
    expect(await listed.json()).toEqual([1]);
    expect(id).toBeGreaterThan(0);
  });

  it("REGISTER_SCHEMAS=true registers the findings schema itself", async () => {
    const h = await Harness.create("findings-subject-register");
    harness = h;
    const topic = `findings-${randomUUID().slice(0, 8)}`;
    await h.startProjector({ TOPIC_GOVERNANCE_FINDINGS: topic, REGISTER_SCHEMAS: "true" });
    const listed = await fetch(`${h.config.registry.url}/subjects/${encodeURIComponent(`${topic}-value`)}/versions`);
    expect(listed.status).toBe(200);
  });
});
