/**
 * Every status the CLI exits with, and what it means to a script or a probe. docs/cli.md's table is
 * generated from these, and a unit test keeps every exit in src/cli on one of them.
 */
export const EXIT_CODES = {
  ok: 0,
  failure: 1,
  config: 2,
  drift: 3,
} as const;

export type ExitCodeName = keyof typeof EXIT_CODES;

export const EXIT_CODE_MEANINGS: { readonly [name in ExitCodeName]: string } = {
  ok: "Done; `run`: stopped on SIGTERM or SIGINT (during start-up too) within `SHUTDOWN_TIMEOUT_MS`.",
  failure:
    "The command failed, with one line on stderr naming the cause: a server unreachable or refusing, a start-up that failed or outlasted `STARTUP_TIMEOUT_MS`, a fatal error while running, a stop that outlasted `SHUTDOWN_TIMEOUT_MS`, chosen records `dlq redrive` left on the dead-letter topic; also a usage error (an unknown command or option, a missing argument).",
  config: "The configuration is invalid: one line on stderr names the key (`configuration error: KEY: …`).",
  drift: "`reconcile` without `--repair` found differences between the registry topic and the graph.",
};
