import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded } from "kafkajs";
import { describe, expect, it } from "vitest";
import { blame, classify, FatalError, retryReason, TransientError } from "../../src/errors.js";

describe("classify", () => {
  it.each([
    [{ code: "Neo.TransientError.Transaction.DeadlockDetected" }, "transient"],
    [{ code: "ServiceUnavailable" }, "transient"],
    [{ code: "SessionExpired" }, "transient"],
    [{ code: "Neo.ClientError.Cluster.NotALeader" }, "transient"],
    [{ code: "Neo.ClientError.Security.AuthorizationExpired" }, "transient"],
    // A refused password (the graph writer alone turns one into a retry during a rotation), also as
    // a pooled connection's failed re-authentication reports it; a connection the network broke.
    [{ code: "Neo.ClientError.Security.Unauthorized" }, "fatal"],
    [{ code: "ProtocolError", message: "The client is unauthorized due to authentication failure." }, "fatal"],
    [
      {
        code: "ProtocolError",
        message: "Failed to connect to server. Please ensure that your database is listening. Caused by: write EPIPE",
      },
      "transient",
    ],
    [{ code: "ECONNREFUSED" }, "transient"],
    [{ name: "KafkaJSConnectionError", retriable: true }, "transient"],
    [{ name: "KafkaJSNumberOfRetriesExceeded", retriable: false }, "transient"],
    // kafkajs's client-wide locks (metadata, target topics) time out while a broker is away.
    [
      {
        name: "KafkaJSLockTimeout",
        retriable: false,
        message: 'Timeout while acquiring lock (3 waiting locks): "updating target topics"',
      },
      "transient",
    ],
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

/**
 * The one rule for blame, as a table: whether retrying the same record can succeed. `records`: the
 * batch is narrowed and the record that fails alone is dead-lettered; `records-while-up`: the same,
 * while Neo4j answers a ping; `infrastructure`: the partition pauses; `service`: the service stops.
 */
describe("blame", () => {
  const neo4j = (code: string, message = "") => Object.assign(new Error(message), { code });
  it.each([
    // The infrastructure's: away or busy, the same record succeeds once it is back.
    [neo4j("Neo.TransientError.Transaction.DeadlockDetected"), "infrastructure"],
    [neo4j("Neo.TransientError.General.DatabaseUnavailable"), "infrastructure"],
    [neo4j("ServiceUnavailable"), "infrastructure"],
    [neo4j("SessionExpired"), "infrastructure"],
    [neo4j("Neo.ClientError.Cluster.NotALeader"), "infrastructure"],
    [neo4j("Neo.ClientError.Transaction.LockClientStopped"), "infrastructure"],
    [neo4j("ECONNREFUSED"), "infrastructure"],
    [new TransientError("schema registry unavailable"), "infrastructure"],
    [{ name: "KafkaJSConnectionError", retriable: true }, "infrastructure"],
    // Heavy for one transaction: the record that still fails alone while Neo4j answers is to blame.
    [neo4j("Neo.TransientError.General.TransactionMemoryLimit"), "records-while-up"],
    [neo4j("Neo.TransientError.General.MemoryPoolOutOfMemoryError"), "records-while-up"],
    [neo4j("Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration"), "records-while-up"],
    [neo4j("Neo.ClientError.Transaction.TransactionTimedOut"), "records-while-up"],
    [
      { message: "wrapped", cause: neo4j("Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration") },
      "records-while-up",
    ],
    // Nobody recognises it: narrowed, a lone record blamed only while Neo4j answers.
    [new Error("nobody knows this one"), "records-while-up"],
    // The data itself: the same record fails the same way every time.
    [neo4j("Neo.ClientError.Schema.IndexEntrySizeExceeded"), "records"],
    [neo4j("Neo.ClientError.Statement.TypeError"), "records"],
    [neo4j("Neo.ClientError.Schema.ConstraintValidationFailed"), "records"],
    [neo4j("Neo.DatabaseError.Statement.ExecutionFailed", "Property value is too large to index"), "records"],
    // Configuration or code: no retry of anything succeeds.
    [neo4j("Neo.ClientError.Security.Unauthorized"), "service"],
    [neo4j("Neo.ClientError.Database.DatabaseNotFound"), "service"],
    [neo4j("Neo.ClientError.Statement.SyntaxError"), "service"],
    [new FatalError("bad configuration"), "service"],
  ])("%o → %s", (error, expected) => {
    expect(blame(error)).toBe(expected);
  });
});

describe("retryReason", () => {
  const coded = (code: string) => Object.assign(new Error("lock 42 held by transaction 7"), { code });
  it("names a Neo4j status by its last part, a driver's or socket's code as it is, else the error's name", () => {
    expect(retryReason(coded("Neo.TransientError.Transaction.DeadlockDetected"))).toBe("DeadlockDetected");
    expect(retryReason(coded("Neo.ClientError.Cluster.NotALeader"))).toBe("NotALeader");
    expect(retryReason(coded("ServiceUnavailable"))).toBe("ServiceUnavailable");
    expect(retryReason(coded("ECONNRESET"))).toBe("ECONNRESET");
    expect(retryReason(new TransientError("Neo4j did not answer within 60 s"))).toBe("TransientError");
    expect(retryReason(undefined)).toBe("unknown");
  });
});
