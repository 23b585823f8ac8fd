import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded } from "kafkajs";
import { describe, expect, it } from "vitest";
import { classify, FatalError, TransientError } from "../../src/errors.js";

describe("classify", () => {
  it.each([
    [{ code: "Neo.TransientError.Transaction.DeadlockDetected" }, "transient"],
    [{ code: "ServiceUnavailable" }, "transient"],
    [{ code: "SessionExpired" }, "transient"],
    [{ code: "Neo.ClientError.Cluster.NotALeader" }, "transient"],
    [{ code: "Neo.ClientError.Security.AuthorizationExpired" }, "transient"],
    [{ code: "ECONNREFUSED" }, "transient"],
    [{ name: "KafkaJSConnectionError", retriable: true }, "transient"],
    [{ name: "KafkaJSNumberOfRetriesExceeded", retriable: false }, "transient"],
    [{ name: "KafkaJSNonRetriableError", retriable: false }, "fatal"],
    // What producer.send throws when the broker stays unreachable: nested retriers gave up.
    [
      {
        name: "KafkaJSNonRetriableError",
        retriable: false,
        message: "Connection error: connect ECONNREFUSED 127.0.0.1:9092",
        cause: { name: "KafkaJSConnectionError", retriable: true, code: "ECONNREFUSED" },
      },
      "transient",
    ],
    [
      {
        name: "KafkaJSNonRetriableError",
        retriable: false,
        cause: { name: "KafkaJSNumberOfRetriesExceeded", retriable: false },
      },
      "transient",
    ],
    [
      {
        name: "KafkaJSNonRetriableError",
        retriable: false,
        cause: { name: "KafkaJSProtocolError", retriable: false, type: "TOPIC_AUTHORIZATION_FAILED", code: 29 },
      },
      "fatal",
    ],
    [{ code: "Neo.ClientError.Security.Unauthorized" }, "fatal"],
    [{ code: "Neo.ClientError.Database.DatabaseNotFound" }, "fatal"],
    [new TransientError("registry down"), "transient"],
    [new FatalError("bad config"), "fatal"],
    [new Error("wrapper", { cause: { code: "Neo.ClientError.Security.Unauthorized" } }), "fatal"],
    [{ code: "Neo.ClientError.Statement.SyntaxError" }, "fatal"],
    [{ code: "Neo.ClientError.Statement.TypeError" }, "rejected"],
    [{ code: "Neo.ClientError.Schema.ConstraintValidationFailed" }, "rejected"],
    // §6 cannot be put in place: data that violates a new constraint, a name already taken.
    [{ code: "Neo.DatabaseError.Schema.ConstraintCreationFailed", retriable: false }, "fatal"],
    [{ code: "Neo.ClientError.Schema.IndexWithNameAlreadyExists" }, "fatal"],
    // What Neo4j 5.26 answers to an index key over its size limit.
    [
      {
        code: "Neo.DatabaseError.Statement.ExecutionFailed",
        message: "Property value is too large to index, please see index documentation for limitations.",
      },
      "rejected",
    ],
    [{ code: "Neo.DatabaseError.Statement.ExecutionFailed", message: "something else" }, "unknown"],
    [new Error("nobody knows"), "unknown"],
    // An untrusted server certificate: node's code, kafkajs's wrapper, the Neo4j driver's message.
    [{ code: "SELF_SIGNED_CERT_IN_CHAIN" }, "fatal"],
    [{ name: "KafkaJSConnectionError", retriable: true, code: "SELF_SIGNED_CERT_IN_CHAIN" }, "fatal"],
    [
      { code: "ServiceUnavailable", message: "Failed to connect to server. Caused by: self-signed certificate" },
      "fatal",
    ],
  ])("%o is %s", (error, expected) => {
    expect(classify(error)).toBe(expected);
  });

  it("a broker that stays unreachable during producer.send is transient, as kafkajs nests it", () => {
    // The producer's outer retrier wraps the cluster retrier's NumberOfRetriesExceeded this way.
    const refused = new KafkaJSConnectionError("Connection error: connect ECONNREFUSED 127.0.0.1:9092", {
      code: "ECONNREFUSED",
    });
    const exhausted = new KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 5, retryTime: 10_000 });
    const wrapped = Object.assign(new KafkaJSNonRetriableError(exhausted), { cause: refused });
    expect(wrapped.name).toBe("KafkaJSNonRetriableError");
    expect(classify(wrapped)).toBe("transient");
  });
});
