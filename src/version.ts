import { readFileSync } from "node:fs";

/** The package version, stamped on dead-letter records and exported as a metric label. */
export const SERVICE_VERSION: string = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;
