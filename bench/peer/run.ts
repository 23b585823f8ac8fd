/**
 * One measured run of the peer: a fresh Connect worker with the connector on a fresh consumer group,
 * timed like a projector run — from the first partition assignment to the poll (every 200 ms) that
 * sees zero lag on every source topic — with CPU seconds per process and the worker's peak RSS.
 */
import type { Admin } from "kafkajs";
import { partitionLag } from "../../src/adapters/kafka/group-admin.js";
import { STREAMS, type Stream } from "../../src/topics.js";
import { type CpuSeconds, cpuMeter } from "../lib/cpu.js";
import type { PeerArtifacts } from "./build.js";
import { PEER_STATEMENTS } from "./statements.js";
import { connectorConfig, type PeerWorker, startWorker } from "./worker.js";

export interface PeerSetup {
  readonly artifacts: PeerArtifacts;
  readonly java: string;
  readonly workDir: string;
  readonly restPort: number;
  readonly heap: string;
  readonly kafkaBrokers: string;
  readonly registryApiUrl: string;
  readonly neo4j: { uri: string; user: string; password: string; database: string };
  readonly marker: string;
  /** Server pids for the CPU meter (neo4j, kafka, registry). */
  readonly servers: Record<string, number | null>;
  readonly say: (line: string) => void;
}

export interface PeerRunResult {
  readonly batchSize: number;
  readonly tasks: number;
  readonly seconds: number;
  readonly records: number;
  readonly recordsPerSecond: number;
  readonly perTopic: Record<string, { records: number; seconds: number; recordsPerSecond: number }>;
  readonly peakRssMiB: number;
  readonly cpuSeconds: CpuSeconds;
  readonly errors: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Committed offsets of `group` against the high watermarks of `topics` when made (or refreshed), per topic. */
export async function lagPoller(admin: Admin, group: string, topics: readonly string[]) {
  const watermarks = new Map<string, { high: number; low: number }>();
  const refresh = async () => {
    for (const topic of topics)
      for (const p of await admin.fetchTopicOffsets(topic))
        watermarks.set(`${topic}/${p.partition}`, { high: Number(p.high), low: Number(p.low) });
  };
  await refresh();
  return {
    refresh,
    async poll(): Promise<Map<string, number>> {
      const committed = await admin.fetchOffsets({ groupId: group, topics: [...topics] });
      const byTopic = new Map<string, number>(topics.map((t) => [t, 0]));
      for (const { topic, partitions } of committed)
        for (const p of partitions) {
          const { high, low } = watermarks.get(`${topic}/${p.partition}`) ?? { high: 0, low: 0 };
          byTopic.set(topic, (byTopic.get(topic) ?? 0) + partitionLag(p.offset, high, low));
        }
      return byTopic;
    },
  };
}

/** When the worker's consumer first got partitions; fails if the worker exits or never joins. */
export function joined(worker: PeerWorker, timeoutMs = 180_000): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const failed = new Promise<never>((_, reject) => {
    worker.exited.then((code) =>
      reject(new Error(`Connect worker exited with ${code} before joining; log ${worker.logFile}`)),
    );
    timer = setTimeout(
      () => reject(new Error(`Connect worker did not join in ${timeoutMs / 1000} s; log ${worker.logFile}`)),
      timeoutMs,
    );
  });
  failed.catch(() => {});
  return Promise.race([worker.joinedAt, failed]).finally(() => clearTimeout(timer));
}

/**
 * Starts a worker, creates the connector on `topics` (stream → topic), and hands back a handle; the
 * caller decides when to wait for zero lag (after publishing more, for example).
 */
export async function startPeer(
  setup: PeerSetup,
  opts: { name: string; topics: Record<Stream, string>; batchSize: number; tasks: number; admin: Admin },
) {
  const worker: PeerWorker = startWorker({
    artifacts: setup.artifacts,
    java: setup.java,
    dir: setup.workDir,
    restPort: setup.restPort,
    kafkaBrokers: setup.kafkaBrokers,
    registryApiUrl: setup.registryApiUrl,
    heap: setup.heap,
    // Sink offsets are what the bench reads to see the end; Connect's default commits once a minute.
    offsetFlushMs: 200,
    marker: setup.marker,
  });
  try {
    await worker.ready;
    await worker.createConnector({
      name: opts.name,
      config: connectorConfig({
        topics: Object.fromEntries(STREAMS.map((stream) => [opts.topics[stream], PEER_STATEMENTS[stream]])),
        neo4j: setup.neo4j,
        batchSize: opts.batchSize,
        tasks: opts.tasks,
      }),
    });
  } catch (error) {
    await worker.stop();
    throw error;
  }
  const group = `connect-${opts.name}`;
  const topicList = STREAMS.map((stream) => opts.topics[stream]);
  let peakKiB = 0;
  const sampleRss = () => {
    peakKiB = Math.max(peakKiB, worker.rssKiB()?.hwm ?? 0);
  };
  /** Waits until the group has no lag on any of the topics; returns when each topic last had lag. */
  const drain = async (label: string, timeoutMs = 900_000) => {
    const poller = await lagPoller(opts.admin, group, topicList);
    const started = Date.now();
    const lastBusy = new Map<string, number>();
    let lastStatus = 0;
    let lastReport = Date.now();
    for (;;) {
      const lags = await poller.poll();
      const now = Date.now();
      sampleRss();
      let behind = 0;
      for (const [topic, lag] of lags) {
        if (lag > 0) lastBusy.set(topic, now);
        behind += lag;
      }
      if (behind === 0) return { end: now, lastBusy };
      if (now - lastStatus > 5_000) {
        lastStatus = now;
        const status = await worker.status(opts.name).catch(() => undefined);
        if (status && (status.connector === "FAILED" || status.tasks.includes("FAILED")))
          throw new Error(`peer connector failed: ${status.trace?.slice(0, 2000) ?? JSON.stringify(status)}`);
      }
      if (now - lastReport > 10_000) {
        setup.say(`  ${label}: ${behind} record(s) behind after ${round((now - started) / 1000)} s`);
        lastReport = now;
      }
      if (now - started > timeoutMs) throw new Error(`peer: still ${behind} behind after ${timeoutMs / 1000} s`);
      await sleep(200);
    }
  };
  return { worker, group, drain, sampleRss, peakMiB: () => round(peakKiB / 1024) };
}

/** A timed run over topics published beforehand: first assignment to zero lag. */
export async function runPeer(
  setup: PeerSetup,
  opts: {
    name: string;
    label: string;
    topics: Record<Stream, string>;
    counts: Record<Stream, number>;
    batchSize: number;
    tasks: number;
    admin: Admin;
  },
): Promise<PeerRunResult> {
  const peer = await startPeer(setup, opts);
  try {
    const t0 = await joined(peer.worker);
    const meter = cpuMeter({ ...setup.servers, connect: peer.worker.pid });
    const { end, lastBusy } = await peer.drain(opts.label);
    const cpuSeconds = meter.since();
    peer.sampleRss();
    const seconds = (end - t0) / 1000;
    const records = STREAMS.reduce((sum, stream) => sum + opts.counts[stream], 0);
    const perTopic = Object.fromEntries(
      STREAMS.map((stream) => {
        const s = ((lastBusy.get(opts.topics[stream]) ?? t0) - t0) / 1000 + 0.2;
        return [
          stream,
          { records: opts.counts[stream], seconds: round(s, 2), recordsPerSecond: Math.round(opts.counts[stream] / s) },
        ];
      }),
    );
    return {
      batchSize: opts.batchSize,
      tasks: opts.tasks,
      seconds: round(seconds, 2),
      records,
      recordsPerSecond: Math.round(records / seconds),
      perTopic,
      peakRssMiB: peer.peakMiB(),
      cpuSeconds,
      errors: peer.worker.errors.slice(0, 10),
    };
  } finally {
    await peer.worker.stop();
  }
}
