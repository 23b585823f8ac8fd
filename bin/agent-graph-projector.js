#!/usr/bin/env node
// Runs the compiled CLI when the package is built (the container image, an npm install); from a
// source checkout it loads the TypeScript directly through tsx.
import { existsSync } from "node:fs";

const compiled = new URL("../dist/cli/program.js", import.meta.url);
let cli;
if (existsSync(compiled)) {
  cli = await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  cli = await import(new URL("../src/cli/program.ts", import.meta.url).href);
}
await cli.program.parseAsync(process.argv);
