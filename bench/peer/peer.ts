/**
 * `npx tsx bench/peer/peer.ts build|start` — the benchmark's peer, the Neo4j Connector for Apache Kafka
 * in a Kafka Connect worker, on its own (`npm run bench` starts and stops it by itself).
 *
 *   build   builds (or finds cached) Kafka Connect, Apicurio's converter and the connector (build.ts)
 *   start   builds, then starts a standalone worker against the endpoints in the environment
 *           (KAFKA_BROKERS, SCHEMA_REGISTRY_URL, NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD, or the local
 *           stack's) with the connector on the projector's three topics (TOPIC_* as the projector
 *           reads them), and runs until interrupted.
 *
 * Environment: PEER_CONNECT_PORT (the worker's REST port, 8083), PEER_CONNECT_HEAP (2G),
 * PEER_BATCH_SIZE (neo4j.batch-size, 1000), PEER_TASKS (tasks.max, 1), and the source settings of
 * build.ts (PEER_CONNECTOR_SRC, PEER_CONNECTOR_GIT, PEER_CONNECTOR_REF, PEER_CDC_CLIENT_*).
 */
import path from "node:path";
import { z } from "zod";
import { loadConfig as loadProjectorConfig } from "../../src/config.js";
import { STREAMS, topicNames } from "../../src/topics.js";
import { loadConfig as loadStackConfig } from "../../stack/config.js";
import { cacheDir } from "../../stack/servers/types.js";
import { buildPeer, type PeerArtifacts } from "./build.js";
import { PEER_STATEMENTS } from "./statements.js";
import { apicurioApiUrl, connectorConfig, startWorker } from "./worker.js";

const peerEnvSchema = z.object({
  PEER_CONNECT_PORT: z.coerce.number().int().min(1024).max(65535).default(8083),
  PEER_CONNECT_HEAP: z
    .string()
    .regex(/^\d+[kmgKMG]$/, "expected a JVM size such as 2G")
    .default("2G"),
  PEER_BATCH_SIZE: z.coerce.number().int().positive().default(1000),
  PEER_TASKS: z.coerce.number().int().positive().default(1),
});

export type PeerEnv = z.infer<typeof peerEnvSchema>;

export function loadPeerEnv(env: NodeJS.ProcessEnv): PeerEnv {
  const parsed = peerEnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid ${String(issue?.path[0])}: ${issue?.message}`);
  }
  return parsed.data;
}

/** Builds the peer with the stack's cache directory and Maven arguments. */
export function buildPeerForStack(env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<PeerArtifacts> {
  const stack = loadStackConfig(env);
  return buildPeer({ cacheDir: cacheDir(stack), mavenArgs: stack.mavenArgs, env, log });
}

async function main(): Promise<void> {
  const command = process.argv[2];
  const say = (line: string) => process.stderr.write(`${line}\n`);
  if (command !== "build" && command !== "start") {
    say("usage: npx tsx bench/peer/peer.ts build|start");
    process.exit(2);
  }
  const peerEnv = loadPeerEnv(process.env);
  const artifacts = await buildPeerForStack(process.env, say);
  say(`peer: connector ${artifacts.connectorVersion}: ${artifacts.connectorJar}`);
  if (command === "build") return;

  const { useLocalStackUnlessConfigured } = await import("../../stack/api.js");
  await useLocalStackUnlessConfigured(process.env, say);
  const config = loadProjectorConfig(process.env);
  const stack = loadStackConfig(process.env);
  const names = topicNames(config.topics);
  const worker = startWorker({
    artifacts,
    java: stack.java,
    dir: path.join(stack.home, "peer-worker"),
    restPort: peerEnv.PEER_CONNECT_PORT,
    kafkaBrokers: config.kafka.brokers.join(","),
    registryApiUrl: apicurioApiUrl(config.registry.url),
    heap: peerEnv.PEER_CONNECT_HEAP,
    offsetFlushMs: 1_000,
    marker: `-Dagentgraph.peer=${stack.home}`,
  });
  say(
    `peer: Connect worker pid ${worker.pid}, REST http://127.0.0.1:${peerEnv.PEER_CONNECT_PORT}, log ${worker.logFile}`,
  );
  await worker.ready;
  const name = "agent-graph-neo4j-sink";
  await worker.createConnector({
    name,
    config: connectorConfig({
      topics: Object.fromEntries(STREAMS.map((stream) => [names.source[stream], PEER_STATEMENTS[stream]])),
      neo4j: {
        uri: config.neo4j.uri,
        user: config.neo4j.user,
        password: config.neo4j.password ?? "",
        database: config.neo4j.database,
      },
      batchSize: peerEnv.PEER_BATCH_SIZE,
      tasks: peerEnv.PEER_TASKS,
    }),
  });
  say(`peer: connector ${name} created on ${Object.values(names.source).join(", ")}; Ctrl-C stops the worker`);
  const stop = async () => {
    await worker.stop();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const code = await worker.exited;
  say(`peer: worker exited with ${code}`);
  process.exit(code ?? 1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  main().catch((error) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
