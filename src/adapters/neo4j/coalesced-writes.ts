import { createRequire } from "node:module";

/** The parts of neo4j-driver 6's Node channel that this module touches (not public API). */
interface NodeChannelInternals {
  _pending: unknown[] | null;
  _conn?: { cork(): void; uncork(): void; readonly writableCorked: number };
  write(buffer: unknown): void;
}

let installed: boolean | undefined;

/**
 * neo4j-driver's chunker hands the socket one write per 1,400-byte Bolt chunk, so the parameters of
 * one 2,000-row transaction become hundreds of writes, each a system call: about 1 CPU-s of a 25 s
 * backlog run in the projector's profile, and as many small reads on Neo4j's side. A message is
 * packed synchronously, so corking the socket at the first write of a tick and uncorking it on the
 * next tick sends the whole message as one `writev`, with the same bytes in the same order.
 *
 * Reaches into the driver's internals. If a release moves them this returns false and the driver
 * writes as it always did (slower, never wrong). Idempotent; applies to every driver in the process.
 */
export function coalesceSocketWrites(): boolean {
  if (installed !== undefined) return installed;
  installed = false;
  let channel: { prototype: NodeChannelInternals } | undefined;
  try {
    const require = createRequire(driverLocation());
    channel = require("neo4j-driver-bolt-connection/lib/channel/node/node-channel.js").default;
  } catch {
    return installed;
  }
  const prototype = channel?.prototype;
  if (typeof prototype?.write !== "function") return installed;
  const write = prototype.write;
  prototype.write = function corkingWrite(this: NodeChannelInternals, buffer: unknown) {
    const socket = this._conn;
    if (this._pending === null && socket && socket.writableCorked === 0 && typeof socket.cork === "function") {
      socket.cork();
      process.nextTick(() => socket.uncork());
    }
    write.call(this, buffer);
  };
  installed = true;
  return installed;
}

/** Resolves from neo4j-driver's own location, so that the patched module is the one it loads. */
function driverLocation(): string {
  return createRequire(import.meta.url).resolve("neo4j-driver");
}
