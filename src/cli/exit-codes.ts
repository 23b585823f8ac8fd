/**
 * Every exit code the CLI returns, with what it means to an operator: the one table docs/cli.md shows
 * and every command uses (never a bare number). Codes 10 and up are `check`'s failure classes, one per
 * thing to fix; when several checks fail, `check` exits with the code of the first in this order.
 */
export const EXIT_CODES = {
  ok: { code: 0, meaning: "done; for `check`, every start-up check passed" },
  failed: { code: 1, meaning: "the command failed; stderr names the cause in one line" },
  usage: {
    code: 2,
    meaning: "bad invocation: an unknown command or flag, a flag's value out of range, or a configuration key (named)",
  },
  drift: { code: 3, meaning: "`reconcile` found differences between the registry topic and the graph" },
  kafkaUnreachable: { code: 10, meaning: "`check`: Kafka did not answer" },
  registryUnreachable: { code: 11, meaning: "`check`: the schema registry did not answer" },
  neo4jUnreachable: { code: 12, meaning: "`check`: Neo4j did not answer" },
  credentialsRefused: {
    code: 13,
    meaning: "`check`: a server refused the credentials or the TLS trust (certificate not trusted)",
  },
  topicsMissing: { code: 14, meaning: "`check`: a source, retry or dead-letter topic does not exist" },
  constraintsMissing: { code: 15, meaning: "`check`: the §6 constraints are not in place (run `migrate`)" },
  subjectMissing: {
    code: 16,
    meaning:
      "`check`: the registry refused the look-up of the findings subject (the detail says why; a missing subject passes: `run` registers it)",
  },
} as const satisfies Record<string, { code: number; meaning: string }>;

export type ExitName = keyof typeof EXIT_CODES;

export function exitCode(name: ExitName): number {
  return EXIT_CODES[name].code;
}

/** The table as markdown, for docs/cli.md (generated, like the rest of that page, so it cannot drift). */
export function exitCodesMarkdown(): string {
  const rows = Object.values(EXIT_CODES).map(({ code, meaning }) => `| ${code} | ${meaning.replaceAll("|", "\\|")} |`);
  return ["| Exit code | Meaning |", "| --- | --- |", ...rows].join("\n");
}

/** The table as `--help` ends with it: one line a code. */
export function exitCodesText(): string {
  return [
    "Exit codes:",
    ...Object.values(EXIT_CODES).map(({ code, meaning }) => `  ${String(code).padStart(2)}  ${meaning}`),
  ].join("\n");
}
