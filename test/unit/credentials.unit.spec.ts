import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuthenticationProviderArgs, Authenticator } from "kafkajs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { currentSecret, RotationGrace } from "../../src/adapters/credentials.js";
import { rotatingSasl } from "../../src/adapters/kafka/client.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "agp-credentials-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("currentSecret", () => {
  it("reads the file again on every call, without its trailing newline", () => {
    const file = join(dir, "password");
    writeFileSync(file, "first\n");
    const secret = currentSecret("first", file);
    expect(secret()).toBe("first");
    writeFileSync(file, "second\n");
    expect(secret()).toBe("second");
  });

  it("keeps the last value while the file cannot be read (a Secret being swapped)", () => {
    const file = join(dir, "password");
    writeFileSync(file, "kept");
    const secret = currentSecret("at-start", file);
    expect(secret()).toBe("kept");
    rmSync(file);
    expect(secret()).toBe("kept");
  });

  it("is the given value when there is no file", () => {
    expect(currentSecret("plain", undefined)()).toBe("plain");
  });
});

describe("RotationGrace", () => {
  it("never retries before a first success: a wrong credential at start-up is final", () => {
    const grace = new RotationGrace(1_000, () => 0);
    expect(grace.failed("wrong")).toBe(false);
  });

  it("after a success, retries the same credential for the grace, then gives up", () => {
    let now = 0;
    const grace = new RotationGrace(1_000, () => now);
    grace.succeeded();
    expect(grace.failed("old")).toBe(true);
    now = 999;
    expect(grace.failed("old")).toBe(true);
    now = 1_000;
    expect(grace.failed("old")).toBe(false);
  });

  it("starts a new window when a different credential fails, and a success clears it", () => {
    let now = 0;
    const grace = new RotationGrace(1_000, () => now);
    grace.succeeded();
    grace.failed("old");
    now = 900;
    expect(grace.failed("new")).toBe(true);
    now = 1_800;
    expect(grace.failed("new")).toBe(true);
    grace.succeeded();
    now = 5_000;
    expect(grace.failed("new")).toBe(true);
  });
});

describe("rotatingSasl (kafkajs SASL options)", () => {
  const args = { host: "broker", port: 9094 } as AuthenticationProviderArgs;

  /** What kafkajs does on a connection: install its built-in authenticator once, then call it. */
  const authenticateWith = (options: Record<string, unknown>, builtIn: (sasl: typeof options) => Authenticator) => {
    if (!options.authenticationProvider) options.authenticationProvider = () => builtIn(options);
    return (options.authenticationProvider as (a: AuthenticationProviderArgs) => Authenticator)(args).authenticate();
  };

  it("hands kafkajs the password file's current contents at each authentication", async () => {
    const file = join(dir, "password");
    writeFileSync(file, "one");
    const options = rotatingSasl({
      mechanism: "scram-sha-512",
      username: "projector",
      password: "one",
      passwordFile: file,
    }) as unknown as Record<string, unknown>;
    const seen: unknown[] = [];
    const builtIn = (sasl: Record<string, unknown>) => ({ authenticate: async () => void seen.push(sasl.password) });
    await authenticateWith(options, builtIn);
    writeFileSync(file, "two\n");
    await authenticateWith(options, builtIn);
    expect(seen).toEqual(["one", "two"]);
    expect({ ...options }).toMatchObject({ mechanism: "scram-sha-512", username: "projector", password: "two" });
  });
});
