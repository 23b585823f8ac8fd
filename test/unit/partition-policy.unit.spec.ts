import { describe, expect, it } from "vitest";
import { FatalError, TransientError } from "../../src/errors.js";
import {
  admitBatch,
  heldFrom,
  heldOnJoin,
  MAX_PAUSE_MS,
  notDuePauseMs,
  onConsumerCrash,
  onFailure,
  progressSince,
  splitDue,
  subBatches,
  transactionCap,
} from "../../src/pipeline/partition-policy.js";
import type { SourceRecord } from "../../src/ports.js";
import { HEADER, type Stream, type TopicRole } from "../../src/topics.js";

const retryRecord = (offset: number, notBefore?: number, firstSeen?: number): SourceRecord => ({
  topic: "outcomes.retry",
  partition: 0,
  offset: String(offset),
  timestamp: "0",
  key: null,
  value: Buffer.from("x"),
  headers: {
    ...(notBefore === undefined ? {} : { [HEADER.notBefore]: Buffer.from(String(notBefore)) }),
    ...(firstSeen === undefined ? {} : { [HEADER.firstSeen]: Buffer.from(String(firstSeen)) }),
  },
});

const sizes = (bounds: { start: number; end: number }[]) => bounds.map(({ start, end }) => end - start);

describe("records per transaction", () => {
  it("takes the backlog's size once a caught-up transaction's worth of records waits past it", () => {
    expect(transactionCap(0, 2_000, 5_000)).toBe(2_000);
    expect(transactionCap(1_999, 2_000, 5_000)).toBe(2_000);
    expect(transactionCap(2_000, 2_000, 5_000)).toBe(5_000);
    expect(transactionCap(1_000_000, 2_000, 5_000)).toBe(5_000);
  });

  it("never goes under the caught-up size, so equal sizes turn the distinction off", () => {
    expect(transactionCap(10_000, 2_000, 2_000)).toBe(2_000);
    expect(transactionCap(10_000, 2_000, 1_000)).toBe(2_000);
  });

  it("gives a serial stream's one transaction the backlog's size wherever its partitions stand", () => {
    expect(transactionCap(0, 2_000, 5_000, true)).toBe(5_000);
    expect(transactionCap(0, 2_000, 2_000, true)).toBe(2_000);
    expect(transactionCap(0, 2_000, 1_000, true)).toBe(2_000);
  });
});

describe("sub-batches", () => {
  it("cuts a fetched batch into as few equal sub-batches as the limit allows", () => {
    expect(sizes(subBatches(11_000, 5_000))).toEqual([3_667, 3_667, 3_666]);
    expect(sizes(subBatches(5_000, 5_000))).toEqual([5_000]);
    expect(sizes(subBatches(5_001, 5_000))).toEqual([2_501, 2_500]);
    expect(sizes(subBatches(3, 1))).toEqual([1, 1, 1]);
  });

  it("covers every record once, in order", () => {
    const bounds = subBatches(10, 4);
    expect(bounds).toEqual([
      { start: 0, end: 4 },
      { start: 4, end: 8 },
      { start: 8, end: 10 },
    ]);
  });

  it("has nothing to cut in an empty batch", () => {
    expect(subBatches(0, 100)).toEqual([]);
  });
});

describe("due retry records", () => {
  it("applies every record when all are due and reports nothing waiting", () => {
    const records = [retryRecord(0, 900, 100), retryRecord(1, 1_000, 200), retryRecord(2)];
    expect(splitDue(records, 1_000)).toEqual({ due: records });
  });

  it("stops at the first record not yet due, even if later ones are due", () => {
    const records = [retryRecord(0, 900), retryRecord(1, 1_500, 300), retryRecord(2, 800)];
    const split = splitDue(records, 1_000);
    expect(split.due.map((r) => r.offset)).toEqual(["0"]);
    expect(split.waitUntil).toBe(1_500);
    expect(split.oldestFirstSeen).toBe(300);
  });

  it("counts a waiting record without a first-seen header as first seen now", () => {
    const split = splitDue([retryRecord(0, 2_000)], 1_000);
    expect(split.due).toEqual([]);
    expect(split.oldestFirstSeen).toBe(1_000);
  });

  it("pauses until the head falls due, at least 50 ms and at most the longest pause", () => {
    expect(notDuePauseMs(1_500, 1_000)).toBe(500);
    expect(notDuePauseMs(1_010, 1_000)).toBe(50);
    expect(notDuePauseMs(1_000 + 3_600_000, 1_000)).toBe(MAX_PAUSE_MS);
  });
});

describe("failures", () => {
  it("stops the service on a fatal error", () => {
    expect(onFailure(new FatalError("bad credentials"), 1)).toEqual({ kind: "stop" });
  });

  it("pauses the partition with a backoff that doubles up to 30 s", () => {
    const transient = new TransientError("broker down");
    expect(onFailure(transient, 1)).toEqual({ kind: "pause", ms: 1_000 });
    expect(onFailure(transient, 2)).toEqual({ kind: "pause", ms: 2_000 });
    expect(onFailure(transient, 3, 200)).toEqual({ kind: "pause", ms: 800 });
    expect(onFailure(transient, 20)).toEqual({ kind: "pause", ms: 30_000 });
  });

  it("pauses, rather than stops, on an error nobody recognises", () => {
    expect(onFailure(new Error("?"), 1)).toEqual({ kind: "pause", ms: 1_000 });
  });
});

describe("consumer crashes", () => {
  /** kafkajs's own errors, as its consumer reports them in a CRASH event. */
  const kafkajsError = (name: string, retriable: boolean, cause?: unknown) =>
    Object.assign(new Error(name), { name, retriable, ...(cause === undefined ? {} : { cause }) });
  const running = { kafkajsRestarts: false, joinedBefore: true, crashes: 1 };

  it("leaves the restart to kafkajs when kafkajs restarts", () => {
    const exceeded = kafkajsError("KafkaJSNumberOfRetriesExceeded", false);
    expect(onConsumerCrash(exceeded, { ...running, kafkajsRestarts: true })).toEqual({ kind: "kafkajs-restarts" });
  });

  it("restarts the consumer itself, with a backoff, after a lock timeout that kafkajs gives up on", () => {
    const lock = kafkajsError("KafkaJSLockTimeout", false);
    expect(onConsumerCrash(lock, running)).toEqual({ kind: "restart", ms: 1_000 });
    expect(onConsumerCrash(lock, { ...running, crashes: 3 })).toEqual({ kind: "restart", ms: 4_000 });
    expect(onConsumerCrash(lock, { ...running, crashes: 50 })).toEqual({ kind: "restart", ms: MAX_PAUSE_MS });
  });

  it("restarts after kafkajs's retries ran out on an unreachable broker, whatever wraps it", () => {
    const refused = kafkajsError("KafkaJSConnectionError", true);
    const exceeded = kafkajsError("KafkaJSNumberOfRetriesExceeded", false, refused);
    const wrapped = kafkajsError("KafkaJSNonRetriableError", false, exceeded);
    expect(onConsumerCrash(wrapped, running)).toEqual({ kind: "restart", ms: 1_000 });
  });

  it("restarts when no broker answers the coordinator lookup of a group it was in, stops at start-up", () => {
    const notFound = kafkajsError("KafkaJSGroupCoordinatorNotFound", false);
    expect(onConsumerCrash(notFound, running)).toEqual({ kind: "restart", ms: 1_000 });
    // Before the first join it is the group's missing ACL (startup names it): no broker's return cures that.
    expect(onConsumerCrash(notFound, { ...running, joinedBefore: false })).toEqual({ kind: "stop" });
  });

  it("restarts when the coordinator lookup failed inside kafkajs's rejoin, wrapped by its retrier", () => {
    // A broker stopping answers NOT_COORDINATOR, the rejoin finds no coordinator, and the runner's
    // retrier wraps that in a KafkaJSNonRetriableError: the CRASH a stopped broker gave in the outage test.
    const notFound = kafkajsError("KafkaJSGroupCoordinatorNotFound", false);
    const wrapped = kafkajsError("KafkaJSNonRetriableError", false, notFound);
    expect(onConsumerCrash(wrapped, running)).toEqual({ kind: "restart", ms: 1_000 });
    expect(onConsumerCrash(wrapped, { ...running, joinedBefore: false })).toEqual({ kind: "stop" });
  });

  it("stops the service on what no broker's return cures", () => {
    expect(onConsumerCrash(kafkajsError("KafkaJSSASLAuthenticationError", false), running)).toEqual({ kind: "stop" });
    expect(onConsumerCrash(new FatalError("bad credentials"), running)).toEqual({ kind: "stop" });
    expect(onConsumerCrash(new TypeError("x is undefined"), running)).toEqual({ kind: "stop" });
  });
});

describe("holds", () => {
  const roles: Record<string, TopicRole> = {
    registry: { stream: "registry-mutation", role: "source" },
    outcomes: { stream: "outcome-created", role: "source" },
    "outcomes.retry": { stream: "outcome-created", role: "retry" },
    "outcomes.dlq": { stream: "outcome-created", role: "dead-letter" },
  };
  const heldStreams = new Set<Stream>(["outcome-created"]);
  const isHeld = (stream: Stream) => heldStreams.has(stream);

  it("applies source and retry batches, holds back held source partitions, ignores the rest", () => {
    expect(admitBatch(roles.registry, 3, isHeld)).toBe("apply");
    expect(admitBatch(roles.outcomes, 3, isHeld)).toBe("hold");
    expect(admitBatch(roles["outcomes.retry"], 3, isHeld)).toBe("apply");
    expect(admitBatch(roles["outcomes.dlq"], 3, isHeld)).toBe("ignore");
    expect(admitBatch(undefined, 3, isHeld)).toBe("ignore");
    expect(admitBatch(roles.registry, 0, isHeld)).toBe("ignore");
  });

  it("of a held batch, admits the leading records written before the upstream's applied time", () => {
    const timestamps = ["1000", "1500", "2500", "1200", "3000"];
    expect(heldFrom(timestamps, 2000)).toBe(2);
    // The one written at 1200 waits behind the one at 2500: order within a partition is kept.
    expect(heldFrom(timestamps, 2500)).toBe(2);
    expect(heldFrom(timestamps, 3001)).toBe(5);
    expect(heldFrom(timestamps, 1000)).toBe(0);
    expect(heldFrom(timestamps, Number.NEGATIVE_INFINITY)).toBe(0);
    expect(heldFrom(timestamps, Number.POSITIVE_INFINITY)).toBe(5);
    expect(heldFrom(["not a time"], Number.POSITIVE_INFINITY)).toBe(0);
  });

  it("goes on from where the records applied so far end", () => {
    const timestamps = ["1000", "1500", "2500", "1200", "3000"];
    expect(heldFrom(timestamps, 2000, 2)).toBe(2);
    expect(heldFrom(timestamps, 2600, 2)).toBe(4);
    expect(heldFrom(timestamps, 2600, 4)).toBe(4);
    expect(heldFrom(timestamps, 3001, 4)).toBe(5);
    expect(heldFrom(timestamps, Number.POSITIVE_INFINITY, 5)).toBe(5);
  });

  it("keeps out of the first fetch after a join only the source partitions of held streams", () => {
    const assignment = { registry: [0, 1], outcomes: [2], "outcomes.retry": [0], unknown: [0] };
    expect(heldOnJoin(assignment, (topic) => roles[topic], isHeld)).toEqual([{ topic: "outcomes", partitions: [2] }]);
    expect(
      heldOnJoin(
        assignment,
        (topic) => roles[topic],
        () => false,
      ),
    ).toEqual([]);
  });
});

describe("liveness", () => {
  it("counts fetches only when nothing waits; with lag, a partition's own commit or deliberate pause", () => {
    // Nothing waits: the last fetch is the last progress.
    expect(progressSince(900, [{ highWatermark: 10, next: 10, progressAt: 100 }])).toBe(900);
    // Partition 1 has records waiting since its last commit at 200; its neighbour's later commit and every
    // fetch since do not make it live.
    expect(
      progressSince(900, [
        { highWatermark: 10, next: 4, progressAt: 200 },
        { highWatermark: 50, next: 20, progressAt: 800 },
      ]),
    ).toBe(200);
    // A fetch that stopped altogether is older than any partition's progress.
    expect(progressSince(100, [{ highWatermark: 10, next: 4, progressAt: 200 }])).toBe(100);
  });
});
