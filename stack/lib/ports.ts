import net from "node:net";

export const HOST = "127.0.0.1";

/**
 * Whether we could bind the port ourselves. Binding (rather than connecting)
 * also catches a process that listens on 0.0.0.0 or holds the port without
 * accepting yet.
 */
export function portIsFree(port: number, host = HOST): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

export function tcpAnswers(port: number, host = HOST, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}
