import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { startHttpServer } from "../../src/adapters/http/server.js";

describe("health endpoints", () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it("/startupz answers 503 until start-up has finished, then 200; /healthz and /readyz answer meanwhile", async () => {
    let started = false;
    const running = await startHttpServer(
      new Registry(),
      {
        started: () => started,
        live: () => ({ ok: true, detail: { starting: !started } }),
        ready: async () => ({ ok: started, detail: {} }),
      },
      "127.0.0.1",
      0,
    );
    server = running;
    const url = (path: string) => `http://127.0.0.1:${(running.address() as AddressInfo).port}${path}`;
    const status = async (path: string) => (await fetch(url(path))).status;
    expect(await status("/startupz")).toBe(503);
    expect(await (await fetch(url("/startupz"))).json()).toEqual({ status: "starting" });
    expect(await status("/healthz")).toBe(200);
    expect(await status("/readyz")).toBe(503);
    started = true;
    expect(await status("/startupz")).toBe(200);
    expect(await status("/readyz")).toBe(200);
  });
});
