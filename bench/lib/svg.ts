/**
 * The results chart, written by hand: throughput bars, when a soak ran its RSS and lag lines, and
 * when a steady-load run did, its freshness quantiles per rate.
 */

export interface ChartInput {
  readonly title: string;
  readonly subtitle: string;
  readonly bars: readonly { label: string; value: number; note?: string; highlight?: boolean }[];
  readonly soak?: readonly { minute: number; rssMiB: number; lag: number }[];
  readonly freshness?: readonly FreshnessRow[];
}

/** Seconds; the histogram's max is the upper bound of its highest non-empty bucket. */
export interface FreshnessRow {
  readonly label: string;
  readonly records: { p50: number | null; p99: number | null; max: number | null };
  readonly histogram: { p50: number | null; p99: number | null; maxAtMost: number | null };
}

const esc = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(1));

export function renderChart(input: ChartInput): string {
  const width = 820;
  const barTop = 70;
  const barHeight = 26;
  const gap = 10;
  const labelWidth = 190;
  const plotWidth = width - labelWidth - 140;
  const barsBottom = barTop + input.bars.length * (barHeight + gap);
  const soakTop = barsBottom + 50;
  const soakHeight = input.soak && input.soak.length > 1 ? 200 : 0;
  const freshnessRows = input.freshness ?? [];
  const freshnessTop = soakTop + soakHeight + (soakHeight > 0 ? 60 : 0);
  const freshnessHeight = freshnessRows.length > 0 ? 40 + freshnessRows.length * 2 * (barHeight / 2 + 6) + 30 : 0;
  const height = freshnessTop + freshnessHeight;
  const max = Math.max(1, ...input.bars.map((bar) => bar.value));
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="20" y="30" font-size="17" font-weight="bold">${esc(input.title)}</text>`,
    `<text x="20" y="50" fill="#555">${esc(input.subtitle)}</text>`,
  ];
  input.bars.forEach((bar, n) => {
    const y = barTop + n * (barHeight + gap);
    const w = Math.max(1, (bar.value / max) * plotWidth);
    parts.push(
      `<text x="${labelWidth - 10}" y="${y + 18}" text-anchor="end">${esc(bar.label)}</text>`,
      `<rect x="${labelWidth}" y="${y}" width="${w.toFixed(1)}" height="${barHeight}" fill="${bar.highlight ? "#2b6cb0" : "#a0aec0"}"/>`,
      `<text x="${labelWidth + w + 8}" y="${y + 18}">${fmt(bar.value)} rec/s${bar.note ? ` ${esc(bar.note)}` : ""}</text>`,
    );
  });
  if (input.soak && input.soak.length > 1) {
    const soak = input.soak;
    const x0 = 70;
    const plotW = width - x0 - 80;
    const maxMinute = Math.max(...soak.map((s) => s.minute), 1);
    const maxRss = Math.max(...soak.map((s) => s.rssMiB)) * 1.2;
    const maxLag = Math.max(10, ...soak.map((s) => s.lag)) * 1.2;
    const px = (minute: number) => x0 + (minute / maxMinute) * plotW;
    const py = (value: number, top: number) => soakTop + soakHeight - (value / top) * soakHeight;
    parts.push(
      `<text x="20" y="${soakTop - 15}" font-weight="bold">Soak: projector RSS (MiB, blue) and consumer lag (records, orange) over minutes</text>`,
      `<line x1="${x0}" y1="${soakTop + soakHeight}" x2="${x0 + plotW}" y2="${soakTop + soakHeight}" stroke="#999"/>`,
      `<line x1="${x0}" y1="${soakTop}" x2="${x0}" y2="${soakTop + soakHeight}" stroke="#999"/>`,
      `<text x="${x0 - 6}" y="${soakTop + 10}" text-anchor="end" fill="#2b6cb0">${fmt(maxRss)}</text>`,
      `<text x="${x0 - 6}" y="${soakTop + soakHeight}" text-anchor="end" fill="#2b6cb0">0</text>`,
      `<text x="${x0 + plotW + 6}" y="${soakTop + 10}" fill="#dd6b20">${fmt(maxLag)}</text>`,
      `<text x="${x0 + plotW}" y="${soakTop + soakHeight + 18}" text-anchor="end" fill="#555">${fmt(maxMinute)} min</text>`,
      `<polyline fill="none" stroke="#2b6cb0" stroke-width="2" points="${soak.map((s) => `${px(s.minute).toFixed(1)},${py(s.rssMiB, maxRss).toFixed(1)}`).join(" ")}"/>`,
      `<polyline fill="none" stroke="#dd6b20" stroke-width="1.5" points="${soak.map((s) => `${px(s.minute).toFixed(1)},${py(s.lag, maxLag).toFixed(1)}`).join(" ")}"/>`,
    );
  }
  if (freshnessRows.length > 0) {
    // Per rate, two rows (records' own times, the service's histogram): p50 and p99 as bars, max as text.
    const x0 = labelWidth;
    const plotW = width - x0 - 260;
    const rowHeight = barHeight / 2;
    const top = Math.max(
      0.001,
      ...freshnessRows.flatMap((row) => [row.records.p99 ?? 0, row.histogram.p99 ?? 0, row.records.p50 ?? 0]),
    );
    const s = (v: number | null) => (v === null ? "–" : v < 10 ? v.toFixed(2) : v.toFixed(1));
    parts.push(
      `<text x="20" y="${freshnessTop}" font-weight="bold">Freshness under a steady load, seconds (p50 dark, p99 light): records' own times and the service's histogram</text>`,
    );
    freshnessRows.forEach((row, n) => {
      const y0 = freshnessTop + 20 + n * 2 * (rowHeight + 6);
      const lines: [string, number | null, number | null, string][] = [
        [`${row.label}, records`, row.records.p50, row.records.p99, `max ${s(row.records.max)}`],
        [
          "histogram",
          row.histogram.p50,
          row.histogram.p99,
          `max ≤ ${row.histogram.maxAtMost === null ? "–" : fmt(row.histogram.maxAtMost)}`,
        ],
      ];
      lines.forEach(([label, p50, p99, max], i) => {
        const y = y0 + i * (rowHeight + 6);
        const w99 = Math.max(1, ((p99 ?? 0) / top) * plotW);
        const w50 = Math.max(1, ((p50 ?? 0) / top) * plotW);
        parts.push(
          `<text x="${x0 - 10}" y="${y + rowHeight - 2}" text-anchor="end" font-size="12">${esc(label)}</text>`,
          `<rect x="${x0}" y="${y}" width="${w99.toFixed(1)}" height="${rowHeight}" fill="#90cdf4"/>`,
          `<rect x="${x0}" y="${y}" width="${w50.toFixed(1)}" height="${rowHeight}" fill="#2b6cb0"/>`,
          `<text x="${x0 + w99 + 8}" y="${y + rowHeight - 2}" font-size="12">p50 ${s(p50)} / p99 ${s(p99)} / ${esc(max)}</text>`,
        );
      });
    });
  }
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
