/**
 * Draws the chart of a results file again, without running anything:
 *   npx tsx bench/chart.ts bench/results/<run>.json [out.svg]
 * (out: the results file's name with .svg, beside it).
 */
import fs from "node:fs";
import { chartFromResults } from "./lib/chart.js";
import { renderChart } from "./lib/svg.js";

const [file, out = file?.replace(/\.json$/, ".svg")] = process.argv.slice(2);
if (!file || !out || out === file) {
  process.stderr.write("usage: npx tsx bench/chart.ts bench/results/<run>.json [out.svg]\n");
  process.exit(2);
}
fs.writeFileSync(out, renderChart(chartFromResults(JSON.parse(fs.readFileSync(file, "utf8")))));
process.stdout.write(`${out}\n`);
