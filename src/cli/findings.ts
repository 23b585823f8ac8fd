import type { Command } from "commander";
import { createDriver, createGraphWriter } from "../adapters/neo4j/graph-writer.js";
import type { TenantRoute } from "../config.js";
import { LIST_FINDINGS } from "../cypher/findings.js";
import { type GraphWriter, noopMetrics } from "../ports.js";
import { action, cliContext } from "./context.js";
import { printRows } from "./output.js";

/** A finding as listed: open, resolved, or the resolution of another. */
export function findingRow(record: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const state =
    record.resolves !== null && record.resolves !== undefined ? "resolution" : record.resolved ? "resolved" : "open";
  return {
    finding_id: record.finding_id,
    tenant: record.tenant_id,
    kind: record.kind,
    source_agent_id: record.source_agent_id,
    target_agent_id: record.target_agent_id,
    state,
    detected_at: record.detected_at,
    published: record.published,
    // The evidence (issue 53): the escalation and the registry change the finding is about.
    observed_at: record.observed_at ?? null,
    source_outcome_id: record.source_outcome_id ?? null,
    target_outcome_id: record.target_outcome_id ?? null,
    registry_version: record.registry_version ?? null,
    registry_occurred_at: record.registry_occurred_at ?? null,
    late: record.late === true,
  };
}

/** The findings of the given tenants, each read from its tenant's database and scoped to the tenant. */
export async function listFindings(
  graph: GraphWriter,
  routes: readonly TenantRoute[],
  open: boolean,
): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (const route of routes) {
    const found = await graph.read(route.database, LIST_FINDINGS, { tenant: route.tenantId, open });
    rows.push(...found.map(findingRow));
  }
  return rows;
}

export function registerFindings(program: Command): void {
  program
    .command("findings")
    .description(
      "list the governance findings recorded in the graph (undeclared escalations, agents cut off from a control terminal, and their resolutions)",
    )
    .option("--tenant <tenant>", "only this tenant's findings (default: every tenant in TENANTS)")
    .option("--open", "only the findings no resolution answers yet")
    .option("--json", "print JSON instead of a table")
    .action(
      action(async (options: { tenant?: string; open?: boolean; json?: boolean }) => {
        const { config } = cliContext();
        const routes = options.tenant ? config.tenants.filter((t) => t.tenantId === options.tenant) : config.tenants;
        if (routes.length === 0) throw new Error(`tenant "${options.tenant}" is not in TENANTS`);
        const driver = createDriver(config.neo4j);
        try {
          const graph = createGraphWriter(driver, noopMetrics, config.neo4j.txTimeoutMs);
          const rows = await listFindings(graph, routes, options.open === true);
          printRows(rows, {
            json: options.json === true,
            title: options.open ? "Open governance findings" : "Governance findings",
            empty: "none",
          });
        } finally {
          await driver.close();
        }
      }),
    );
}
