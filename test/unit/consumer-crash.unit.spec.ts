import type { Kafka } from "kafkajs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createProjectorConsumer } from "../../src/adapters/kafka/consumer.js";
import type { ConsumerMetrics } from "../../src/ports.js";
import { topicNames } from "../../src/topics.js";

/** kafkajs's consumer as the adapter uses it, whose CRASH events the test raises. */
function fakeKafka() {
  const events = { GROUP_JOIN: "join", REBALANCING: "rebalancing", STOP: "stop", FETCH: "fetch", CRASH: "crash" };
  const listeners = new Map<string, ((event: unknown) => void)[]>();
  const calls = { connect: 0, run: 0 };
  const consumer = {
    events: { ...events, END_BATCH_PROCESS: "end" },
    on(name: string, listener: (event: unknown) => void) {
      listeners.set(name, [...(listeners.get(name) ?? []), listener]);
      return () =>
        listeners.set(
          name,
          (listeners.get(name) ?? []).filter((l) => l !== listener),
        );
    },
    async connect() {
      calls.connect += 1;
    },
    async subscribe() {},
    async run() {
      calls.run += 1;
    },
    async disconnect() {},
    pause() {},
    resume() {},
  };
  const emit = (name: string, payload: unknown) => {
    for (const listener of listeners.get(name) ?? []) listener({ payload });
  };
  return { kafka: { consumer: () => consumer } as unknown as Kafka, calls, emit, events };
}

const kafkajsError = (name: string, retriable: boolean) => Object.assign(new Error(name), { name, retriable });

function started() {
  const fake = fakeKafka();
  const onFatal = vi.fn();
  const metrics = new Proxy({}, { get: () => () => {} }) as ConsumerMetrics;
  const consumer = createProjectorConsumer(
    fake.kafka,
    topicNames({
      registryMutation: "registry",
      outcomeCreated: "outcomes",
      escalationEdge: "escalations",
      retrySuffix: ".retry",
      dlqSuffix: ".dlq",
      findings: "findings",
    }),
    { groupId: "g", partitionsConsumedConcurrently: 1, maxBatchRecords: 10 },
    {
      handle: async () => {},
      metrics,
      logger: { info() {}, warn() {}, error() {}, debug() {} },
      clock: { now: () => Date.now() },
      onFatal,
    },
  );
  return { ...fake, onFatal, consumer };
}

describe("the consumer after a crash kafkajs does not restart from", () => {
  afterEach(() => vi.useRealTimers());

  it("connects and runs again, with a backoff, after a lock timeout of a long outage; the service stays up", async () => {
    vi.useFakeTimers();
    const { consumer, calls, emit, events, onFatal } = started();
    await consumer.start();
    emit(events.GROUP_JOIN, { memberAssignment: {}, groupId: "g" });
    expect(consumer.isJoined()).toBe(true);

    emit(events.CRASH, { error: kafkajsError("KafkaJSLockTimeout", false), restart: false });
    expect(consumer.isJoined()).toBe(false);
    expect(onFatal).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(999);
    expect(calls.run).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toEqual({ connect: 2, run: 2 });

    // Still away: the next crash waits twice as long.
    emit(events.CRASH, { error: kafkajsError("KafkaJSGroupCoordinatorNotFound", false), restart: false });
    await vi.advanceTimersByTimeAsync(1_999);
    expect(calls.run).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.run).toBe(3);
    expect(onFatal).not.toHaveBeenCalled();
    await consumer.stop();
  });

  it("stops the service on what no broker's return cures", async () => {
    const { consumer, emit, events, onFatal } = started();
    await consumer.start();
    emit(events.GROUP_JOIN, { memberAssignment: {}, groupId: "g" });
    const refused = kafkajsError("KafkaJSSASLAuthenticationError", false);
    emit(events.CRASH, { error: refused, restart: false });
    expect(onFatal).toHaveBeenCalledWith(refused);
  });

  it("does not restart once stopping", async () => {
    vi.useFakeTimers();
    const { consumer, calls, emit, events, onFatal } = started();
    await consumer.start();
    emit(events.GROUP_JOIN, { memberAssignment: {}, groupId: "g" });
    emit(events.CRASH, { error: kafkajsError("KafkaJSLockTimeout", false), restart: false });
    await consumer.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls.run).toBe(1);
    expect(onFatal).not.toHaveBeenCalled();
  });
});
