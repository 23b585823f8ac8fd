// Helpers for validate.sh that need the service's own code.
//   tsx config-keys.ts keys            prints CONFIG_KEYS as JSON
//   tsx config-keys.ts sample <file>   checks that an event file parses as `produce` would read it
import { readFileSync } from "node:fs";
import { parseEventFile } from "../../src/cli/produce.js";
import { CONFIG_KEYS } from "../../src/config.js";

const [command, file] = process.argv.slice(2);
if (command === "keys") {
  process.stdout.write(`${JSON.stringify(CONFIG_KEYS)}\n`);
} else if (command === "sample" && file) {
  const events = parseEventFile(readFileSync(file, "utf8"));
  process.stdout.write(`  ok   ${file}: ${events.length} events, valid against the Avro schemas\n`);
} else {
  process.stderr.write("usage: config-keys.ts keys | sample <file>\n");
  process.exit(2);
}
