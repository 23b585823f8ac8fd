import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type HealthChecks, startHttpServer } from "../adapters/http/server.js";
import type { PrometheusMetrics } from "../adapters/metrics/prometheus.js";
import type { StartupContext } from "./context.js";
import { StartupError } from "./deadline.js";

export interface Endpoints {
  readonly metricsPort: number;
  /** Liveness and readiness answer from `probes` from now on. */
  serveProbes(probes: Omit<HealthChecks, "started">): void;
  /** /startupz answers 200 from now on. */
  markStarted(): void;
  close(): Promise<void>;
}

/**
 * The endpoints phase, first of all: so that a port already taken is found before anything else is
 * connected, and /metrics answers while the rest starts. Readiness stays false until the consumer has
 * joined, and /startupz until start-up has finished.
 */
export async function openEndpoints(ctx: StartupContext, metrics: PrometheusMetrics): Promise<Endpoints> {
  const { host, port } = ctx.config.metrics;
  let probes: Omit<HealthChecks, "started"> | undefined;
  let started = false;
  const server: Server = await startHttpServer(
    metrics.registry,
    {
      started: () => started,
      live: () => probes?.live() ?? { ok: true, detail: { starting: true } },
      ready: async () => (probes ? probes.ready() : { ok: false, detail: { starting: true } }),
    },
    host,
    port,
  ).catch((error: NodeJS.ErrnoException) => {
    throw new StartupError(
      error.code === "EADDRINUSE"
        ? `metrics port ${host}:${port} is already in use (METRICS_PORT)`
        : `metrics server on ${host}:${port}: ${error.message}`,
    );
  });
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  ctx.opened(close);
  return {
    metricsPort: (server.address() as AddressInfo).port,
    serveProbes: (checks) => {
      probes = checks;
    },
    markStarted: () => {
      started = true;
    },
    close,
  };
}
