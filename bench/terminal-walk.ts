/**
 * `npx tsx bench/terminal-walk.ts [--agents 10000] [--page 2000] [--shape tree|ring|both]`: what the
 * event-time judge's terminal walk (model/event-time-reach.ts) costs the judging instance's event loop
 * for one page of registry changes, the largest a round reads (2,000), on a registry of `--agents`
 * agents whose first snapshots are all new (a new deployment reading the compacted registry: every
 * change its own instant). Pure, no servers: the walk is all the judge does between its reads.
 *
 * Shapes: `tree`, each agent declaring its parent (agent i → ⌊(i-1)/2⌋), the root a control terminal,
 * as a supervision hierarchy declares; `ring`, each agent declaring the next and the seventh after it,
 * one in fifty a terminal too: everyone upstream of everyone, the walk's worst case for a change that
 * keeps its agent's reach. Printed: milliseconds for the page, findings found, each turn of three.
 */
import { parseArgs } from "node:util";
import type { RegistryChange } from "../src/model/event-time-findings.js";
import { terminalTransitionsAt } from "../src/model/event-time-reach.js";

const { values } = parseArgs({
  options: {
    agents: { type: "string", default: "10000" },
    page: { type: "string", default: "2000" },
    shape: { type: "string", default: "both" },
  },
});
const agents = Number(values.agents);
const pageSize = Number(values.page);
const TERMINAL = "wk-agt-terminal";
const id = (i: number) => `wk-agt-${String(i).padStart(6, "0")}`;

function history(shape: "tree" | "ring"): RegistryChange[] {
  return Array.from({ length: agents }, (_, i): RegistryChange => {
    const declared =
      shape === "tree"
        ? [i === 0 ? TERMINAL : id(Math.floor((i - 1) / 2))]
        : [id((i + 1) % agents), id((i + 7) % agents), ...(i % 50 === 0 ? [TERMINAL] : [])];
    return { tenant_id: "bench", agent_id: id(i), registry_version: 1, occurred_at: 1_000 + i, declared };
  });
}

for (const shape of values.shape === "both" ? (["tree", "ring"] as const) : [values.shape as "tree" | "ring"]) {
  const changes = history(shape);
  const instants = changes.slice(-pageSize).map((c) => c.occurred_at);
  for (let turn = 1; turn <= 3; turn++) {
    const start = process.hrtime.bigint();
    const found = terminalTransitionsAt("bench", {
      history: changes,
      instants,
      terminals: new Set([TERMINAL]),
      recorded: [],
    });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    console.log(
      `${shape} agents=${agents} page=${instants.length} turn=${turn} ms=${ms.toFixed(0)} findings=${found.length}`,
    );
  }
}
