import { logLevel } from "kafkajs";
import { describe, expect, it } from "vitest";
import { createKafka } from "../../src/adapters/kafka/client.js";
import { kafkaLogLevel } from "../../src/adapters/kafka/log-level.js";
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
