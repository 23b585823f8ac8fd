import type { Instance } from "./fleet.js";

/** The alerts of helm/agent-graph-projector/alerts whose conditions an outage scenario reads. */
export type AlertName = "AgpInstanceNotReady" | "AgpPartitionStalled";

/** One instance's answers at one moment: its /readyz and the series the alerts read from /metrics. */
export interface Probe {
  readonly name: string;
  /** /readyz answered 200. False too when the instance did not answer at all (the scrape fails: `up` 0). */
  readonly ready: boolean;
  /** agp_ready, or undefined when /metrics did not answer. */
  readonly readyGauge: number | undefined;
  /** agp_records_total{result="applied"}, all streams. */
  readonly applied: number;
  /** agp_partition_consecutive_failures and agp_consumer_lag per "topic/partition". */
  readonly failures: ReadonlyMap<string, number>;
  readonly lag: ReadonlyMap<string, number>;
}

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** The Prometheus text format's samples (no escapes in our label values). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)) labels[pair[1] as string] = pair[2] as string;
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

const perPartition = (samples: readonly Sample[], name: string) =>
  new Map(
    samples
      .filter((sample) => sample.name === name)
      .map((sample) => [`${sample.labels.topic}/${sample.labels.partition}`, sample.value] as const),
  );

export async function probeInstance(instance: Instance): Promise<Probe> {
  const get = (path: string) =>
    fetch(`http://127.0.0.1:${instance.metricsPort}${path}`, { signal: AbortSignal.timeout(4_000) }).then(
      async (response) => ({ status: response.status, text: await response.text() }),
      () => undefined,
    );
  const [readyz, metrics] = await Promise.all([get("/readyz"), get("/metrics")]);
  const samples = metrics ? parseMetrics(metrics.text) : [];
  return {
    name: instance.name,
    ready: readyz?.status === 200,
    readyGauge: samples.find((sample) => sample.name === "agp_ready")?.value,
    applied: samples
      .filter((sample) => sample.name === "agp_records_total" && sample.labels.result === "applied")
      .reduce((sum, sample) => sum + sample.value, 0),
    failures: perPartition(samples, "agp_partition_consecutive_failures"),
    lag: perPartition(samples, "agp_consumer_lag"),
  };
}

/**
 * The alerts whose expression (without its `for:`) holds over these probes, as the rules file says:
 * AgpInstanceNotReady is `agp_ready == 0 or up == 0`; AgpPartitionStalled is a partition with
 * `max(agp_partition_consecutive_failures) > 0 and max(agp_consumer_lag) > 0`.
 */
export function alertConditions(probes: readonly Probe[]): Set<AlertName> {
  const firing = new Set<AlertName>();
  if (probes.some((probe) => probe.readyGauge === undefined || probe.readyGauge === 0))
    firing.add("AgpInstanceNotReady");
  const max = (pick: (probe: Probe) => ReadonlyMap<string, number>) => {
    const out = new Map<string, number>();
    for (const probe of probes)
      for (const [key, value] of pick(probe)) out.set(key, Math.max(out.get(key) ?? 0, value));
    return out;
  };
  const failures = max((probe) => probe.failures);
  const lag = max((probe) => probe.lag);
  if ([...failures].some(([key, value]) => value > 0 && (lag.get(key) ?? 0) > 0)) firing.add("AgpPartitionStalled");
  return firing;
}
