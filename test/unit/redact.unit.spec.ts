import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { errorMessage } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { redactUserinfo } from "../../src/redact.js";

describe("redactUserinfo", () => {
  it.each([
    ["http://user:s3cret@registry:8081/apis/ccompat/v7", "http://[redacted]@registry:8081/apis/ccompat/v7"],
    ["https://token@registry", "https://[redacted]@registry"],
    ["bolt://neo4j:pw@db:7687", "bolt://[redacted]@db:7687"],
    ["a raw @ in the password: http://u:p@ss@host/x", "a raw @ in the password: http://[redacted]@host/x"],
    [
      "two: http://a:b@one/ and https://c:d@two:443/p?q=1",
      "two: http://[redacted]@one/ and https://[redacted]@two:443/p?q=1",
    ],
  ])("%s", (text, redacted) => {
    expect(redactUserinfo(text)).toBe(redacted);
  });

  it.each([
    "http://registry:8081/apis/ccompat/v7",
    "http://host/path/user@example.com",
    "http://host/?mail=a@b",
    "user:pass@host without a scheme is no URL",
  ])("leaves %s as it is", (text) => {
    expect(redactUserinfo(text)).toBe(text);
  });

  it("errorMessage redacts the URL a library's message quotes", () => {
    expect(errorMessage(new Error("connect ECONNREFUSED for http://u:s3cret@h:1/x"))).toBe(
      "connect ECONNREFUSED for http://[redacted]@h:1/x",
    );
    expect(errorMessage("http://u:s3cret@h")).toBe("http://[redacted]@h");
  });

  it("the logger redacts a URL's userinfo in a log line's fields", () => {
    let out = "";
    const sink = new Writable({
      write(chunk, _encoding, done) {
        out += chunk;
        done();
      },
    });
    const logger = createLogger("info", sink as never);
    logger.warn({ error: "GET http://u:s3cret@h/subjects failed", n: 1 }, "registry trouble");
    expect(out).not.toContain("s3cret");
    expect(JSON.parse(out)).toMatchObject({ error: "GET http://[redacted]@h/subjects failed", n: 1 });
  });
});
