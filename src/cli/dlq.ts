import type { Command } from "commander";
import { createKafka, createProducer, createRecordPublisher } from "../adapters/kafka/client.js";
import { createTopicReader } from "../adapters/kafka/read-topic.js";
import { listDeadLetters, redriveDeadLetters } from "../operations/dlq.js";
import { topicNames } from "../topics.js";
import { action, cliContext } from "./context.js";
import { EXIT_CODES } from "./exit-codes.js";
import { printRows } from "./output.js";

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
        const rows = await listDeadLetters(
          createTopicReader(createKafka(config.kafka, logger)),
          topicNames(config.topics),
          options.reason,
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
        const producer = createProducer(kafka);
        await producer.connect();
        let result: Awaited<ReturnType<typeof redriveDeadLetters>>;
        try {
          result = await redriveDeadLetters(
            createTopicReader(kafka),
            createRecordPublisher(producer),
            topicNames(config.topics),
            {
              ids: new Set(ids),
              ...(options.reason === undefined ? {} : { reason: options.reason }),
              all: options.all === true,
            },
          );
        } finally {
          await producer.disconnect();
        }
        process.stdout.write(`re-drove ${result.redriven} record(s) through their retry topics\n`);
        if (result.notRedriven.length > 0) {
          printRows(result.notRedriven, { title: "chosen records not re-driven (left on the dead-letter topic)" });
          process.exitCode = EXIT_CODES.failure;
        }
      }),
    );
}
