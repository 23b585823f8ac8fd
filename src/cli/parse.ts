import { InvalidArgumentError } from "commander";

/**
 * Flag parsers for commander's `argParser`: a value that does not parse is a usage error before the
 * command runs (commander names the flag; main.ts maps it to EXIT_CODES.usage).
 */

/** An integer in [min, max], written in decimal digits only ("1e3", "0x10", "3.0", " 4" are refused). */
export function integerIn(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    const n = /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(
        max === Number.MAX_SAFE_INTEGER
          ? `must be an integer of at least ${min}`
          : `must be an integer from ${min} to ${max}`,
      );
    return n;
  };
}

/** A point in time: epoch milliseconds, or an ISO 8601 date (with a time zone, so that it means one instant). */
export function instant(value: string): number {
  if (/^\d+$/.test(value)) {
    const ms = Number(value);
    if (Number.isSafeInteger(ms)) return ms;
  } else if (/^\d{4}-\d{2}-\d{2}(T.*(Z|[+-]\d{2}:?\d{2}))?$/.test(value)) {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms)) return ms;
  }
  throw new InvalidArgumentError("must be epoch milliseconds or an ISO 8601 date, e.g. 2026-03-01T10:00:00Z");
}

/** A dead-lettered record's id as `dlq list` prints it: <topic>:<partition>:<offset>. */
export function deadLetterId(value: string, previous: string[] = []): string[] {
  if (!/^[^:\s]+:\d+:\d+$/.test(value))
    throw new InvalidArgumentError(`"${value}" is not a record id <dlq-topic>:<partition>:<offset> (from dlq list)`);
  return [...previous, value];
}
