#!/usr/bin/env node
// Runs the compiled CLI when the package is built (the container image, an npm install); from a
// source checkout it loads the TypeScript directly through tsx.
import { existsSync } from "node:fs";

const compiled = new URL("../dist/cli/main.js", import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import(new URL("../src/cli/main.ts", import.meta.url).href);
}
