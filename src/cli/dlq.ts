import type { Command } from "commander";
import type { IHeaders } from "kafkajs";
import { createKafka, createProducer, sendBatchAtLeastOnce } from "../adapters/kafka/client.js";
import { type ReadRecord, readTopicsToEnd } from "../adapters/kafka/read-topic.js";
import { HEADER, STREAMS, topicNames } from "../topics.js";
import { action, cliContext } from "./context.js";
import { printRows } from "./output.js";

function header(record: ReadRecord, name: string): string | undefined {
  const value = record.message.headers?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
}

function describe(record: ReadRecord) {
  return {
    dlq: `${record.topic}:${record.partition}:${record.message.offset}`,
    source: `${header(record, HEADER.sourceTopic) ?? "?"}:${header(record, HEADER.sourcePartition) ?? "?"}:${header(record, HEADER.sourceOffset) ?? "?"}`,
    key: record.message.key?.toString() ?? null,
    reason: header(record, HEADER.errorClass) ?? "?",
    message: header(record, HEADER.errorMessage) ?? "",
  };
}

/** Where a record came from, which a re-driven record keeps: it is a late copy of that record. */
const KEPT_HEADERS = new Set<string>([
  HEADER.sourceTopic,
  HEADER.sourcePartition,
  HEADER.sourceOffset,
  HEADER.sourceTimestamp,
]);

/** Headers of a re-driven record: the original ones and its source, without the dead-letter verdict. */
function redriveHeaders(record: ReadRecord): IHeaders {
  const headers: IHeaders = {};
  for (const [name, value] of Object.entries(record.message.headers ?? {})) {
    if ((!name.startsWith("agp-") || KEPT_HEADERS.has(name)) && value !== undefined) headers[name] = value;
  }
  return headers;
}

export function registerDlq(program: Command): void {
  const dlq = program
    .command("dlq")
    .description("inspect dead-lettered records and re-drive them through their stream's retry topic");

  dlq
    .command("list")
    .description("list dead-lettered records with their reasons")
    .option("--reason <reason>", "only records dead-lettered for this reason")
    .option("--json", "print JSON")
    .action(
      action(async (options: { reason?: string; json?: boolean }) => {
        const { config, logger } = cliContext();
        const names = topicNames(config.topics);
        const rows: ReturnType<typeof describe>[] = [];
        await readTopicsToEnd(
          createKafka(config.kafka, logger),
          STREAMS.map((s) => names.deadLetter[s]),
          (record) => {
            const row = describe(record);
            if (!options.reason || row.reason === options.reason) rows.push(row);
          },
        );
        printRows(rows, { json: options.json === true, empty: "no dead-lettered records" });
      }),
    );

  dlq
    .command("redrive")
    .description(
      "publish chosen dead-lettered records again, after a fix, to their stream's retry topic (never to the source: a registry record would become the compacted topic's latest value)",
    )
    .argument("[ids...]", "records to re-drive, as <dlq-topic>:<partition>:<offset> (from dlq list)")
    .option("--reason <reason>", "re-drive every record dead-lettered for this reason")
    .option("--all", "re-drive every dead-lettered record")
    .action(
      action(async (ids: string[], options: { reason?: string; all?: boolean }) => {
        if (ids.length === 0 && !options.reason && !options.all)
          throw new Error("name records to re-drive, or pass --reason or --all");
        const { config, logger } = cliContext();
        const kafka = createKafka(config.kafka, logger);
        const names = topicNames(config.topics);
        const wanted = new Set(ids);
        const chosen: ReadRecord[] = [];
        await readTopicsToEnd(
          kafka,
          STREAMS.map((s) => names.deadLetter[s]),
          (record) => {
            const row = describe(record);
            if (options.all || wanted.has(row.dlq) || (options.reason && row.reason === options.reason))
              chosen.push(record);
          },
        );
        const producer = createProducer(kafka);
        await producer.connect();
        try {
          for (const record of chosen) {
            const topic = header(record, HEADER.sourceTopic);
            const source = STREAMS.find((s) => names.source[s] === topic || names.retry[s] === topic);
            if (!source)
              throw new Error(`record ${describe(record).dlq} names no known source topic (${topic ?? "none"})`);
            // To the retry topic, never the source: on the compacted registry topic an old snapshot
            // would become its key's latest value, what a rebuild or reconciliation reads as the
            // registry. From the retry topic it is applied once, fenced like any late record.
            await sendBatchAtLeastOnce(producer, {
              topicMessages: [
                {
                  topic: names.retry[source],
                  messages: [{ key: record.message.key, value: record.message.value, headers: redriveHeaders(record) }],
                },
              ],
            });
          }
        } finally {
          await producer.disconnect();
        }
        process.stdout.write(`re-drove ${chosen.length} record(s) through their retry topics\n`);
      }),
    );
}
