import type { Command } from "commander";
import { resetOffsets } from "../adapters/kafka/admin.js";
import { createKafka } from "../adapters/kafka/client.js";
import { createDriver, createGraphWriter } from "../adapters/neo4j/graph-writer.js";
import { STREAMS } from "../model/schemas.js";
import { wipeForRebuild } from "../operations/rebuild.js";
import { noopMetrics, type Stream } from "../ports.js";
import { topicNames } from "../topics.js";
import { action, type CliContext, cliContext } from "./context.js";
import { printRows } from "./output.js";

const STREAM_ALIASES: Record<string, Stream> = {
  registry: "registry-mutation",
  "registry-mutation": "registry-mutation",
  outcome: "outcome-created",
  outcomes: "outcome-created",
  "outcome-created": "outcome-created",
  escalation: "escalation-edge",
  escalations: "escalation-edge",
  "escalation-edge": "escalation-edge",
};

function parseStreams(list: string | undefined): Stream[] {
  if (!list) return [...STREAMS];
  return list.split(",").map((name) => {
    const stream = STREAM_ALIASES[name.trim()];
    if (!stream) throw new Error(`unknown topic "${name}": use registry, outcome, escalation (or their topic names)`);
    return stream;
  });
}

async function reset(
  context: CliContext,
  streams: readonly Stream[],
  to: { earliest: true } | { timestamp: number },
  json: boolean,
) {
  const { config, logger } = context;
  const names = topicNames(config.topics);
  const admin = createKafka(config.kafka, logger).admin();
  await admin.connect();
  try {
    const done = await resetOffsets(
      admin,
      config.kafka.group,
      streams.map((s) => names.source[s]),
      to,
    );
    printRows(done, { json, title: `offsets of group "${config.kafka.group}" reset` });
  } finally {
    await admin.disconnect();
  }
}

export function registerReplay(program: Command): void {
  program
    .command("replay")
    .description("reset the consumer group's offsets so the projector re-reads (refuses while instances run)")
    .option("--to-earliest", "rewind to the start of each topic (the default)")
    .option("--to-timestamp <iso-or-ms>", "rewind to the first record at or after this time")
    .option("--topics <list>", "comma list of registry, outcome, escalation (default: all three)")
    .option("--json", "print JSON")
    .action(
      action(async (options: { toTimestamp?: string; topics?: string; json?: boolean }) => {
        let to: { earliest: true } | { timestamp: number } = { earliest: true };
        if (options.toTimestamp) {
          const timestamp = /^\d+$/.test(options.toTimestamp)
            ? Number(options.toTimestamp)
            : Date.parse(options.toTimestamp);
          if (Number.isNaN(timestamp))
            throw new Error(`--to-timestamp "${options.toTimestamp}" is neither an ISO date nor epoch milliseconds`);
          to = { timestamp };
        }
        await reset(cliContext(), parseStreams(options.topics), to, options.json === true);
      }),
    );

  program
    .command("rebuild")
    .description(
      "wipe Agent, Workflow and Tool nodes and the :OBSERVED markers, then rewind all three topics; the next run rebuilds them",
    )
    .option("--yes", "confirm the wipe")
    .action(
      action(async (options: { yes?: boolean }) => {
        if (!options.yes)
          throw new Error(
            "rebuild wipes the registry projection; pass --yes to confirm (stop every projector instance first)",
          );
        const { config, logger } = cliContext();
        const admin = createKafka(config.kafka, logger).admin();
        const driver = createDriver(config.neo4j);
        await admin.connect();
        try {
          const graph = createGraphWriter(driver, noopMetrics, config.neo4j.txTimeoutMs);
          const names = topicNames(config.topics);
          const rewound = await wipeForRebuild(
            graph,
            admin,
            config.kafka.group,
            config.tenants.map((t) => t.database),
            STREAMS.map((s) => names.source[s]),
          );
          process.stdout.write("wiped Agent, Workflow and Tool nodes and the :OBSERVED markers\n");
          printRows(rewound, { title: `offsets of group "${config.kafka.group}" rewound` });
        } finally {
          await admin.disconnect();
          await driver.close();
        }
        process.stdout.write("start the projector (agent-graph-projector run) to rebuild the graph from the topics\n");
      }),
    );
}
