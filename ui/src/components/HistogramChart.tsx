// A histogram over steps, drawn on a uPlot canvas (its axes, cursor and drag selection):
// - "bands": TensorBoard-style distribution bands -- min..max, 7..93%, 16..84%, 31..69%, each a
//   translucent fill over the next, so the colour darkens towards the median line;
// - "heatmap": steps x bins, each cell's colour its count (linear or log scale).
// A column that counts nothing (every value NaN, or unreadable) is a gap in both: never a 0.
// Hovering shows a tooltip over the plot: the step (or merged steps), then the percentiles
// (bands) or the bin and count under the cursor (heatmap). Dragging selects a step range
// (onZoom), a double-click resets it.
import { useEffect, useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtNum, fmtTick, withAlpha } from '../lib/format';
import {
  columnSpan, fractionBelow, heat, heatColour, heatmap, heatmapRows, nearestPoint, PERCENTILE_LABELS, rowAt,
  valueExtent, xExtent, type Distribution, type Heatmap, type HistPoint,
} from '../lib/histograms';
import { AXIS_FONT } from './Chart';

export type HistView = 'bands' | 'heatmap';

export interface HistogramChartProps {
  dist: Distribution;
  view: HistView;
  /** Heatmap colour on a log scale of counts. */
  log: boolean;
  height?: number;
  color?: string;
  ariaLabel?: string;
  /** Names the data (e.g. its writer) in the plot's `data-drawn-for`, for tests and tools. */
  id?: string;
  onZoom?: (range: [number, number] | null) => void;
}

const TICK_SIZE = 4;
const AXIS_GAP = 4;
/** The band pairs (indexes into PERCENTILES), outermost first. */
const BANDS: [number, number][] = [[0, 8], [1, 7], [2, 6], [3, 5]];
const MEDIAN = 4;
/** Each band's fill: the inner ones are painted over the outer ones, so they darken inwards. */
const BAND_ALPHA = 0.18;
const BAND_LABELS = ['31–69%', '16–84%', '7–93%', 'min–max'];

type State = { props: HistogramChartProps; grid: Heatmap | null; hovered: boolean };

let measureCtx: CanvasRenderingContext2D | null = null;
function textWidth(s: string): number {
  if (!measureCtx) measureCtx = document.createElement('canvas').getContext('2d');
  if (!measureCtx) return s.length * 7;
  measureCtx.font = AXIS_FONT;
  return measureCtx.measureText(s).width;
}

const STEP_INCRS = (() => {
  const out: number[] = [];
  for (let e = 0; e <= 15; e++) for (const m of [1, 2, 5]) out.push(m * 10 ** e);
  return out;
})();

export function HistogramChart(props: HistogramChartProps) {
  const holder = useRef<HTMLDivElement>(null);
  const tip = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const state = useRef<State>({ props, grid: null, hovered: false });
  const height = props.height ?? 220;
  // The heatmap's grid: rows as the histograms' bins, at most one per 2 pixels of height.
  const grid = useMemo(() => (props.view === 'heatmap' ? heatmap(props.dist.points, heatmapRows(props.dist.points, valueExtent(props.dist.points), (height - 30) / 2)) : null),
    [props.dist, props.view, height]);

  useLayoutEffect(() => {
    const el = holder.current;
    if (!el) return;
    const { dist } = props;
    const width = Math.max(200, el.clientWidth);
    state.current = { props, grid, hovered: state.current.hovered };
    plot.current?.destroy();
    const data: uPlot.AlignedData = [dist.points.map((p) => p.x), dist.points.map((p) => p.q[MEDIAN])];
    plot.current = new uPlot(makeOptions(width, height, props, state, holder, tip), data, el);
    const p = plot.current;
    p.over.addEventListener('dblclick', () => state.current.props.onZoom?.(null));
    p.over.addEventListener('mouseenter', () => { state.current.hovered = true; });
    p.over.addEventListener('mouseleave', () => {
      state.current.hovered = false;
      if (tip.current) tip.current.hidden = true;
      if (holder.current) { delete holder.current.dataset.hoverStep; delete holder.current.dataset.hoverLeft; }
    });
    p.over.addEventListener('mousedown', () => { (p as any)._localDrag = true; });
  }, [grid, props.dist, props.view, props.log, height, props.color]);

  useEffect(() => { state.current.props = props; });
  useEffect(() => () => { plot.current?.destroy(); plot.current = null; }, []);

  // Width follows the container.
  useEffect(() => {
    const el = holder.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(() => {
      const u = plot.current;
      if (u && el.clientWidth > 0 && Math.abs(u.width - el.clientWidth) > 1) u.setSize({ width: el.clientWidth, height });
    });
    ro.observe(el);
    return () => ro.disconnect();
  }, [height]);

  return (
    <div class="chart hist-chart">
      <div class="chart-plot-wrap">
        <div ref={holder} class="chart-plot" role="img" aria-label={props.ariaLabel ?? 'histogram'} data-view={props.view} />
        <div ref={tip} class="chart-tip hist-tip" role="tooltip" data-testid="hist-tip" hidden />
      </div>
      {props.view === 'heatmap' ? <HeatLegend log={props.log} max={grid?.max ?? 0} />
        : <BandLegend color={props.color ?? DEFAULT_COLOR} />}
    </div>
  );
}

const DEFAULT_COLOR = '#e8710a';

function BandLegend({ color }: { color: string }) {
  return (
    <div class="legend hist-legend small muted" aria-label="bands">
      <span><svg width="18" height="8" aria-hidden="true"><line x1="0" y1="4" x2="18" y2="4" stroke={color} stroke-width="2" /></svg> median</span>
      {BAND_LABELS.map((label, k) => (
        <span key={label}><span class="swatch" style={{ background: withAlpha(color, 1 - (1 - BAND_ALPHA) ** (BANDS.length - k)) }} /> {label}</span>
      ))}
    </div>
  );
}

function HeatLegend({ log, max }: { log: boolean; max: number }) {
  const stops = [0.02, 0.25, 0.5, 0.75, 1].map((t) => heatColour(t)).join(', ');
  return (
    <div class="legend hist-legend small muted" aria-label="colour scale">
      <span>count{log ? ' (log scale)' : ''}: few</span>
      <span class="heat-ramp" style={{ background: `linear-gradient(to right, ${stops})` }} />
      <span>{max > 0 ? fmtNum(max) : 'many'} per cell</span>
    </div>
  );
}

function makeOptions(
  width: number, height: number, props: HistogramChartProps, state: { current: State },
  holder: { current: HTMLDivElement | null }, tip: { current: HTMLDivElement | null },
): uPlot.Options {
  const css = getComputedStyle(document.documentElement);
  const axisColor = css.getPropertyValue('--muted').trim() || '#888';
  const gridColor = css.getPropertyValue('--grid').trim() || 'rgba(128,128,128,0.15)';
  const heatView = props.view === 'heatmap';
  const color = props.color ?? DEFAULT_COLOR;
  const xr = xExtent(props.dist.points, heatView) ?? [0, 1];
  let yr = valueExtent(props.dist.points) ?? [0, 1];
  if (!heatView) { const pad = (yr[1] - yr[0]) * 0.04; yr = [yr[0] - pad, yr[1] + pad]; }
  const ticks: string[] = [];
  return {
    width, height,
    legend: { show: false },
    padding: [8, 12, 0, 4],
    cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
    select: { show: true, left: 0, top: 0, width: 0, height: 0 },
    scales: {
      x: { time: false, auto: false, range: () => [xr[0], xr[1]] },
      y: { auto: false, range: () => [yr[0], yr[1]] },
    },
    axes: [
      {
        stroke: axisColor, font: AXIS_FONT, gap: AXIS_GAP, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor, size: TICK_SIZE },
        incrs: STEP_INCRS,
        values: (_u, splits, _ax, _space, incr) => splits.map((s) => (Number.isInteger(s) ? fmtTick(s, Math.max(1, incr)) : '')),
      },
      {
        stroke: axisColor, font: AXIS_FONT, gap: AXIS_GAP, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor, size: TICK_SIZE },
        values: (_u, splits, _ax, _space, incr) => {
          const out = splits.map((s) => fmtTick(s, incr));
          ticks.splice(0, ticks.length, ...out);
          return out;
        },
        size: (_u, values) => Math.max(24, Math.ceil(Math.max(0, ...(values ?? []).map(textWidth))) + TICK_SIZE + AXIS_GAP + 6),
      },
    ],
    series: [{}, { stroke: heatView ? 'transparent' : color, width: heatView ? 0 : 1.5, points: { show: false }, spanGaps: false }],
    hooks: {
      drawAxes: [(u) => {
        const st = state.current;
        const drawn = heatView ? drawHeatmap(u, st.props.dist.points, st.grid, st.props.log) : drawBands(u, st.props.dist.points, color);
        // For tests and tools: what the canvas shows.
        const el = holder.current;
        if (el) {
          el.dataset.columns = String(st.props.dist.points.length);
          el.dataset.drawn = String(drawn.columns);
          el.dataset.gaps = String(st.props.dist.empty);
          el.dataset.rows = heatView && st.grid ? String(st.grid.rows) : '';
          el.dataset.cells = heatView ? String(drawn.cells) : '';
          el.dataset.bands = heatView ? '' : String(drawn.cells);
          el.dataset.yticks = ticks.join('|');
          el.dataset.drawnFor = `${st.props.id ?? ''}|${st.props.view}|${st.props.log ? 'log' : 'linear'}`;
        }
      }],
      setSelect: [(u) => {
        const sel = u.select;
        const local = (u as any)._localDrag === true;
        (u as any)._localDrag = false;
        if (local && sel.width > 4) {
          const a = u.posToVal(sel.left, 'x'), b = u.posToVal(sel.left + sel.width, 'x');
          state.current.props.onZoom?.([Math.floor(Math.min(a, b)), Math.ceil(Math.max(a, b))]);
        }
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
      }],
      setCursor: [(u) => showTip(u, state.current, tip.current, holder.current)],
    },
  };
}

/** The four bands and the median's gaps: each band a closed shape over a run of columns with
 * numbers; a lone column (a single step, or one between gaps) is a short bar. Returns what it
 * drew: columns with numbers and band shapes. */
function drawBands(u: uPlot, points: HistPoint[], color: string): { columns: number; cells: number } {
  const ctx = u.ctx;
  const { left, top, width, height } = u.bbox;
  const dpr = window.devicePixelRatio || 1;
  const X = (v: number) => u.valToPos(v, 'x', true);
  const Y = (v: number) => u.valToPos(v, 'y', true);
  let shapes = 0, columns = 0;
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();
  // Runs of columns with numbers.
  const runs: [number, number][] = [];
  for (let i = 0; i < points.length;) {
    while (i < points.length && points[i].q[0] === null) i++;
    const s = i;
    while (i < points.length && points[i].q[0] !== null) i++;
    if (i > s) runs.push([s, i - 1]);
  }
  for (const [s, e] of runs) columns += e - s + 1;
  for (const [lo, hi] of BANDS) {
    ctx.fillStyle = withAlpha(color, BAND_ALPHA);
    for (const [s, e] of runs) {
      shapes++;
      if (s === e) {
        const px = X(points[s].x), w = 8 * dpr;
        const y0 = Y(points[s].q[hi]!), y1 = Y(points[s].q[lo]!);
        ctx.fillRect(px - w / 2, y0, w, Math.max(1, y1 - y0));
        continue;
      }
      ctx.beginPath();
      ctx.moveTo(X(points[s].x), Y(points[s].q[hi]!));
      for (let k = s + 1; k <= e; k++) ctx.lineTo(X(points[k].x), Y(points[k].q[hi]!));
      for (let k = e; k >= s; k--) ctx.lineTo(X(points[k].x), Y(points[k].q[lo]!));
      ctx.closePath();
      ctx.fill();
    }
  }
  // A lone column's median: a tick across its bar (a line needs two points).
  ctx.strokeStyle = color;
  ctx.lineWidth = 2 * dpr;
  for (const [s, e] of runs) {
    if (s !== e) continue;
    const px = X(points[s].x), y = Y(points[s].q[MEDIAN]!);
    ctx.beginPath();
    ctx.moveTo(px - 6 * dpr, y);
    ctx.lineTo(px + 6 * dpr, y);
    ctx.stroke();
  }
  ctx.restore();
  return { columns, cells: shapes };
}

/** The heatmap: a rectangle per non-empty cell, its colour the cell's count. */
function drawHeatmap(u: uPlot, points: HistPoint[], grid: Heatmap | null, log: boolean): { columns: number; cells: number } {
  if (!grid) return { columns: 0, cells: 0 };
  const ctx = u.ctx;
  const { left, top, width, height } = u.bbox;
  const X = (v: number) => u.valToPos(v, 'x', true);
  const Y = (v: number) => u.valToPos(v, 'y', true);
  const rowH = (grid.hi - grid.lo) / grid.rows;
  let cells = 0, columns = 0;
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();
  for (let i = 0; i < points.length; i++) {
    const col = grid.cells[i];
    if (!col) continue;
    columns++;
    const [a, b] = columnSpan(points, i);
    const x0 = Math.floor(X(a)), x1 = Math.ceil(X(b));
    for (let r = 0; r < grid.rows; r++) {
      const t = heat(col[r], grid.max, log);
      if (t <= 0) continue;
      const y0 = Math.floor(Y(grid.lo + (r + 1) * rowH)), y1 = Math.ceil(Y(grid.lo + r * rowH));
      ctx.fillStyle = heatColour(t);
      ctx.fillRect(x0, y0, Math.max(1, x1 - x0), Math.max(1, y1 - y0));
      cells++;
    }
  }
  ctx.restore();
  return { columns, cells };
}

function stepText(p: HistPoint): string {
  return p.merged > 1 ? `steps ${fmtNum(p.step)}–${fmtNum(p.lastStep)} (${fmtNum(p.merged)} merged${p.exact ? '' : ', re-binned'})` : `step ${fmtNum(p.step)}`;
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]!));

/** The tooltip: the step under the cursor, then its percentiles (bands) or the bin and count
 * under the cursor (heatmap). */
function showTip(u: uPlot, st: State, el: HTMLDivElement | null, holder: HTMLDivElement | null) {
  if (!el) return;
  const left = u.cursor.left, top = u.cursor.top;
  if (!st.hovered || left === undefined || left === null || left < 0 || top === undefined || top === null) { el.hidden = true; return; }
  const { dist, view, log } = st.props;
  const x = u.posToVal(left, 'x'), y = u.posToVal(top, 'y');
  const i = nearestPoint(dist.points, x);
  if (i === null) { el.hidden = true; return; }
  const p = dist.points[i];
  let html = `<div class="tip-x" data-step="${p.step}">${esc(stepText(p))}</div>`;
  const row = (label: string, value: string, attr = '') => `<div class="tip-row"${attr}><span class="tip-label">${esc(label)}</span><span class="tip-val">${value}</span></div>`;
  if (p.q[0] === null) {
    html += row('values', '<span class="tip-gap">none finite (NaN/∞ left out)</span>', ' data-gap="1"');
  } else if (view === 'heatmap' && st.grid) {
    const r = rowAt(st.grid, y);
    const col = st.grid.cells[i];
    if (r !== null && col) {
      const w = (st.grid.hi - st.grid.lo) / st.grid.rows;
      const a = st.grid.lo + r * w, b = a + w;
      html += row('bin', esc(`${fmtNum(a)} … ${fmtNum(b)}`), ` data-bin="${r}" data-lo="${a}" data-hi="${b}"`);
      html += row('count', esc(fmtNum(Math.round(col[r] * 100) / 100)) + (log ? ' <span class="muted">(log colour)</span>' : ''), ` data-count="${col[r]}"`);
    }
    html += row('median', esc(fmtNum(p.q[MEDIAN])), ` data-q="median" data-v="${p.q[MEDIAN]}"`);
    html += row('values', esc(fmtNum(p.total)));
  } else {
    for (let k = p.q.length - 1; k >= 0; k--) html += row(PERCENTILE_LABELS[k], esc(fmtNum(p.q[k])), ` data-q="${PERCENTILE_LABELS[k]}" data-v="${p.q[k]}"`);
    const f = p.bins ? fractionBelow(p.bins, y) : null;
    if (f !== null) html += row(`at ${fmtNum(y)}`, esc(`${Math.round(f * 100)}% below`), ' data-cursor="1"');
    html += row('values', esc(fmtNum(p.total)), ` data-total="${p.total}"`);
  }
  el.innerHTML = html;
  el.hidden = false;
  // For tests and tools: the step shown and where the cursor was (px from the plot's left).
  if (holder) { holder.dataset.hoverStep = String(p.step); holder.dataset.hoverLeft = String(Math.round(left)); }
  const dpr = window.devicePixelRatio || 1;
  const plotLeft = u.bbox.left / dpr, plotTop = u.bbox.top / dpr, plotW = u.bbox.width / dpr;
  const cx = plotLeft + left;
  const w = el.offsetWidth;
  el.style.left = `${cx + 14 + w > plotLeft + plotW ? Math.max(0, cx - 14 - w) : cx + 14}px`;
  el.style.top = `${plotTop + 4}px`;
}
