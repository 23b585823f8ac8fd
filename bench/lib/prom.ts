/** A small reader for the Prometheus text format the projector's /metrics serves. */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1] as string] = pair[2] as string;
    }
    out.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return out;
}

/** Adds up the samples of several instances (counters and histogram buckets add). */
export function sumSamples(all: readonly Sample[][]): Sample[] {
  const byKey = new Map<string, Sample>();
  for (const samples of all) {
    for (const sample of samples) {
      const key = `${sample.name}${JSON.stringify(sample.labels)}`;
      const seen = byKey.get(key);
      byKey.set(key, seen ? { ...sample, value: seen.value + sample.value } : sample);
    }
  }
  return [...byKey.values()];
}

/** A counter's samples added up per value of some labels, joined by a space ("3.3 DeadlockDetected"). */
export function totalsBy(samples: readonly Sample[], name: string, labels: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (s.name !== name || s.value === 0) continue;
    const key = labels.map((label) => s.labels[label] ?? "").join(" ");
    out[key] = (out[key] ?? 0) + s.value;
  }
  return out;
}

export function total(samples: readonly Sample[], name: string, filter: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(filter).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/**
 * A quantile of a histogram summed over its label sets, interpolated inside the bucket the way
 * PromQL's histogram_quantile does: an estimate whose precision is the bucket layout's.
 */
export function histogramQuantile(
  samples: readonly Sample[],
  name: string,
  q: number,
  filter: Record<string, string> = {},
): number | null {
  const sorted = histogramBuckets(samples, name, filter);
  const count = sorted.at(-1)?.[1] ?? 0;
  if (count === 0) return null;
  const rank = q * count;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [le, cumulative] of sorted) {
    if (cumulative >= rank) {
      if (!Number.isFinite(le)) return lowerBound;
      return lowerBound + ((le - lowerBound) * (rank - lowerCount)) / Math.max(1, cumulative - lowerCount);
    }
    lowerBound = le;
    lowerCount = cumulative;
  }
  return lowerBound;
}

/** Exact quantile of a list of numbers (nearest rank). */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

/** Least-squares slope of y over x. */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const num = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

/** A histogram's cumulative buckets summed over its label sets (matching `filter`), as [le, count] by le. */
export function histogramBuckets(
  samples: readonly Sample[],
  name: string,
  filter: Record<string, string> = {},
): [number, number][] {
  const buckets = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket`) continue;
    if (!Object.entries(filter).every(([k, v]) => s.labels[k] === v)) continue;
    const le = s.labels.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
  return sorted;
}

/** Per spec write pattern, its statements in the window and Neo4j's own seconds on them. */
export function statementTimes(window: readonly Sample[]): Record<string, { statements: number; seconds: number }> {
  const counts = totalsBy(window, "agp_neo4j_statement_seconds_count", ["pattern"]);
  const sums = totalsBy(window, "agp_neo4j_statement_seconds_sum", ["pattern"]);
  return Object.fromEntries(
    Object.entries(counts).map(([pattern, statements]) => [
      pattern,
      { statements, seconds: Math.round((sums[pattern] ?? 0) * 100) / 100 },
    ]),
  );
}
