import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { coalesceSocketWrites } from "../../src/adapters/neo4j/coalesced-writes.js";

// The driver's own modules, resolved the way the patch resolves them.
const driverRequire = createRequire(createRequire(import.meta.url).resolve("neo4j-driver"));
const { default: NodeChannel } = driverRequire("neo4j-driver-bolt-connection/lib/channel/node/node-channel.js");
const { Chunker } = driverRequire("neo4j-driver-bolt-connection/lib/channel/chunking.js");

/** A socket that records what reaches the wire: one entry per write while uncorked, one per uncork. */
function recordingSocket() {
  const wire: Buffer[] = [];
  let held: Buffer[] = [];
  let corks = 0;
  const socket = {
    get writableCorked() {
      return corks;
    },
    cork() {
      corks++;
    },
    uncork() {
      corks = Math.max(0, corks - 1);
      if (corks === 0 && held.length > 0) {
        wire.push(Buffer.concat(held));
        held = [];
      }
    },
    write(buffer: Buffer) {
      if (corks > 0) held.push(Buffer.from(buffer));
      else wire.push(Buffer.from(buffer));
      return true;
    },
  };
  return { socket, wire };
}

/** Packs `size` bytes into one Bolt message through the driver's chunker on a channel over `socket`. */
function packMessage(socket: object, size: number): void {
  const channel = Object.assign(Object.create(NodeChannel.prototype), { _pending: null, _conn: socket });
  const chunker = new Chunker(channel);
  for (let i = 0; i < size; i++) chunker.putUInt8(0, i % 251);
  chunker.messageBoundary();
  chunker.flush();
}

const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

describe("coalesceSocketWrites", () => {
  it("finds the driver's channel and installs once", () => {
    expect(coalesceSocketWrites()).toBe(true);
    expect(coalesceSocketWrites()).toBe(true);
  });

  it("sends a message packed in one tick as one write, with the same bytes, then uncorks", async () => {
    coalesceSocketWrites();
    const { socket, wire } = recordingSocket();
    packMessage(socket, 20_000);
    expect(wire).toHaveLength(0);
    expect(socket.writableCorked).toBe(1);
    await nextTick();
    expect(socket.writableCorked).toBe(0);
    expect(wire).toHaveLength(1);

    // The same message over a plain channel write by write: the chunker's own framing.
    const plain: Buffer[] = [];
    const rawChannel = { write: (buffer: { _buffer: Buffer }) => plain.push(Buffer.from(buffer._buffer)) };
    const chunker = new Chunker(rawChannel);
    for (let i = 0; i < 20_000; i++) chunker.putUInt8(0, i % 251);
    chunker.messageBoundary();
    chunker.flush();
    expect(plain.length).toBeGreaterThan(10);
    expect(wire[0]?.equals(Buffer.concat(plain))).toBe(true);
  });

  it("leaves a socket someone else corked to them, and writes of the next tick go out on their own", async () => {
    coalesceSocketWrites();
    const { socket, wire } = recordingSocket();
    socket.cork();
    packMessage(socket, 3_000);
    await nextTick();
    expect(socket.writableCorked).toBe(1);
    socket.uncork();
    expect(wire).toHaveLength(1);

    packMessage(socket, 10);
    await nextTick();
    expect(wire).toHaveLength(2);
  });
});
