import type { TenantRoute } from "../config.js";
import { errorMessage } from "../errors.js";
import type { Logger } from "../ports.js";
import { DRIFT_KINDS } from "./drift.js";
import type { ReconcileResult } from "./reconcile.js";

/**
 * §5's scheduled reconciliation: every `intervalMs`, each served tenant's registry is compared with
 * its graph and the drift reported per kind as a gauge; repairs stay a human decision (`reconcile
 * --repair`). One tenant's failure is logged and does not stop the others. Off when `intervalMs` is 0.
 */
export function scheduleReconciliation(options: {
  intervalMs: number;
  tenants: readonly TenantRoute[];
  reconcile: (route: TenantRoute) => Promise<ReconcileResult>;
  setDrift: (tenant: string, kind: string, count: number) => void;
  logger: Logger;
}): { stop(): void } {
  if (options.intervalMs <= 0) return { stop() {} };
  const timer = setInterval(() => void reconcileAll(options), options.intervalMs);
  return { stop: () => clearInterval(timer) };
}

/** One round of the schedule, over every tenant. */
export async function reconcileAll(options: {
  tenants: readonly TenantRoute[];
  reconcile: (route: TenantRoute) => Promise<ReconcileResult>;
  setDrift: (tenant: string, kind: string, count: number) => void;
  logger: Logger;
}): Promise<void> {
  for (const route of options.tenants) {
    try {
      const result = await options.reconcile(route);
      const counts = new Map<string, number>();
      for (const item of result.drift) counts.set(item.kind, (counts.get(item.kind) ?? 0) + 1);
      for (const kind of DRIFT_KINDS) options.setDrift(route.tenantId, kind, counts.get(kind) ?? 0);
      options.logger.info(
        { tenant: route.tenantId, agents: result.agents, drift: result.drift.length },
        "reconciliation done",
      );
    } catch (error) {
      options.logger.warn({ tenant: route.tenantId, error: errorMessage(error) }, "reconciliation failed");
    }
  }
}
