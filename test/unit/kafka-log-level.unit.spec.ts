import { logLevel } from "kafkajs";
import { describe, expect, it, vi } from "vitest";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { createRepeatThrottle, kafkaLogLevel } from "../../src/adapters/kafka/log-level.js";
import { loadConfig } from "../../src/config.js";

/** kafkajs's log lines as they reach our log: which level each gets. */
function levelsOf(emit: (kafkaLogger: ReturnType<ReturnType<typeof createKafka>["logger"]>) => void) {
  const seen: string[] = [];
  const record = (level: string) => (_fields: object, message: string) => seen.push(`${level}: ${message}`);
  const logger = { error: record("error"), warn: record("warn"), info: record("info"), debug: record("debug") };
  const kafka = createKafka(loadConfig({ KAFKA_BROKERS: "127.0.0.1:1" }).kafka, logger);
  emit(kafka.logger());
  return seen;
}

describe("kafkajs log levels: ERROR only for what someone must act on", () => {
  it("a broker error kafkajs retries is info: the coordinator lookup on a fresh cluster, a leader election", () => {
    const seen = levelsOf((log) => {
      log.error("Response FindCoordinator(key: 10, version: 2)", {
        error: "The group coordinator is not available",
        correlationId: 3,
      });
      log.error("Response Metadata(key: 3, version: 6)", {
        error: "There is no leader for this topic-partition as we are in the middle of a leadership election",
      });
      log.error("Response Heartbeat(key: 12, version: 3)", {
        error: "This is not the correct coordinator for this group",
      });
    });
    expect(seen).toEqual([
      "info: Response FindCoordinator(key: 10, version: 2)",
      "info: Response Metadata(key: 3, version: 6)",
      "info: Response Heartbeat(key: 12, version: 3)",
    ]);
  });

  it("a rebalance, which the consumer answers by re-joining, is info", () => {
    const seen = levelsOf((log) => {
      log.error("Response Heartbeat(key: 12, version: 3)", {
        error: "The group is rebalancing, so a rejoin is needed",
      });
      log.error("The coordinator is not aware of this member, re-joining the group", {
        error: "The coordinator is not aware of this member",
      });
    });
    expect(seen.every((line) => line.startsWith("info: "))).toBe(true);
  });

  it("a line kafkajs follows with a retry is a warning; a consumer crash on a retried error too", () => {
    expect(kafkaLogLevel(logLevel.ERROR, "Restarting the consumer in 300ms", { retryCount: 1, retryTime: 300 })).toBe(
      "warn",
    );
    expect(
      kafkaLogLevel(logLevel.ERROR, "Crash: KafkaJSProtocolError: The group coordinator is not available", {
        groupId: "g",
      }),
    ).toBe("warn");
  });

  it("what kafkajs does not retry stays an error; warnings stay warnings, the rest is debug", () => {
    const seen = levelsOf((log) => {
      log.error("Response SaslAuthenticate(key: 36, version: 1)", {
        error: "Request is not valid given the current SASL state",
      });
      log.error("Response Produce(key: 0, version: 7)", {
        error: "Not authorized to access topics: [Topic authorization failed]",
      });
      log.error("Crash: KafkaJSNonRetriableError: Consumer group was not initialized", { groupId: "g" });
      log.warn("KafkaJS v2.0.0 switched default partitioner", {});
      log.info("Consumer has joined the group", {});
    });
    expect(seen).toEqual([
      "error: Response SaslAuthenticate(key: 36, version: 1)",
      "error: Response Produce(key: 0, version: 7)",
      "error: Crash: KafkaJSNonRetriableError: Consumer group was not initialized",
      "warn: KafkaJS v2.0.0 switched default partitioner",
    ]);
  });
});

describe("kafkajs connection errors in an outage: the first at once, then a line every few seconds with a count", () => {
  const refused = "Connection error: connect ECONNREFUSED 127.0.0.1:9092";

  it("drops repeats of the same connection line within the window and counts them on the next one", () => {
    const throttle = createRepeatThrottle(5_000);
    const admitted: [number, number | undefined][] = [];
    // 14 a second for 12 s, as one instance logged in the Kafka outage.
    for (let now = 0; now < 12_000; now += 70) admitted.push([now, throttle.admit(refused, now)]);
    const logged = admitted.filter(([, dropped]) => dropped !== undefined);
    expect(logged.map(([at]) => at)).toEqual([0, 5_040, 10_080]);
    expect(logged.map(([, dropped]) => dropped)).toEqual([0, 71, 71]);
  });

  it("keeps every other line, and each broker's connection line apart", () => {
    const throttle = createRepeatThrottle(5_000);
    expect(throttle.admit(refused, 0)).toBe(0);
    expect(throttle.admit("Connection error: connect ECONNREFUSED 127.0.0.1:9094", 10)).toBe(0);
    expect(throttle.admit("Crash: KafkaJSNumberOfRetriesExceeded: x", 20)).toBe(0);
    expect(throttle.admit("Crash: KafkaJSNumberOfRetriesExceeded: x", 30)).toBe(0);
    expect(throttle.admit(refused, 40)).toBeUndefined();
  });

  it("the client's log gets the first line and then the count", () => {
    const lines: [string, Record<string, unknown>][] = [];
    const record = (level: string) => (fields: Record<string, unknown>, message: string) =>
      lines.push([`${level}: ${message}`, fields]);
    const logger = { error: record("error"), warn: record("warn"), info: record("info"), debug: record("debug") };
    const kafka = createKafka(loadConfig({ KAFKA_BROKERS: "127.0.0.1:1" }).kafka, logger);
    vi.useFakeTimers({ now: 0, toFake: ["Date"] });
    try {
      for (let i = 0; i < 30; i++) kafka.logger().error(refused, { broker: "127.0.0.1:9092" });
      vi.setSystemTime(6_000);
      kafka.logger().error(refused, { broker: "127.0.0.1:9092" });
    } finally {
      vi.useRealTimers();
    }
    expect(lines.map(([line]) => line)).toEqual([`error: ${refused}`, `error: ${refused}`]);
    expect(lines[0]?.[1].repeated).toBeUndefined();
    expect(lines[1]?.[1]).toMatchObject({ repeated: 29, repeatWindowMs: 5_000, broker: "127.0.0.1:9092" });
  });
});
