import net from "node:net";

/**
 * A loopback TCP proxy in front of a server. Its path can go silent — sockets stay open, bytes in both
 * directions are dropped, nothing is reset: what a dead node or a firewall that forgot the connection
 * looks like from the client — or every connection can be cut, as a server restart or failover does.
 */
export class LoopbackProxy {
  private forwarding = true;
  /** Client connections closed from the client's side. */
  closedByClient = 0;
  private marker: string | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      client.on("close", () => {
        if (!upstream.destroyed) this.closedByClient += 1;
      });
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("error", () => {});
        socket.on("close", () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.on("data", (chunk: Buffer) => {
        if (this.marker !== undefined && chunk.includes(this.marker)) {
          this.marker = undefined;
          this.forwarding = false;
        }
        if (this.forwarding) upstream.write(chunk);
      });
      upstream.on("data", (chunk: Buffer) => {
        if (this.forwarding) client.write(chunk);
      });
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Goes silent from the first client bytes that contain `marker` (those are dropped too). */
  silenceAt(marker: string): void {
    this.marker = marker;
  }

  resume(): void {
    this.forwarding = true;
  }

  /** Resets every open connection; new ones are forwarded as before. */
  dropAll(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
