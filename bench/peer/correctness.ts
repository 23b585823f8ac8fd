/**
 * Correctness of the projector and of the peer on the same log, in three deliveries:
 *   - dependency order: the registry topic is published and consumed, then the outcomes, then the
 *     escalations (the friendliest order a consumer can get);
 *   - three topics at once: the whole log is on the three topics before the consumer starts (what a
 *     deployment catching up on a backlog sees: the topics are read side by side);
 *   - twice: as at once, with every record published a second time right after the log.
 * Each run gets fresh topics, a fresh consumer group and an empty graph; the graph it leaves is compared
 * with the reference model of the log (bench/lib/correctness.ts).
 */
import type { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import type { Admin, Producer } from "kafkajs";
import type { Driver } from "neo4j-driver";
import { ensureTopics, topicSpecs } from "../../src/adapters/kafka/admin.js";
import { publishEvents } from "../../src/adapters/kafka/event-publisher.js";
import { fetchLag } from "../../src/adapters/kafka/group-admin.js";
import { dumpGraph } from "../../src/adapters/neo4j/dump.js";
import { registerFindingSchema } from "../../src/adapters/registry/findings-subject.js";
import { registerSchemas } from "../../src/adapters/registry/schema-registry.js";
import type { Config } from "../../src/config.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import type { GraphWriter } from "../../src/ports.js";
import { consumedTopics, type Stream, type TopicNames, topicNames } from "../../src/topics.js";
import { referenceGraph } from "../../test/support/reference-model.js";
import type { EventLog } from "../../workload/generate.js";
import { compareGraphs, type GraphErrors } from "../lib/correctness.js";
import { wipeGraph } from "../lib/direct.js";
import { startProjector } from "../lib/projector.js";
import type { PeerSetup } from "./run.js";
import { joined, startPeer } from "./run.js";

export const DELIVERIES = ["dependency order", "three topics at once", "every record twice"] as const;
export type Delivery = (typeof DELIVERIES)[number];

export interface CorrectnessRow {
  readonly delivery: Delivery;
  readonly system: "projector" | "peer";
  readonly records: number;
  readonly seconds: number;
  readonly peakRssMiB: number;
  readonly errors: GraphErrors;
}

export interface CorrectnessContext {
  readonly admin: Admin;
  readonly producer: Producer;
  readonly registry: SchemaRegistry;
  readonly driver: Driver;
  readonly graph: GraphWriter;
  readonly database: string;
  readonly config: Config;
  /** The projector children's environment (endpoints, NODE_OPTIONS, …). */
  readonly baseEnv: Record<string, string>;
  readonly prefix: string;
  readonly partitions: number;
  readonly peer?: { setup: PeerSetup; batchSize: number; tasks: number };
  readonly say: (line: string) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The publishing plan of a delivery: stages published one after another, each consumed before the next. */
export function stagesOf(delivery: Delivery, log: EventLog): ProjectorEvent[][] {
  const all = [...log.registry, ...log.outcomes, ...log.escalations];
  if (delivery === "dependency order") return [[...log.registry], [...log.outcomes], [...log.escalations]];
  if (delivery === "three topics at once") return [all];
  return [[...all, ...all]];
}

async function drainProjector(admin: Admin, group: string, names: TopicNames, timeoutMs = 900_000) {
  const started = Date.now();
  for (;;) {
    const lags = await fetchLag(admin, group, consumedTopics(names));
    if (lags.every((l) => l.lag === 0)) return;
    if (Date.now() - started > timeoutMs) throw new Error(`projector still behind after ${timeoutMs / 1000} s`);
    await sleep(500);
  }
}

export async function runCorrectness(ctx: CorrectnessContext, log: EventLog): Promise<CorrectnessRow[]> {
  const expected = referenceGraph([...log.registry, ...log.outcomes, ...log.escalations]);
  const rows: CorrectnessRow[] = [];
  let n = 0;
  for (const delivery of DELIVERIES) {
    for (const system of ctx.peer ? (["projector", "peer"] as const) : (["projector"] as const)) {
      n += 1;
      const tag = `${ctx.prefix}-c${n}`;
      const names = topicNames({
        ...ctx.config.topics,
        // The projector's group below: its retry and dead-letter topics are named after it.
        scope: ctx.config.topics.scope === undefined ? undefined : `${tag}-projector`,
        registryMutation: `${tag}.registry-mutation`,
        outcomeCreated: `${tag}.outcome-created`,
        escalationEdge: `${tag}.escalation-edge`,
      });
      await ensureTopics(ctx.admin, topicSpecs(names, { partitions: ctx.partitions, replicationFactor: 1 }));
      const schemaIds = await registerSchemas(ctx.config.registry, names.source);
      await registerFindingSchema(ctx.config.registry, names.findings);
      await wipeGraph(ctx.driver, ctx.database);
      const stages = stagesOf(delivery, log);
      const records = stages.reduce((sum, stage) => sum + stage.length, 0);
      const publish = (events: ProjectorEvent[]) =>
        publishEvents(ctx.producer, ctx.registry, schemaIds, names, events, () => {}, 5000);
      // Everything that is not staged goes out before the consumer starts.
      if (stages.length === 1) await publish(stages[0] as ProjectorEvent[]);
      const started = Date.now();
      let peakRssMiB = 0;
      if (system === "projector") {
        const group = `${tag}-projector`;
        const child = startProjector(
          {
            ...ctx.baseEnv,
            CONSUMER_GROUP: group,
            TOPIC_REGISTRY_MUTATION: names.source["registry-mutation"],
            TOPIC_OUTCOME_CREATED: names.source["outcome-created"],
            TOPIC_ESCALATION_EDGE: names.source["escalation-edge"],
          },
          `${tag}-projector`,
        );
        try {
          await child.joinedAt;
          if (stages.length > 1)
            for (const stage of stages) {
              await publish(stage);
              await drainProjector(ctx.admin, group, names);
            }
          else await drainProjector(ctx.admin, group, names);
          peakRssMiB = Math.round((child.rssKiB()?.hwm ?? 0) / 102.4) / 10;
        } finally {
          await child.stop();
        }
      } else {
        const peerCfg = ctx.peer as NonNullable<CorrectnessContext["peer"]>;
        const peer = await startPeer(peerCfg.setup, {
          name: `${tag}-peer`,
          topics: names.source as Record<Stream, string>,
          batchSize: peerCfg.batchSize,
          tasks: peerCfg.tasks,
          admin: ctx.admin,
        });
        try {
          await joined(peer.worker);
          if (stages.length > 1)
            for (const stage of stages) {
              await publish(stage);
              await peer.drain(`${delivery} (peer)`);
            }
          else await peer.drain(`${delivery} (peer)`);
          peakRssMiB = peer.peakMiB();
        } finally {
          await peer.worker.stop();
        }
      }
      const seconds = Math.round((Date.now() - started) / 100) / 10;
      const errors = compareGraphs(expected, await dumpGraph(ctx.graph, ctx.database));
      ctx.say(
        `correctness, ${delivery}, ${system}: missing PRODUCED ${errors.missingProduced}, missing OBSERVED ${errors.missingObserved}, ` +
          `missing ESCALATED_TO ${errors.missingEscalatedTo}, wrong observed_count ${errors.wrongObservedCount}, ` +
          `wrong declared ${errors.wrongDeclared}, other ${errors.otherDifferences} (${records} records, ${seconds} s)`,
      );
      rows.push({ delivery, system, records, seconds, peakRssMiB, errors });
    }
  }
  return rows;
}
