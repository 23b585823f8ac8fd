import { describe, expect, it } from "vitest";
import { classify, FatalError, TransientError } from "../../src/errors.js";

describe("classify", () => {
  it.each([
    [{ code: "Neo.TransientError.Transaction.DeadlockDetected" }, "transient"],
    [{ code: "ServiceUnavailable" }, "transient"],
    [{ code: "SessionExpired" }, "transient"],
    [{ code: "Neo.ClientError.Cluster.NotALeader" }, "transient"],
    [{ code: "ECONNREFUSED" }, "transient"],
    [{ name: "KafkaJSConnectionError", retriable: true }, "transient"],
    [{ name: "KafkaJSNumberOfRetriesExceeded", retriable: false }, "transient"],
    [{ name: "KafkaJSNonRetriableError", retriable: false }, "fatal"],
    [{ code: "Neo.ClientError.Security.Unauthorized" }, "fatal"],
    [{ code: "Neo.ClientError.Database.DatabaseNotFound" }, "fatal"],
    [new TransientError("registry down"), "transient"],
    [new FatalError("bad config"), "fatal"],
    [new Error("wrapper", { cause: { code: "Neo.ClientError.Security.Unauthorized" } }), "fatal"],
  ])("%o is %s", (error, expected) => {
    expect(classify(error)).toBe(expected);
  });
});
