import { roleOfTopic, type TopicNames } from "../../topics.js";
import type { PartitionLag } from "../kafka/lag-monitor.js";
import type { PrometheusMetrics } from "./prometheus.js";

/**
 * The consumer-lag gauges from a lag poll: a series for each partition this instance owns now, and
 * none for those it no longer owns (nor their oldest-deferred age). A retry partition with nothing
 * left to read has nothing deferred either.
 */
export function createLagGauges(
  metrics: Pick<PrometheusMetrics, "setLag" | "dropLag" | "setOldestDeferred">,
  names: TopicNames,
  owned: () => ReadonlyMap<string, readonly number[]>,
): (lags: readonly PartitionLag[]) => void {
  const reported = new Set<string>();
  return (lags) => {
    const assignment = owned();
    const seen = new Set<string>();
    for (const { topic, partition, lag } of lags) {
      if (!(assignment.get(topic) ?? []).includes(partition)) continue;
      metrics.setLag(topic, partition, lag);
      seen.add(`${topic}\u0000${partition}`);
      if (lag === 0 && roleOfTopic(names, topic)?.role === "retry")
        metrics.setOldestDeferred(topic, partition, undefined);
    }
    for (const key of reported) {
      if (seen.has(key)) continue;
      const [topic, partition] = key.split("\u0000");
      metrics.dropLag(topic as string, Number(partition));
      metrics.setOldestDeferred(topic as string, Number(partition), undefined);
    }
    reported.clear();
    for (const key of seen) reported.add(key);
  };
}
