import type { Admin } from "kafkajs";
import { sleep } from "../faults/support.js";

/**
 * Watches a consumer group's progress while brokers fail: every `intervalMs` it reads the committed
 * offset and the high watermark of every partition of the consumed topics. A partition is stalled
 * while records wait in it (high watermark above the committed offset) and its committed offset does
 * not move. Samples that fail (a broker or the group coordinator is gone) count as no progress.
 */
export class StallMonitor {
  private readonly samples: { at: number; committed: Map<string, number>; lag: Map<string, number> }[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(
    private readonly admin: Admin,
    private readonly groupId: string,
    private readonly topics: readonly string[],
    intervalMs = 500,
  ) {
    this.loop = (async () => {
      while (this.running) {
        const at = Date.now();
        const sample = await this.sample().catch(() => undefined);
        if (sample) this.samples.push({ at, ...sample });
        await sleep(Math.max(0, intervalMs - (Date.now() - at)));
      }
    })();
  }

  private async sample() {
    const committed = new Map<string, number>();
    const lag = new Map<string, number>();
    const offsets = await this.admin.fetchOffsets({ groupId: this.groupId, topics: [...this.topics] });
    for (const { topic, partitions } of offsets) {
      const high = await this.admin.fetchTopicOffsets(topic);
      for (const p of high) {
        const c = partitions.find((x) => x.partition === p.partition)?.offset ?? "-1";
        const position = c === "-1" ? Number(p.low) : Number(c);
        committed.set(`${topic}[${p.partition}]`, position);
        lag.set(`${topic}[${p.partition}]`, Math.max(0, Number(p.high) - position));
      }
    }
    return { committed, lag };
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /**
   * Between `from` and `to`: the longest time one partition had records waiting and committed none
   * (with which partition), and the longest time the whole group committed nothing while records
   * waited anywhere.
   */
  stalls(from: number, to: number): { partitionMs: number; partition: string; groupMs: number; samples: number } {
    const before = this.samples.filter((s) => s.at < from).at(-1);
    const window = this.samples.filter((s) => s.at >= from && s.at <= to);
    const lastCommitted = new Map(before?.committed ?? []);
    const lastProgress = new Map<string, number>();
    let groupProgress = from;
    let partitionMs = 0;
    let partition = "-";
    let groupMs = 0;
    for (const s of window) {
      let anyProgress = false;
      let anyWaiting = false;
      for (const [key, committed] of s.committed) {
        const waiting = (s.lag.get(key) ?? 0) > 0;
        const moved = committed > (lastCommitted.get(key) ?? committed);
        lastCommitted.set(key, committed);
        const since = lastProgress.get(key) ?? from;
        if (waiting && !moved && s.at - since > partitionMs) {
          partitionMs = s.at - since;
          partition = key;
        }
        if (moved || !waiting) lastProgress.set(key, s.at);
        anyProgress ||= moved;
        anyWaiting ||= waiting;
      }
      if (anyWaiting && !anyProgress) groupMs = Math.max(groupMs, s.at - groupProgress);
      if (anyProgress || !anyWaiting) groupProgress = s.at;
    }
    return { partitionMs, partition, groupMs, samples: window.length };
  }
}

/** Waits until every partition of the topics has all its replicas in sync (after a broker came back). */
export async function waitForFullIsr(admin: Admin, topics: readonly string[], timeoutMs: number): Promise<number> {
  const started = Date.now();
  let last = "";
  while (Date.now() - started < timeoutMs) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics: [...topics] });
      const short = metadata.flatMap((t) =>
        t.partitions
          .filter((p) => p.isr.length < p.replicas.length || p.leader < 0)
          .map((p) => `${t.name}[${p.partitionId}] isr ${p.isr.join(",")} of ${p.replicas.join(",")}`),
      );
      if (short.length === 0) return Date.now() - started;
      last = short.slice(0, 5).join("; ");
    } catch (error) {
      last = String(error);
    }
    await sleep(500);
  }
  throw new Error(`replicas not back in sync within ${timeoutMs} ms: ${last}`);
}

/**
 * The broker leading most of the `count` partitions with the most records among `topics`, and those
 * partitions: the one whose loss hurts the run most.
 */
export async function busiestLeader(
  admin: Admin,
  topics: readonly string[],
  count = 3,
): Promise<{ nodeId: number; leads: string[] }> {
  const sizes: { key: string; topic: string; partition: number; records: number }[] = [];
  for (const topic of topics) {
    for (const p of await admin.fetchTopicOffsets(topic))
      sizes.push({
        key: `${topic}[${p.partition}]`,
        topic,
        partition: p.partition,
        records: Number(p.high) - Number(p.low),
      });
  }
  const busiest = sizes.sort((a, b) => b.records - a.records).slice(0, count);
  const { topics: metadata } = await admin.fetchTopicMetadata({ topics: [...topics] });
  const leaders = new Map<number, string[]>();
  for (const b of busiest) {
    const leader = metadata
      .find((t) => t.name === b.topic)
      ?.partitions.find((p) => p.partitionId === b.partition)?.leader;
    if (leader === undefined || leader < 0) continue;
    leaders.set(leader, [...(leaders.get(leader) ?? []), `${b.key} (${b.records} records)`]);
  }
  const [nodeId, leads] = [...leaders].sort((a, b) => b[1].length - a[1].length)[0] ?? [-1, []];
  if (nodeId < 0) throw new Error("no leader found for the busiest partitions");
  return { nodeId, leads };
}
