/**
 * The freshness of the governance findings a steady load brought: per finding, the seconds from the
 * time of the event it is about to the moment it was published. Since undeclared escalations are
 * judged at event time (issue 53) a finding waits for the registry to be caught up past its
 * escalation's observed_at plus the allowed lateness, so it is later than the graph by design; this
 * is what that wait costs, measured beside the graph's own freshness.
 */
import { type Settled, weightedQuantile } from "./freshness.js";

/** A finding as read back from the findings topic (the fields of schemas/governance-finding.avsc it needs). */
export interface PublishedFinding {
  readonly findingId: string;
  readonly kind: string;
  /** undeclared-escalation: the detecting escalation's observed_at (ms), null on the other kinds. */
  readonly observedAtMs: number | null;
  /** The registry change the finding is about (ms), null when unknown. */
  readonly registryOccurredAtMs: number | null;
  /** When the projector recorded it (ms); 0 on builds without the field. */
  readonly detectedAtMs: number;
  /** The Kafka record timestamp of the finding record: when it was published. */
  readonly publishedAtMs: number;
}

export interface FindingsFreshness {
  /** Distinct findings whose event time fell in the window. */
  readonly findings: number;
  readonly byKind: Record<string, number>;
  /** Event time → Kafka timestamp of the finding's first publication, seconds. */
  readonly p50: number | null;
  readonly p99: number | null;
  readonly max: number | null;
  /** Event time → detected_at (recorded in the graph), seconds; null where no finding carried it. */
  readonly detected: { readonly p50: number | null; readonly p99: number | null; readonly max: number | null };
  /** Published copies of a finding already counted (delivery is at least once). */
  readonly repeats: number;
}

/**
 * The time a finding is about: an undeclared escalation's observed_at; a resolution's (or a terminal
 * finding's) registry change. Null when the record carries neither.
 */
export function findingEventTime(finding: PublishedFinding): number | null {
  if (finding.kind === "undeclared-escalation") return finding.observedAtMs;
  return finding.registryOccurredAtMs ?? finding.observedAtMs;
}

/**
 * Findings freshness over the findings whose event time is in [fromMs, untilMs): each finding counted
 * once, at its first publication (the earliest record timestamp of its finding_id).
 */
export function findingsFreshness(
  published: readonly PublishedFinding[],
  fromMs: number,
  untilMs: number,
): FindingsFreshness {
  const first = new Map<string, PublishedFinding>();
  let repeats = 0;
  for (const finding of published) {
    const seen = first.get(finding.findingId);
    if (seen) repeats += 1;
    if (!seen || finding.publishedAtMs < seen.publishedAtMs) first.set(finding.findingId, finding);
  }
  const toPublish: Settled[] = [];
  const toDetect: Settled[] = [];
  const byKind: Record<string, number> = {};
  for (const finding of first.values()) {
    const at = findingEventTime(finding);
    if (at === null || at < fromMs || at >= untilMs) continue;
    byKind[finding.kind] = (byKind[finding.kind] ?? 0) + 1;
    toPublish.push({ seconds: Math.max(0, finding.publishedAtMs - at) / 1000, count: 1, eventTimeMs: at });
    if (finding.detectedAtMs > 0)
      toDetect.push({ seconds: Math.max(0, finding.detectedAtMs - at) / 1000, count: 1, eventTimeMs: at });
  }
  return {
    findings: toPublish.length,
    byKind,
    p50: weightedQuantile(toPublish, 0.5),
    p99: weightedQuantile(toPublish, 0.99),
    max: weightedQuantile(toPublish, 1),
    detected: {
      p50: weightedQuantile(toDetect, 0.5),
      p99: weightedQuantile(toDetect, 0.99),
      max: weightedQuantile(toDetect, 1),
    },
    repeats,
  };
}
