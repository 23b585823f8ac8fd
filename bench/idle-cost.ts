/**
 * What an instance costs while it has nothing to do: N projector processes joined to one group on
 * fresh, empty topics, and the CPU seconds per second they, Kafka and Neo4j spend over a window after
 * they settled. Whatever an instance spends here it spends under load too, on every record's time,
 * and each instance added pays it again.
 *
 *   npx tsx bench/idle-cost.ts [--instances 1,3] [--seconds 30] [--settle 20] [--repeat 2]
 *
 * `BENCH_PROJECTOR_DIR` measures another checkout's build against this one's stack (bench/README.md).
 */
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import { createKafka } from "../src/adapters/kafka/client.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import { cpuMeter, pidListeningOn } from "./lib/cpu.js";
import { prepareProjector, startProjector } from "./lib/projector.js";

const { values } = parseArgs({
  options: {
    instances: { type: "string", default: "1,3" },
    seconds: { type: "string", default: "30" },
    settle: { type: "string", default: "20" },
    repeat: { type: "string", default: "2" },
  },
});
const counts = String(values.instances).split(",").map(Number);
const seconds = Number(values.seconds);
const settle = Number(values.settle);
const repeat = Number(values.repeat);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const stackEnv = {
  KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? "127.0.0.1:9092",
  SCHEMA_REGISTRY_URL: process.env.SCHEMA_REGISTRY_URL ?? "http://127.0.0.1:8081/apis/ccompat/v7",
  NEO4J_URI: process.env.NEO4J_URI ?? "bolt://127.0.0.1:7687",
  NEO4J_USER: process.env.NEO4J_USER ?? "neo4j",
  NEO4J_PASSWORD: process.env.NEO4J_PASSWORD ?? "projector-local-pw",
};
const servers = { kafka: pidListeningOn(9092), neo4j: pidListeningOn(7687) };
const removeBuild = await prepareProjector();
const results: Record<string, unknown>[] = [];
try {
  for (let turn = 1; turn <= repeat; turn++) {
    for (const count of counts) {
      const prefix = `idle-${Date.now()}`;
      const env: Record<string, string> = {
        ...stackEnv,
        TOPIC_REGISTRY_MUTATION: `${prefix}.registry-mutation`,
        TOPIC_OUTCOME_CREATED: `${prefix}.outcome-created`,
        TOPIC_ESCALATION_EDGE: `${prefix}.escalation-edge`,
        TOPIC_PARTITIONS: "6",
        KAFKA_GROUP_ID: prefix,
        LOG_LEVEL: "info",
        NODE_OPTIONS: "--max-old-space-size=384 --max-semi-space-size=16",
      };
      for (const command of ["topics", "schemas"]) {
        const made = spawnSync(process.execPath, ["bin/agent-graph-projector.js", command], {
          env: { ...process.env, ...env },
          encoding: "utf8",
        });
        if (made.status !== 0) throw new Error(`${command} failed: ${made.stderr || made.stdout}`);
      }
      const instances = Array.from({ length: count }, (_, i) => startProjector(env, `idle-${count}-${i + 1}`));
      try {
        await Promise.all(instances.map((instance) => instance.joinedAt));
        await sleep(settle * 1000);
        const meter = cpuMeter({
          ...servers,
          ...Object.fromEntries(instances.map((instance, i) => [`projector${i + 1}`, instance.pid])),
        });
        await sleep(seconds * 1000);
        const cpu = meter.since();
        const projectors = instances.reduce((sum, _, i) => sum + (cpu[`projector${i + 1}`] ?? 0), 0);
        const perSecond = (value: number | null | undefined) =>
          value == null ? null : Math.round((value / seconds) * 1000) / 1000;
        const row = {
          turn,
          instances: count,
          seconds,
          cpuPerSecond: {
            projectorsEach: perSecond(projectors / count),
            projectors: perSecond(projectors),
            kafka: perSecond(cpu.kafka),
            neo4j: perSecond(cpu.neo4j),
          },
        };
        results.push(row);
        console.log(JSON.stringify(row));
      } finally {
        await Promise.all(instances.map((instance) => instance.stop()));
        const admin = createKafka(loadConfig(env).kafka, createLogger("error")).admin();
        await admin.connect();
        const topics = (await admin.listTopics()).filter((topic) => topic.startsWith(prefix));
        await admin.deleteTopics({ topics }).catch(() => {});
        await admin.deleteGroups([prefix]).catch(() => {});
        await admin.disconnect();
      }
    }
  }
} finally {
  removeBuild();
}
