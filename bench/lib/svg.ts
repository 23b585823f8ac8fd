/** The results chart, written by hand: throughput bars and, when a soak ran, its RSS and lag lines. */

export interface ChartInput {
  readonly title: string;
  readonly subtitle: string;
  readonly bars: readonly { label: string; value: number; note?: string; highlight?: boolean }[];
  readonly soak?: readonly { minute: number; rssMiB: number; lag: number }[];
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
  const height = soakTop + soakHeight + (soakHeight > 0 ? 60 : 0);
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
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
