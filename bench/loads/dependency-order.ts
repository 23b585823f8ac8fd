/**
 * Like for like with the peer: the log published in dependency order — the registry, then the
 * outcomes, then the escalations, each stage consumed to zero lag before the next is published, the
 * only order in which the connector's per-record MATCHes find what they need — and consumed from
 * zero by one projector (its defaults) and by the peer (its best configuration), each on fresh
 * topics, a fresh group and an empty graph. Beside records/s: CPU seconds per record, peak RSS, the
 * graph each left (counts by label and type) and its differences from the reference model.
 */
import { publishEvents } from "../../src/adapters/kafka/event-publisher.js";
import { fetchLag } from "../../src/adapters/kafka/group-admin.js";
import { dumpGraph } from "../../src/adapters/neo4j/dump.js";
import type { ProjectorEvent } from "../../src/model/events.js";
import type { CanonicalGraph } from "../../src/model/graph.js";
import type { GraphWriter } from "../../src/ports.js";
import { consumedTopics, STREAMS, type Stream, type TopicNames } from "../../src/topics.js";
import { REPEAT, round, say, sleep } from "../args.js";
import { compareGraphs, countsByType, differenceCount, type GraphCounts } from "../lib/correctness.js";
import { type CpuSeconds, cpuMeter } from "../lib/cpu.js";
import { wipeGraph } from "../lib/direct.js";
import { type ProjectorProcess, startProjector } from "../lib/projector.js";
import { stagesOf } from "../peer/correctness.js";
import { joined, lagPoller, type PeerSetup, startPeer } from "../peer/run.js";
import type { DependencyOrderRun, DependencyOrderStage } from "../results.js";
import { type BenchRun, loadTopics, sourceTopicEnv } from "./run.js";

type System = DependencyOrderRun["system"];

/** What the timed part needs of a started consumer, whichever system it is. */
interface Consumer {
  readonly pid: number;
  /** Waits for zero lag on the group's topics; returns when it was seen. */
  drain(label: string): Promise<number>;
  peakRssMiB(): number;
  errors(): string[];
  stop(): Promise<unknown>;
}

/** Zero lag on the source topics polled every 200 ms, as the other loads do, confirmed on the retry topics. */
async function drainProjector(run: BenchRun, child: ProjectorProcess, group: string, names: TopicNames) {
  const sources = Object.values(names.source);
  const poller = await lagPoller(run.admin, group, sources);
  for (;;) {
    const lags = await poller.poll();
    const now = Date.now();
    if ([...lags.values()].every((lag) => lag === 0)) {
      const all = await fetchLag(run.admin, group, consumedTopics(names));
      if (all.every((l) => l.lag === 0)) return now;
    }
    if (child.errors.some((e) => /fatal/.test(e))) throw new Error(child.errors.join("\n"));
    await sleep(200);
  }
}

async function startConsumer(
  run: BenchRun,
  system: System,
  label: string,
  names: TopicNames,
  peer: { setup: PeerSetup; batchSize: number; tasks: number } | undefined,
): Promise<Consumer> {
  const group = `${run.prefix}-${label}`;
  if (system === "projector") {
    // Its defaults: the run's endpoints and the deployed V8 limits, nothing tuned for this load.
    const child = startProjector({ ...run.baseEnv, ...sourceTopicEnv(names), CONSUMER_GROUP: group }, label);
    await child.joinedAt;
    return {
      pid: child.pid,
      drain: () => drainProjector(run, child, group, names),
      peakRssMiB: () => round((child.rssKiB()?.hwm ?? 0) / 1024),
      errors: () => child.errors.slice(0, 10),
      stop: () => child.stop(),
    };
  }
  if (!peer) throw new Error("no peer to run");
  const handle = await startPeer(peer.setup, {
    name: group,
    topics: names.source as Record<Stream, string>,
    batchSize: peer.batchSize,
    tasks: peer.tasks,
    admin: run.admin,
  });
  try {
    await joined(handle.worker);
  } catch (error) {
    await handle.worker.stop();
    throw error;
  }
  return {
    pid: handle.worker.pid,
    drain: async (stage) => (await handle.drain(`${label} ${stage}`)).end,
    peakRssMiB: () => {
      handle.sampleRss();
      return handle.peakMiB();
    },
    errors: () => handle.worker.errors.slice(0, 10),
    stop: () => handle.worker.stop(),
  };
}

async function runOne(
  run: BenchRun,
  graph: GraphWriter,
  system: System,
  turn: number,
  expected: CanonicalGraph,
  peer: { setup: PeerSetup; batchSize: number; tasks: number } | undefined,
): Promise<DependencyOrderRun> {
  const label = `dep-${system}-t${turn}`;
  const { names, ids } = await loadTopics(run, label);
  await wipeGraph(run.driver, run.database);
  const stages = stagesOf("dependency order", run.log);
  const consumer = await startConsumer(run, system, label, names, peer);
  const own = system === "projector" ? "projector" : "connect";
  const meter = cpuMeter({ ...run.servers, [own]: consumer.pid });
  const perStage: Partial<Record<Stream, DependencyOrderStage>> = {};
  const t0 = Date.now();
  let end = t0;
  let cpuSeconds: CpuSeconds;
  let peakRssMiB: number;
  try {
    for (const [n, stage] of stages.entries()) {
      const stream = STREAMS[n] as Stream;
      const started = Date.now();
      await publishEvents(run.producer, run.registry, ids, names, stage as ProjectorEvent[], () => {}, 5000);
      const published = Date.now();
      end = await consumer.drain(stream);
      perStage[stream] = {
        records: stage.length,
        publishSeconds: round((published - started) / 1000, 2),
        seconds: round((end - started) / 1000, 2),
      };
    }
    // Read while the process lives: /proc forgets it once it has exited.
    cpuSeconds = meter.since();
    peakRssMiB = consumer.peakRssMiB();
  } finally {
    await consumer.stop();
  }
  const records = stages.reduce((sum, stage) => sum + stage.length, 0);
  const perRecord = (...names: string[]) => {
    const values = names.map((name) => cpuSeconds[name]);
    if (values.some((v) => v == null)) return null;
    return round((values as number[]).reduce((a, b) => a + b, 0) / records, 6);
  };
  const left = await dumpGraph(graph, run.database);
  const seconds = (end - t0) / 1000;
  const result: DependencyOrderRun = {
    system,
    turn,
    records,
    seconds: round(seconds, 2),
    recordsPerSecond: Math.round(records / seconds),
    stages: perStage as Record<Stream, DependencyOrderStage>,
    cpuSeconds,
    cpuSecondsPerRecord: perRecord(own),
    cpuSecondsPerRecordWithNeo4j: perRecord(own, "neo4j"),
    peakRssMiB,
    graph: countsByType(left),
    differences: compareGraphs(expected, left),
    errors: consumer.errors(),
  };
  say(
    `dependency order, ${system} t${turn}: ${result.recordsPerSecond} rec/s over ${result.seconds} s; ` +
      `CPU ${result.cpuSecondsPerRecord === null ? "?" : round(result.cpuSecondsPerRecord * 1e6)} µs/record ` +
      `(with Neo4j ${result.cpuSecondsPerRecordWithNeo4j === null ? "?" : round(result.cpuSecondsPerRecordWithNeo4j * 1e6)}); ` +
      `peak RSS ${result.peakRssMiB} MiB; graph ${JSON.stringify(result.graph.relationships)}; ` +
      `${differenceCount(result.differences)} difference(s) from the reference model`,
  );
  return result;
}

/**
 * `--repeat` turns of the projector and the peer (when there is one), each on the log published anew;
 * the peer goes first every other turn, so neither always meets the store the other has just used.
 */
export async function runDependencyOrder(
  run: BenchRun,
  graph: GraphWriter,
  expected: CanonicalGraph,
  peer: { setup: PeerSetup; batchSize: number; tasks: number } | undefined,
): Promise<DependencyOrderRun[]> {
  const runs: DependencyOrderRun[] = [];
  for (let turn = 1; turn <= REPEAT; turn++) {
    const peerFirst = turn % 2 === 0;
    if (peer && peerFirst) runs.push(await runOne(run, graph, "peer", turn, expected, peer));
    runs.push(await runOne(run, graph, "projector", turn, expected, peer));
    if (peer && !peerFirst) runs.push(await runOne(run, graph, "peer", turn, expected, peer));
  }
  return runs;
}

/** The summary's view: per system, medians over the turns; per turn, projector over peer. */
export function dependencyOrderSummary(runs: readonly DependencyOrderRun[], reference: GraphCounts) {
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted.length === 0 ? null : (sorted[Math.floor((sorted.length - 1) / 2)] as number);
  };
  const of = (system: System) => {
    const mine = runs.filter((r) => r.system === system);
    if (mine.length === 0) return null;
    const last = mine[mine.length - 1] as DependencyOrderRun;
    return {
      recordsPerSecond: median(mine.map((r) => r.recordsPerSecond)),
      cpuSecondsPerRecord: median(mine.flatMap((r) => r.cpuSecondsPerRecord ?? [])),
      cpuSecondsPerRecordWithNeo4j: median(mine.flatMap((r) => r.cpuSecondsPerRecordWithNeo4j ?? [])),
      peakRssMiB: Math.max(...mine.map((r) => r.peakRssMiB)),
      /** The most any turn of this system got wrong. */
      differences: Math.max(...mine.map((r) => differenceCount(r.differences))),
      graph: last.graph,
    };
  };
  const turns = [...new Set(runs.map((r) => r.turn))];
  return {
    reference,
    projector: of("projector"),
    peer: of("peer"),
    projectorOverPeerPerTurn: turns.map((turn) => {
      const projector = runs.find((r) => r.turn === turn && r.system === "projector");
      const peer = runs.find((r) => r.turn === turn && r.system === "peer");
      return projector && peer ? round(projector.recordsPerSecond / peer.recordsPerSecond, 2) : null;
    }),
  };
}
