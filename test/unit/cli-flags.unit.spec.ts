import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { EXIT_CODES, exitCodesMarkdown } from "../../src/cli/exit-codes.js";
import { deadLetterId, instant, integerIn } from "../../src/cli/parse.js";
import { parseStreams } from "../../src/cli/replay.js";

const CLI_DIR = "src/cli";

describe("the exit-code table", () => {
  it("gives every code one meaning", () => {
    const codes = Object.values(EXIT_CODES).map((entry) => entry.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const entry of Object.values(EXIT_CODES)) expect(entry.meaning.length).toBeGreaterThan(10);
  });

  it("is the only source of the codes the CLI exits with: no command sets a bare number", () => {
    const bare = /process\.exit\(\s*\d|exitCode\s*=\s*\d|exitCode:\s*\d/;
    const offenders = readdirSync(CLI_DIR)
      .filter((file) => file.endsWith(".ts") && file !== "exit-codes.ts")
      .flatMap((file) =>
        readFileSync(join(CLI_DIR, file), "utf8")
          .split("\n")
          .filter((line) => bare.test(line))
          .map((line) => `${file}: ${line.trim()}`),
      );
    expect(offenders).toEqual([]);
  });

  it("renders as one markdown table with a row per code", () => {
    const lines = exitCodesMarkdown().split("\n");
    expect(lines.slice(0, 2)).toEqual(["| Exit code | Meaning |", "| --- | --- |"]);
    expect(lines.slice(2).map((line) => Number(line.split("|")[1]))).toEqual(
      Object.values(EXIT_CODES).map((entry) => entry.code),
    );
  });

  it("names in exitCode(...) calls are all in the table", () => {
    const names = readdirSync(CLI_DIR)
      .filter((file) => file.endsWith(".ts"))
      .flatMap((file) => [...readFileSync(join(CLI_DIR, file), "utf8").matchAll(/exitCode\("(\w+)"\)/g)])
      .map((match) => match[1] as string);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(Object.keys(EXIT_CODES)).toContain(name);
  });
});

describe("flag parsers", () => {
  it("integerIn takes decimal integers in range and refuses the rest as usage errors", () => {
    const partition = integerIn(0);
    expect(partition("0")).toBe(0);
    expect(partition("12")).toBe(12);
    for (const bad of ["-1", "abc", "1.5", "1e3", "0x10", "", " 4", "9007199254740993"])
      expect(() => partition(bad), bad).toThrow(InvalidArgumentError);
    const replication = integerIn(1, 32_767);
    expect(replication("3")).toBe(3);
    expect(() => replication("0")).toThrow(/from 1 to 32767/);
    expect(() => replication("40000")).toThrow(InvalidArgumentError);
  });

  it("instant takes epoch milliseconds or an ISO date with a zone", () => {
    expect(instant("1700000000000")).toBe(1_700_000_000_000);
    expect(instant("2026-03-01T10:00:00Z")).toBe(Date.UTC(2026, 2, 1, 10));
    expect(instant("2026-03-01T10:00:00+01:00")).toBe(Date.UTC(2026, 2, 1, 9));
    expect(instant("2026-03-01")).toBe(Date.UTC(2026, 2, 1));
    for (const bad of ["yesterday", "2026-03-01T10:00:00", "2026-13-45", "-5", "12.5"])
      expect(() => instant(bad), bad).toThrow(InvalidArgumentError);
  });

  it("deadLetterId collects <topic>:<partition>:<offset> ids and refuses anything else", () => {
    expect(deadLetterId("a.dlq:0:12", deadLetterId("a.dlq:1:3"))).toEqual(["a.dlq:1:3", "a.dlq:0:12"]);
    for (const bad of ["a.dlq:0", "a.dlq:-1:3", "a.dlq:x:3", "0:3"])
      expect(() => deadLetterId(bad), bad).toThrow(InvalidArgumentError);
  });

  it("--topics takes aliases and topic names, once each, and refuses an unknown one", () => {
    expect(parseStreams("registry,outcomes,escalation-edge,registry")).toEqual([
      "registry-mutation",
      "outcome-created",
      "escalation-edge",
    ]);
    expect(() => parseStreams("registry,bogus")).toThrow(InvalidArgumentError);
  });
});
