import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";

export interface HealthChecks {
  /** Start-up: false until start-up has finished (constraints, topics, group joined); the startup probe. */
  started(): boolean;
  /** Liveness: the process answers and its consumer is not wedged. */
  live(): { ok: boolean; detail: Record<string, unknown> };
  /** Readiness: joined the group, Neo4j and the registry answer. */
  ready(): Promise<{ ok: boolean; detail: Record<string, unknown> }>;
}

/** `/metrics`, `/startupz`, `/healthz` and `/readyz` on one port; node's own http module is all this needs. */
export function startHttpServer(registry: Registry, health: HealthChecks, host: string, port: number): Promise<Server> {
  const server = createServer(async (request, response) => {
    try {
      const path = (request.url ?? "/").split("?")[0];
      if (path === "/metrics") {
        response.writeHead(200, { "content-type": registry.contentType });
        response.end(await registry.metrics());
        return;
      }
      if (path === "/startupz") {
        const ok = health.started();
        response.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
        response.end(JSON.stringify({ status: ok ? "ok" : "starting" }));
        return;
      }
      if (path === "/healthz" || path === "/readyz") {
        const result = path === "/healthz" ? health.live() : await health.ready();
        response.writeHead(result.ok ? 200 : 503, { "content-type": "application/json" });
        response.end(JSON.stringify({ status: result.ok ? "ok" : "unavailable", ...result.detail }));
        return;
      }
      response.writeHead(404, { "content-type": "text/plain" });
      response.end("not found: try /metrics, /startupz, /healthz or /readyz\n");
    } catch (error) {
      response.writeHead(500, { "content-type": "text/plain" });
      response.end(String(error));
    }
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
