import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import { stopIdleRequestQueueTimers } from "../../src/adapters/kafka/request-queue-timer.js";

/**
 * kafkajs's request queue, driven as a broker connection drives it (push a request, the broker
 * answers it), with the fix in place: no timer is left running once nothing waits, and a request
 * held back by a broker's throttle still goes out when the throttle ends.
 */
interface Queue {
  push(request: {
    entry: { correlationId: number; resolve(): void; reject(): void };
    expectResponse: boolean;
    sendRequest(): void;
  }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  destroy(): void;
  readonly pending: unknown[];
  readonly throttleCheckTimeoutId: unknown;
}

const RequestQueue = createRequire(import.meta.url)("kafkajs/src/network/requestQueue/index.js") as new (
  options: Record<string, unknown>,
) => Queue;

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const queues: Queue[] = [];
const newQueue = (): Queue => {
  const queue = new RequestQueue({
    maxInFlightRequests: null,
    requestTimeout: 30_000,
    enforceRequestTimeout: true,
    clientId: "test",
    broker: "localhost:9092",
    logger: silent,
  });
  queues.push(queue);
  return queue;
};
const request = (correlationId: number, sent: number[]) => ({
  entry: { correlationId, apiKey: 1, apiName: "Fetch", apiVersion: 11, resolve() {}, reject() {} },
  expectResponse: true,
  sendRequest: () => sent.push(correlationId),
});

afterEach(() => {
  for (const queue of queues.splice(0)) queue.destroy();
});

describe("kafkajs request queue: no timer while nothing waits", () => {
  it("applies to the kafkajs the project pins", () => {
    expect(stopIdleRequestQueueTimers()).toBe(true);
    expect(stopIdleRequestQueueTimers()).toBe(true);
  });

  it("an answered request with nothing queued leaves no timer behind", () => {
    stopIdleRequestQueueTimers();
    const queue = newQueue();
    const sent: number[] = [];
    queue.push(request(1, sent));
    expect(sent).toEqual([1]);
    queue.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(queue.throttleCheckTimeoutId).toBeNull();
  });

  it("a request held back by a throttle goes out when the throttle ends", async () => {
    stopIdleRequestQueueTimers();
    const queue = newQueue();
    const sent: number[] = [];
    queue.maybeThrottle(40);
    queue.push(request(2, sent));
    expect(sent).toEqual([]);
    expect(queue.pending).toHaveLength(1);
    expect(queue.throttleCheckTimeoutId).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(sent).toEqual([2]);
    expect(queue.pending).toHaveLength(0);
    queue.fulfillRequest({ correlationId: 2, payload: Buffer.alloc(0), size: 0 });
    expect(queue.throttleCheckTimeoutId).toBeNull();
  });
});
