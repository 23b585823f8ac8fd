import { Argument, type Command, Option } from "commander";
import { createKafka, createProducer, createRecordPublisher } from "../adapters/kafka/client.js";
import { createTopicReader } from "../adapters/kafka/read-topic.js";
import { listDeadLetters, type NotRedriven, planRedrive, redriveDeadLetters } from "../operations/dlq.js";
import { topicNames } from "../topics.js";
import { action, cliContext, UsageError } from "./context.js";
import { exitCode } from "./exit-codes.js";
import { printDocument, printRows } from "./output.js";
import { deadLetterId } from "./parse.js";

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
    .addArgument(
      new Argument("[ids...]", "records to re-drive, as <dlq-topic>:<partition>:<offset> (from dlq list)").argParser(
        deadLetterId,
      ),
    )
    .option("--reason <reason>", "re-drive every record dead-lettered for this reason")
    .addOption(new Option("--all", "re-drive every dead-lettered record").conflicts("reason"))
    .option(
      "--dry-run",
      "list the records that would be re-driven and the retry topic each would go to; publish nothing",
    )
    .option("--json", "print JSON: one document { redriven | wouldRedrive, notRedriven }")
    .action(
      action(
        async (
          ids: string[] | undefined,
          options: { reason?: string; all?: boolean; dryRun?: boolean; json?: boolean },
        ) => {
          const chosenIds = ids ?? [];
          if (chosenIds.length === 0 && !options.reason && !options.all)
            throw new UsageError("name records to re-drive, or pass --reason or --all");
          if (chosenIds.length > 0 && options.all) throw new UsageError("pass either record ids or --all, not both");
          const { config, logger } = cliContext();
          const kafka = createKafka(config.kafka, logger);
          const names = topicNames(config.topics);
          const selection = {
            ids: new Set(chosenIds),
            ...(options.reason === undefined ? {} : { reason: options.reason }),
            all: options.all === true,
          };
          const json = options.json === true;
          if (options.dryRun) {
            const { toRedrive, notRedriven } = await planRedrive(createTopicReader(kafka), names, selection);
            if (json) printDocument({ dryRun: true, wouldRedrive: toRedrive, notRedriven });
            else {
              printRows(toRedrive, {
                title: `dry run: ${toRedrive.length} record(s) would be re-driven; nothing was published`,
              });
              printNotRedriven(notRedriven);
            }
            if (notRedriven.length > 0) process.exitCode = exitCode("failed");
            return;
          }
          const producer = createProducer(kafka);
          await producer.connect();
          let result: Awaited<ReturnType<typeof redriveDeadLetters>>;
          try {
            result = await redriveDeadLetters(
              createTopicReader(kafka),
              createRecordPublisher(producer),
              names,
              selection,
            );
          } finally {
            await producer.disconnect();
          }
          if (json) printDocument(result);
          else {
            process.stdout.write(`re-drove ${result.redriven} record(s) through their retry topics\n`);
            printNotRedriven(result.notRedriven);
          }
          if (result.notRedriven.length > 0) process.exitCode = exitCode("failed");
        },
      ),
    );
}

function printNotRedriven(rows: readonly NotRedriven[]): void {
  if (rows.length > 0) printRows(rows, { title: "chosen records not re-driven (left on the dead-letter topic)" });
}
