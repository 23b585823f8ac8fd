/**
 * The results chart, written by hand: throughput bars, when a soak ran its RSS and lag lines, and
 * when a steady-load run did, its freshness quantiles per rate and per stream. The canvas is as wide
 * as its longest text needs (estimated, erring wide), so that no label is cut off at either side.
 */

export interface ChartInput {
  readonly title: string;
  readonly subtitle: string;
  readonly bars: readonly { label: string; value: number; note?: string; highlight?: boolean }[];
  readonly soak?: readonly { minute: number; rssMiB: number; lag: number }[];
  readonly freshness?: readonly FreshnessRow[];
}

/** One steady-load rate: a heading, then each stream's figures. */
export interface FreshnessRow {
  readonly label: string;
  readonly streams: readonly StreamFreshness[];
}

/** Seconds; the histogram's max is the upper bound of its highest non-empty bucket. */
export interface StreamFreshness {
  readonly stream: string;
  readonly records: { p50: number | null; p99: number | null; max: number | null };
  readonly histogram: { p50: number | null; p99: number | null; maxAtMost: number | null };
}

const MIN_WIDTH = 820;
const MARGIN = 20;
const FONT = 13;

const esc = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(1));
const secs = (v: number | null) => (v === null ? "–" : v < 10 ? v.toFixed(2) : v.toFixed(1));

/**
 * An upper estimate of a text's width in pixels: wide glyphs at ~0.62 em (0.7 bold) on average in
 * Helvetica, Arial and the DejaVu Sans a renderer falls back to.
 */
export function textWidth(text: string, size = FONT, bold = false): number {
  return Math.ceil(text.length * size * (bold ? 0.7 : 0.62));
}

interface Text {
  readonly x: number;
  readonly y: number;
  readonly text: string;
  readonly size?: number;
  readonly bold?: boolean;
  readonly anchor?: "start" | "end";
  readonly fill?: string;
}

const drawText = ({ x, y, text, size = FONT, bold = false, anchor = "start", fill }: Text) =>
  `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}"${anchor === "end" ? ' text-anchor="end"' : ""}${size !== FONT ? ` font-size="${size}"` : ""}${bold ? ' font-weight="bold"' : ""}${fill ? ` fill="${fill}"` : ""}>${esc(text)}</text>`;

const barValue = (bar: ChartInput["bars"][number]) => `${fmt(bar.value)} rec/s${bar.note ? ` ${bar.note}` : ""}`;

/** The rows of the freshness section: per stream, the records' own times and the service's histogram. */
function freshnessLines(row: FreshnessRow) {
  return row.streams.flatMap((s) => [
    {
      label: `${s.stream}, records' own times`,
      p50: s.records.p50,
      p99: s.records.p99,
      max: s.records.max,
      text: `p50 ${secs(s.records.p50)} / p99 ${secs(s.records.p99)} / max ${secs(s.records.max)}`,
    },
    {
      label: `${s.stream}, service's histogram`,
      p50: s.histogram.p50,
      p99: s.histogram.p99,
      max: s.histogram.maxAtMost,
      text: `p50 ${secs(s.histogram.p50)} / p99 ${secs(s.histogram.p99)} / max ≤ ${s.histogram.maxAtMost === null ? "–" : fmt(s.histogram.maxAtMost)}`,
    },
  ]);
}

const FRESHNESS_TITLE = "Freshness under a steady load, per stream (seconds, log scale)";
const FRESHNESS_KEY =
  "p50 dark, p99 light, max the tick. Records' own times: the commit seen past a record − when it was published; histogram: agp_freshness_seconds.";

export function renderChart(input: ChartInput): string {
  const barHeight = 26;
  const gap = 10;
  const rowHeight = 14;
  const rowGap = 5;
  const freshnessRows = input.freshness ?? [];
  const lines = freshnessRows.map(freshnessLines);
  const allLines = lines.flat();

  // Widths first: every column as wide as its longest text, the canvas as wide as its widest part.
  const barLabelWidth = Math.max(0, ...input.bars.map((bar) => textWidth(bar.label)));
  const barValueWidth = Math.max(0, ...input.bars.map((bar) => textWidth(barValue(bar))));
  const labelWidth = MARGIN + barLabelWidth + 10;
  const freshLabelWidth = MARGIN + Math.max(0, ...allLines.map((l) => textWidth(l.label, 12))) + 10;
  const freshTextWidth = Math.max(0, ...allLines.map((l) => textWidth(l.text, 12)));
  const width = Math.max(
    MIN_WIDTH,
    MARGIN + textWidth(input.title, 17, true) + MARGIN,
    MARGIN + textWidth(input.subtitle) + MARGIN,
    labelWidth + 400 + 8 + barValueWidth + MARGIN,
    ...(freshnessRows.length > 0
      ? [
          MARGIN + textWidth(FRESHNESS_TITLE, FONT, true) + MARGIN,
          MARGIN + textWidth(FRESHNESS_KEY, 12) + MARGIN,
          ...freshnessRows.map((row) => MARGIN + textWidth(row.label, 12, true) + MARGIN),
          freshLabelWidth + 360 + 12 + freshTextWidth + MARGIN,
        ]
      : []),
  );

  const barTop = 70;
  const plotWidth = width - labelWidth - 8 - barValueWidth - MARGIN;
  const barsBottom = barTop + input.bars.length * (barHeight + gap);
  const soakTop = barsBottom + 50;
  const soakHeight = input.soak && input.soak.length > 1 ? 200 : 0;
  const freshnessTop = soakTop + soakHeight + (soakHeight > 0 ? 60 : 0);
  const groupHeight = (n: number) => 22 + n * (rowHeight + rowGap) + 8;
  const freshnessHeight =
    freshnessRows.length > 0 ? 58 + lines.reduce((sum, group) => sum + groupHeight(group.length), 0) + 10 : 0;
  const height = freshnessTop + freshnessHeight;
  const max = Math.max(1, ...input.bars.map((bar) => bar.value));
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="${FONT}">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    drawText({ x: MARGIN, y: 30, text: input.title, size: 17, bold: true }),
    drawText({ x: MARGIN, y: 50, text: input.subtitle, fill: "#555" }),
  ];
  input.bars.forEach((bar, n) => {
    const y = barTop + n * (barHeight + gap);
    const w = Math.max(1, (bar.value / max) * plotWidth);
    parts.push(
      drawText({ x: labelWidth - 10, y: y + 18, text: bar.label, anchor: "end" }),
      `<rect x="${labelWidth}" y="${y}" width="${w.toFixed(1)}" height="${barHeight}" fill="${bar.highlight ? "#2b6cb0" : "#a0aec0"}"/>`,
      drawText({ x: labelWidth + w + 8, y: y + 18, text: barValue(bar) }),
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
      drawText({
        x: MARGIN,
        y: soakTop - 15,
        text: "Soak: projector RSS (MiB, blue) and consumer lag (records, orange) over minutes",
        bold: true,
      }),
      `<line x1="${x0}" y1="${soakTop + soakHeight}" x2="${x0 + plotW}" y2="${soakTop + soakHeight}" stroke="#999"/>`,
      `<line x1="${x0}" y1="${soakTop}" x2="${x0}" y2="${soakTop + soakHeight}" stroke="#999"/>`,
      drawText({ x: x0 - 6, y: soakTop + 10, text: fmt(maxRss), anchor: "end", fill: "#2b6cb0" }),
      drawText({ x: x0 - 6, y: soakTop + soakHeight, text: "0", anchor: "end", fill: "#2b6cb0" }),
      drawText({ x: x0 + plotW + 6, y: soakTop + 10, text: fmt(maxLag), fill: "#dd6b20" }),
      drawText({
        x: x0 + plotW,
        y: soakTop + soakHeight + 18,
        text: `${fmt(maxMinute)} min`,
        anchor: "end",
        fill: "#555",
      }),
      `<polyline fill="none" stroke="#2b6cb0" stroke-width="2" points="${soak.map((s) => `${px(s.minute).toFixed(1)},${py(s.rssMiB, maxRss).toFixed(1)}`).join(" ")}"/>`,
      `<polyline fill="none" stroke="#dd6b20" stroke-width="1.5" points="${soak.map((s) => `${px(s.minute).toFixed(1)},${py(s.lag, maxLag).toFixed(1)}`).join(" ")}"/>`,
    );
  }
  if (freshnessRows.length > 0) {
    // Freshness spans sub-second to minutes: a log axis keeps both readable.
    const x0 = freshLabelWidth;
    const plotW = width - x0 - 12 - freshTextWidth - MARGIN;
    const values = allLines.flatMap((l) => [l.p50, l.p99, l.max]).filter((v): v is number => v !== null && v > 0);
    const lo = 10 ** Math.floor(Math.log10(Math.max(0.001, Math.min(0.1, ...values))));
    const hi = 10 ** Math.ceil(Math.log10(Math.max(lo * 10, ...values.filter(Number.isFinite))));
    const px = (v: number | null) =>
      x0 + (v === null || v <= lo ? 0 : Math.min(1, Math.log10(v / lo) / Math.log10(hi / lo)) * plotW);
    const axisTop = freshnessTop + 52;
    const bottom = freshnessTop + freshnessHeight - 10;
    parts.push(
      drawText({ x: MARGIN, y: freshnessTop, text: FRESHNESS_TITLE, bold: true }),
      drawText({ x: MARGIN, y: freshnessTop + 18, text: FRESHNESS_KEY, size: 12, fill: "#555" }),
    );
    for (let tick = lo; tick <= hi * 1.0001; tick *= 10) {
      const x = px(tick);
      const label = tick >= 1 ? `${Math.round(tick)} s` : `${Number(tick.toPrecision(1))} s`;
      parts.push(
        `<line x1="${x.toFixed(1)}" y1="${axisTop - 12}" x2="${x.toFixed(1)}" y2="${bottom}" stroke="#e2e8f0"/>`,
        `<text x="${x.toFixed(1)}" y="${axisTop - 16}" text-anchor="middle" font-size="11" fill="#555">${esc(label)}</text>`,
      );
    }
    let y = axisTop;
    freshnessRows.forEach((row, n) => {
      parts.push(drawText({ x: MARGIN, y: y + 14, text: row.label, size: 12, bold: true }));
      y += 22;
      for (const line of lines[n] ?? []) {
        const w99 = Math.max(1, px(line.p99) - x0);
        const w50 = Math.max(1, px(line.p50) - x0);
        parts.push(
          drawText({ x: x0 - 10, y: y + rowHeight - 3, text: line.label, size: 12, anchor: "end" }),
          `<rect x="${x0}" y="${y}" width="${w99.toFixed(1)}" height="${rowHeight}" fill="#90cdf4"/>`,
          `<rect x="${x0}" y="${y}" width="${w50.toFixed(1)}" height="${rowHeight}" fill="#2b6cb0"/>`,
          ...(line.max !== null && Number.isFinite(line.max)
            ? [
                `<line x1="${px(line.max).toFixed(1)}" y1="${y - 2}" x2="${px(line.max).toFixed(1)}" y2="${y + rowHeight + 2}" stroke="#1a202c" stroke-width="2"/>`,
              ]
            : []),
          drawText({ x: x0 + plotW + 12, y: y + rowHeight - 3, text: line.text, size: 12 }),
        );
        y += rowHeight + rowGap;
      }
      y += 8;
    });
  }
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
