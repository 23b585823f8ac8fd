import { describe, expect, it } from "vitest";
import { checkOutcome, failureClass } from "../../src/cli/check-result.js";
import { EXIT_CODES } from "../../src/cli/exit-codes.js";
import { FatalError, TransientError } from "../../src/errors.js";
import { StartupError } from "../../src/startup/deadline.js";

/** As start-up's steps report a failure: one line, the cause kept. */
const afterStep = (cause: unknown) => new StartupError("step failed", { cause });

describe("check's failure classes", () => {
  it("a server away is that server's class, through start-up's wrapping", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    expect(failureClass(afterStep(refused), "neo4j", "constraintsMissing")).toBe("neo4jUnreachable");
    expect(failureClass(afterStep(new TransientError("503")), "registry", "subjectMissing")).toBe(
      "registryUnreachable",
    );
    const kafkaAway = Object.assign(new Error("Connection timeout"), { name: "KafkaJSConnectionError" });
    expect(failureClass(afterStep(kafkaAway), "kafka", "topicsMissing")).toBe("kafkaUnreachable");
    // A step cut off at its deadline with no failure reported is the server not answering.
    expect(failureClass(afterStep(new Error("no answer")), "kafka", "topicsMissing")).toBe("kafkaUnreachable");
  });

  it("refused credentials and untrusted certificates are their own class, whichever server", () => {
    const neo4jAuth = Object.assign(new Error("unauthorized"), { code: "Neo.ClientError.Security.Unauthorized" });
    expect(failureClass(afterStep(neo4jAuth), "neo4j", "constraintsMissing")).toBe("credentialsRefused");
    const sasl = Object.assign(new Error("SASL PLAIN authentication failed"), {
      name: "KafkaJSSASLAuthenticationError",
      retriable: false,
    });
    expect(failureClass(afterStep(sasl), "kafka", "topicsMissing")).toBe("credentialsRefused");
    const registry = new FatalError("schema registry at http://r refused our credentials (HTTP 401)");
    expect(failureClass(afterStep(registry), "registry", "subjectMissing")).toBe("credentialsRefused");
    const tls = Object.assign(new Error("self-signed certificate in certificate chain"), {
      code: "SELF_SIGNED_CERT_IN_CHAIN",
    });
    expect(failureClass(afterStep(tls), "registry", "subjectMissing")).toBe("credentialsRefused");
  });

  it("what waiting cannot cure is the check's own class: a topic, constraint or subject not there", () => {
    expect(failureClass(afterStep(new FatalError("source topic(s) x do not exist")), "kafka", "topicsMissing")).toBe(
      "topicsMissing",
    );
    expect(failureClass(afterStep(new FatalError("run migrate")), "neo4j", "constraintsMissing")).toBe(
      "constraintsMissing",
    );
  });

  it("exits 0 when all pass, else with the first failure class in the table's order", () => {
    expect(checkOutcome([{ check: "neo4j", status: "ok", detail: "" }])).toEqual({ ok: true, exitCode: 0 });
    const outcome = checkOutcome([
      { check: "constraints", status: "failed", detail: "", failure: "constraintsMissing" },
      { check: "kafka", status: "failed", detail: "", failure: "kafkaUnreachable" },
      { check: "own topics", status: "skipped", detail: "" },
    ]);
    expect(outcome).toEqual({ ok: false, exitCode: EXIT_CODES.kafkaUnreachable.code, failure: "kafkaUnreachable" });
  });
});
