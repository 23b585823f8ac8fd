/**
 * Local stack launcher: Kafka (KRaft), Apicurio Registry (Confluent API) and
 * Neo4j as plain JVM processes from Maven Central artifacts, on 127.0.0.1.
 *
 *   tsx stack/stack.ts up|down|status|reset|verify|env|help
 *
 * Importing this module has no side effects; the CLI only runs when the file
 * is executed directly. The programmatic API is re-exported from ./api.ts.
 */
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import {
  envLines,
  loadConfig,
  StackConfigError,
  StackError,
  stackDown,
  stackEndpoints,
  stackReset,
  stackStatus,
  stackUp,
} from "./api.js";
import { kafkaQuorum } from "./servers/kafka.js";
import { verifyStack } from "./verify.js";

export * from "./api.js";

const HELP = `usage: tsx stack/stack.ts <command>

commands:
  up       build/fetch what is missing, start what is not running, wait until
           every server answers, then print the endpoints as env lines
  down     stop the servers (SIGTERM, SIGKILL after a grace period); data stays
  status   pid, liveness and whether each server answers, plus endpoints
  reset    down, then delete all server data and logs under STACK_HOME
  verify   smoke-test the running servers with the projector's client libraries
           (register/encode/decode an Avro schema, produce/consume, Bolt RETURN 1)
  env      print the env lines without checking anything

servers (127.0.0.1 only):
  kafka     Apache Kafka 4.1, one KRaft broker+controller   STACK_KAFKA_PORT (9092),
            auto topic creation off, 3 partitions by default STACK_KAFKA_CONTROLLER_PORT (9093)
            STACK_KAFKA_BROKERS=3: three nodes, each broker+controller (a quorum of three),
            node n on the ports above + (n-1)*STACK_KAFKA_PORT_STEP (2); topics replicated 3
            times with min.insync.replicas=2 unless created otherwise
  registry  Apicurio Registry 2.6, Confluent API under      STACK_REGISTRY_PORT (8081)
            /apis/ccompat/v7; IN-MEMORY: every down/up starts with no schemas, which is
            fine because the projector registers its schemas when it starts
  neo4j     Neo4j 5.26 Community (stack/neo4j launcher)     STACK_NEO4J_BOLT_PORT (7687)

environment:
  STACK_HOME        data, logs and pid files (default: .stack at the repo root)
  STACK_SERVICES    comma list to start a subset, e.g. kafka,registry
  NEO4J_PASSWORD    password for user neo4j (default projector-local-pw)
  STACK_KAFKA_HEAP (768m; 512m per node of a cluster), STACK_REGISTRY_HEAP (512m), STACK_NEO4J_HEAP (1g)
  STACK_JAVA        java executable (default: $JAVA_HOME/bin/java, else java)
  STACK_MAVEN_ARGS  extra Maven arguments, e.g. -o or -Dmaven.repo.local=DIR

Progress goes to stderr and the env lines to stdout, so
  eval "$(npm run -s stack:up)"
exports them into a shell.
`;

const progress = (msg: string) => process.stderr.write(`[stack] ${msg}\n`);

function formatKiB(kib: number | undefined): string {
  return kib === undefined ? "-" : `${Math.round(kib / 1024)} MiB`;
}

async function main(argv: string[]): Promise<number> {
  const command = argv[0] ?? "help";
  switch (command) {
    case "up": {
      const t0 = Date.now();
      const cfg = loadConfig();
      const result = await stackUp({ log: progress });
      progress(
        result.startedAnything
          ? `up in ${((Date.now() - t0) / 1000).toFixed(1)}s (started: ${result.started.join(", ")})`
          : "already up",
      );
      process.stdout.write(`${envLines(result, cfg.services).join("\n")}\n`);
      return 0;
    }
    case "down": {
      await stackDown({ log: progress });
      return 0;
    }
    case "reset": {
      await stackReset({ log: progress });
      return 0;
    }
    case "status": {
      const cfg = loadConfig();
      const st = await stackStatus();
      process.stdout.write(`STACK_HOME ${st.home}\n`);
      for (const s of st.servers) {
        const state = s.answering ? "answering" : s.alive ? `alive, not answering (${s.reason})` : "stopped";
        process.stdout.write(
          `${s.unit.padEnd(9)} pid=${String(s.pid ?? "-").padEnd(8)} rss=${formatKiB(s.rssKiB).padEnd(9)} ${state}  ${s.endpoint}\n`,
        );
      }
      const nodes = st.servers.filter((s) => s.name === "kafka");
      if (nodes.length > 1 && nodes.some((s) => s.answering)) {
        const quorum = await kafkaQuorum(cfg).catch((err: Error) => err);
        process.stdout.write(
          quorum instanceof Error
            ? `kafka quorum: not described (${quorum.message.split("\n")[0]})\n`
            : `kafka quorum: active controller node ${quorum.leaderId} (epoch ${quorum.leaderEpoch}), voters ${quorum.voters.map((v) => v.id).join(", ")}\n`,
        );
      }
      process.stdout.write(`\n${envLines(st.endpoints, cfg.services).join("\n")}\n`);
      // Non-zero unless every selected server answers, so scripts can use `status` as a check.
      const selected = st.servers.filter((s) => cfg.services.includes(s.name));
      return selected.every((s) => s.answering) ? 0 : 3;
    }
    case "verify": {
      const cfg = loadConfig();
      const st = await stackStatus();
      const down = st.servers.filter((s) => cfg.services.includes(s.name) && !s.answering);
      if (down.length > 0)
        throw new StackError(`not answering: ${down.map((s) => s.name).join(", ")}; run stack:up first`);
      await verifyStack(st.endpoints, cfg.services, progress);
      return 0;
    }
    case "env": {
      process.stdout.write(`${envLines(stackEndpoints(), loadConfig().services).join("\n")}\n`);
      return 0;
    }
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(HELP);
      return 0;
    default:
      process.stderr.write(`unknown command "${command}"\n\n${HELP}`);
      return 2;
  }
}

function invokedDirectly(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return fs.realpathSync(entry) === fs.realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      if (err instanceof StackError || err instanceof StackConfigError) {
        process.stderr.write(`[stack] FAILED: ${err.message}\n`);
        if (err instanceof StackError && err.details) process.stderr.write(`${err.details}\n`);
      } else {
        process.stderr.write(`[stack] FAILED: ${(err as Error)?.stack ?? String(err)}\n`);
      }
      process.exitCode = 1;
    },
  );
}
