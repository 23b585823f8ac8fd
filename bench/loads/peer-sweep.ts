/** The peer sweep: batch size × tasks of Neo4j's Kafka Connect sink on the ceiling sweep's quarter-size log. */
import { publishEvents } from "../../src/adapters/kafka/event-publisher.js";
import type { Stream } from "../../src/topics.js";
import { generateEventLog } from "../../workload/generate.js";
import { AGENTS, ESCALATIONS, eventsOf, flags, OUTCOMES, quick, SEED, say, workloadSize } from "../args.js";
import { wipeGraph } from "../lib/direct.js";
import { type PeerRunResult, type PeerSetup, runPeer } from "../peer/run.js";
import { type BenchRun, loadTopics } from "./run.js";

export async function peerSweepRun(
  run: BenchRun,
  peerSetup: PeerSetup,
): Promise<{ peerSweep: PeerRunResult[]; peerBest: { batchSize: number; tasks: number } }> {
  const { prefix, admin, producer, registry, driver, database } = run;
  const peerSweep: PeerRunResult[] = [];
  const sweepLog = generateEventLog(
    SEED + 1,
    workloadSize(AGENTS, Math.round(OUTCOMES / 4), Math.round(ESCALATIONS / 4)),
  );
  const { names: sweepNames, ids: sweepIds } = await loadTopics(run, "peersweep");
  await publishEvents(producer, registry, sweepIds, sweepNames, eventsOf(sweepLog), () => {}, 5000);
  const sweepCounts: Record<Stream, number> = {
    "registry-mutation": sweepLog.registry.length,
    "outcome-created": sweepLog.outcomes.length,
    "escalation-edge": sweepLog.escalations.length,
  };
  const fixedPeer = /^(\d+)x(\d+)$/.exec(flags["peer-config"] ?? "");
  const peerConfigs: [number, number][] = fixedPeer
    ? [[Number(fixedPeer[1]), Number(fixedPeer[2])]]
    : quick
      ? [
          [1000, 1],
          [5000, 1],
        ]
      : [
          [1000, 1],
          [2000, 1],
          [5000, 1],
          [2000, 2],
          [5000, 2],
        ];
  for (const [batchSize, tasks] of peerConfigs) {
    await wipeGraph(driver, database);
    const result = await runPeer(peerSetup, {
      name: `${prefix}-peersweep-${batchSize}x${tasks}`,
      label: `peer sweep ${batchSize} × ${tasks}`,
      topics: sweepNames.source,
      counts: sweepCounts,
      batchSize,
      tasks,
      admin,
    });
    say(
      `peer sweep: batch ${batchSize} × ${tasks} task(s): ${result.recordsPerSecond} rec/s, peak RSS ${result.peakRssMiB} MiB`,
    );
    peerSweep.push(result);
  }
  const best = [...peerSweep].sort((a, b) => b.recordsPerSecond - a.recordsPerSecond)[0] as PeerRunResult;
  return { peerSweep, peerBest: { batchSize: best.batchSize, tasks: best.tasks } };
}
