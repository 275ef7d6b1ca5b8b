// A uPlot line chart that does not lie: every line is drawn with the exact min/max band of the
// buckets it summarises (painted under the lines), the line is the bucket mean or last value,
// a bucket without a finite value is a gap the line never crosses, smoothing is drawn over a
// faded raw line and never replaces the band. Hovering shows a tooltip over the plot (each
// line's nearest point, whatever its step grid) and moves nothing else on the page. Dragging
// selects an x range and asks the owner to query it again (ChartPanel re-fetches).
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtNum, fmtRelTick, fmtTick, fmtTooltipX, withAlpha } from '../lib/format';
import {
  joinBands, loneCells, lowerBound, showDots, smooth as smoothValues, tooltipPoint, yExtent, type Band, type Cell, type Joined, type XMode,
} from '../lib/series';

export interface ChartLine {
  id: string;
  label: string;
  color: string;
  /** Canvas dash pattern ([] or absent: solid). */
  dash?: number[];
  band: Band;
  /** Drawn bold (an aggregate across processes). */
  emphasis?: boolean;
  /** No band for this line (the aggregate shows it). */
  noBand?: boolean;
}

export interface ChartProps {
  lines: ChartLine[];
  xMode: XMode;
  log: boolean;
  smooth: number;
  height?: number;
  /** The x range shown (a zoom), or null for everything. */
  zoom: [number, number] | null;
  onZoom?: (range: [number, number] | null) => void;
  syncKey?: string;
  ariaLabel?: string;
  /** The x under the cursor (null when it leaves the plot). */
  onCursor?: (x: number | null) => void;
  /** A click on the plot that is not the end of a drag-zoom. */
  onPlotClick?: () => void;
  /** Hidden line ids, when the owner keeps them (in the URL); else the chart keeps its own. */
  hidden?: Set<string>;
  onHidden?: (hidden: Set<string>) => void;
  /** Legend entries shown before "+N more" (the rest on demand). */
  legendMax?: number;
}

/** The font of the axes' values, also used to size the y axis to its widest label. */
export const AXIS_FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const TICK_SIZE = 4;
const AXIS_GAP = 4;
const TOOLTIP_ROWS = 12;

/** Step ticks: integers only (1, 2, 5 x 10^k). */
const STEP_INCRS = (() => {
  const out: number[] = [];
  for (let e = 0; e <= 15; e++) for (const m of [1, 2, 5]) out.push(m * 10 ** e);
  return out;
})();

/** Relative-time ticks: sub-second steps, then seconds, minutes, hours, days. */
const REL_INCRS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800,
  3600, 7200, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400, 30 * 86400];

let measureCtx: CanvasRenderingContext2D | null = null;
function textWidth(s: string): number {
  if (!measureCtx) measureCtx = document.createElement('canvas').getContext('2d');
  if (!measureCtx) return s.length * 7;
  measureCtx.font = AXIS_FONT;
  return measureCtx.measureText(s).width;
}

type State = {
  joined: Joined; lines: ChartLine[]; shown: boolean[]; props: ChartProps; smoothOn: boolean;
  /** Per line: the cells that get a dot even when its points are too dense for dots. */
  lone: number[][];
  hovered: boolean; yTicks: string[]; xTicks: string[]; ySize: number;
};
type StateRef = { current?: State };

export function Chart(props: ChartProps) {
  const holder = useRef<HTMLDivElement>(null);
  const tip = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const state = useRef<State>();
  const [ownHidden, setOwnHidden] = useState<Set<string>>(new Set());
  const hidden = props.hidden ?? ownHidden;
  const [legendOpen, setLegendOpen] = useState(false);

  const smoothOn = props.smooth > 0;
  // Structure: what forces a new uPlot (series count and kinds, axes).
  const structure = `${props.lines.map((l) => l.id + (l.emphasis ? '!' : '') + (l.dash?.join(',') ?? '')).join('|')}#${props.xMode}#${props.log}#${smoothOn}#${props.height ?? 220}`;

  // What the drawing depends on: when a parent re-renders with none of it changed (another
  // chart's zoom moved the URL), nothing is joined or drawn again.
  const inputs = useRef<unknown[]>([]);
  useLayoutEffect(() => {
    const now = [props.lines, props.smooth, props.log, props.xMode, props.zoom?.[0], props.zoom?.[1], hidden, structure];
    if (plot.current && now.length === inputs.current.length && now.every((v, i) => v === inputs.current[i])) {
      if (state.current) state.current.props = props;
      return;
    }
    inputs.current = now;
    const joined = joinBands(props.lines.map((l) => l.band));
    const shown = props.lines.map((l) => !hidden.has(l.id));
    const prev = state.current;
    state.current = {
      joined, lines: props.lines, shown, props, smoothOn, lone: joined.line.map((l, j) => loneCells(l, joined.merged[j])),
      hovered: prev?.hovered ?? false, yTicks: prev?.yTicks ?? [], xTicks: prev?.xTicks ?? [], ySize: prev?.ySize ?? 0,
    };
    const data = buildData(joined, props.smooth, props.log);
    const u = plot.current;
    if (u && (u as any)._structure === structure) {
      syncShown(u);
      u.setData(data as uPlot.AlignedData, false);
      applyScale(u);
      return;
    }
    u?.destroy();
    plot.current = null;
    if (!holder.current) return;
    const width = Math.max(200, holder.current.clientWidth);
    const opts = makeOptions(width, props, smoothOn, state, holder, tip);
    const p = new uPlot(opts, data as uPlot.AlignedData, holder.current);
    (p as any)._structure = structure;
    plot.current = p;
    syncShown(p);
    applyScale(p);
    p.over.addEventListener('dblclick', () => state.current?.props.onZoom?.(null));
    p.over.addEventListener('mouseenter', () => { if (state.current) state.current.hovered = true; });
    p.over.addEventListener('mouseleave', () => {
      if (state.current) state.current.hovered = false;
      if (tip.current) tip.current.hidden = true;
    });
    let downX = 0;
    p.over.addEventListener('mousedown', (e) => {
      downX = e.clientX;
      // A drag that starts here (uPlot ends it on the document's mouseup, before the window's).
      (p as any)._localDrag = true;
      window.addEventListener('mouseup', () => { (p as any)._localDrag = false; }, { once: true });
    });
    p.over.addEventListener('click', (e) => { if (Math.abs(e.clientX - downX) < 4) state.current?.props.onPlotClick?.(); });
  });

  function syncShown(u: uPlot) {
    const st = state.current!;
    st.lines.forEach((_l, j) => {
      for (const si of seriesIndexes(j, st.smoothOn)) {
        if (u.series[si] && u.series[si].show !== st.shown[j]) u.setSeries(si, { show: st.shown[j] }, false);
      }
    });
  }

  function applyScale(u: uPlot) {
    const z = state.current!.props.zoom;
    const x = state.current!.joined.x;
    if (z) u.setScale('x', { min: z[0], max: z[1] });
    // A single x (one point, or points that share one time) in the middle of the plot.
    else if (x.length) u.setScale('x', x[x.length - 1] === x[0] ? { min: x[0] - 0.5, max: x[0] + 0.5 } : { min: x[0], max: x[x.length - 1] });
  }

  useEffect(() => () => { plot.current?.destroy(); plot.current = null; }, []);

  // Width follows the container.
  useEffect(() => {
    const el = holder.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(() => {
      const u = plot.current;
      if (u && el.clientWidth > 0 && Math.abs(u.width - el.clientWidth) > 1) {
        u.setSize({ width: el.clientWidth, height: props.height ?? 220 });
      }
    });
    ro.observe(el);
    return () => ro.disconnect();
  }, [props.height]);

  const toggle = (i: number, only: boolean) => {
    const next = new Set(hidden);
    const id = props.lines[i].id;
    if (only) {
      const othersShown = props.lines.some((l, j) => j !== i && !hidden.has(l.id));
      next.clear();
      if (othersShown) props.lines.forEach((l, j) => { if (j !== i) next.add(l.id); });
    } else if (next.has(id)) next.delete(id); else next.add(id);
    if (props.onHidden) props.onHidden(next); else setOwnHidden(next);
  };

  const max = props.legendMax ?? 8;
  const legendLines = legendOpen ? props.lines : props.lines.slice(0, max);
  const more = props.lines.length - legendLines.length;
  return (
    <div class="chart">
      <div class="chart-plot-wrap">
        <div ref={holder} class="chart-plot" role="img" aria-label={props.ariaLabel ?? 'chart'} />
        <div ref={tip} class="chart-tip" role="tooltip" hidden />
      </div>
      <div class="legend" role="group" aria-label="series">
        {legendLines.map((l, i) => (
          <button
            type="button"
            key={l.id}
            class={`legend-item${hidden.has(l.id) ? ' off' : ''}${l.emphasis ? ' emph' : ''}`}
            aria-pressed={!hidden.has(l.id)}
            title={`${l.label} · click: show/hide · shift+click: only this one`}
            data-series={l.label}
            data-line={l.id}
            onClick={(e) => toggle(i, (e as MouseEvent).shiftKey)}
          >
            <Swatch color={l.color} dash={l.dash} />
            <span class="legend-label">{l.label}</span>
          </button>
        ))}
        {(more > 0 || legendOpen) && props.lines.length > max && (
          <button type="button" class="legend-more link" aria-expanded={legendOpen} onClick={() => setLegendOpen(!legendOpen)}>
            {legendOpen ? 'fewer' : `+${more} more`}
          </button>
        )}
      </div>
    </div>
  );
}

/** A legend swatch: the line's colour and dash pattern. */
export function Swatch({ color, dash }: { color: string; dash?: number[] }) {
  return (
    <svg class="swatch-line" width="18" height="8" aria-hidden="true">
      <line x1="0" y1="4" x2="18" y2="4" stroke={color} stroke-width="3" stroke-dasharray={dash?.length ? dash.join(' ') : undefined} />
    </svg>
  );
}

/** uPlot series indexes of line j: its line, and its faded raw line when smoothing is on. */
function seriesIndexes(j: number, smoothOn: boolean): number[] {
  return smoothOn ? [1 + 2 * j, 2 + 2 * j] : [1 + j];
}

function buildData(j: Joined, smoothW: number, log: boolean): Cell[][] {
  const data: Cell[][] = [j.x];
  for (const raw of j.line) {
    // A log axis cannot show zero or less: those points are gaps there, not a plunge.
    const line = log ? raw.map((v) => (typeof v === 'number' && v <= 0 ? null : v)) : raw;
    if (smoothW > 0) {
      data.push(smoothCells(line, smoothW));
      data.push(line);
    } else {
      data.push(line);
    }
  }
  return data;
}

/** Smoothing over a joined column: undefined cells (another line's x) stay undefined. */
function smoothCells(cells: Cell[], w: number): Cell[] {
  const idx: number[] = [];
  const vals: (number | null)[] = [];
  cells.forEach((v, i) => { if (v !== undefined) { idx.push(i); vals.push(v); } });
  const sm = smoothValues(vals, w);
  const out = new Array<Cell>(cells.length).fill(undefined);
  idx.forEach((i, k) => { out[i] = sm[k]; });
  return out;
}

function makeOptions(
  width: number, props: ChartProps, smoothOn: boolean, state: StateRef,
  holder: { current: HTMLDivElement | null }, tip: { current: HTMLDivElement | null },
): uPlot.Options {
  const css = getComputedStyle(document.documentElement);
  const axisColor = css.getPropertyValue('--muted').trim() || '#888';
  const gridColor = css.getPropertyValue('--grid').trim() || 'rgba(128,128,128,0.15)';
  // Log scale: grid, ticks and labels at powers of ten only (uPlot adds 2..9 of every decade).
  const decades = props.log
    ? (_u: uPlot, splits: number[]) => splits.map((v) => (Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? v : null))
    : undefined;
  const yAxis: uPlot.Axis = {
    stroke: axisColor, font: AXIS_FONT, gap: AXIS_GAP,
    grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor, size: TICK_SIZE },
    values: (_u, splits, _ax, _space, incr) => {
      const out = splits.map((s) => (s === null ? '' : props.log ? fmtTick(s, s) : fmtTick(s, incr)));
      if (state.current) state.current.yTicks = out.filter(Boolean);
      return out;
    },
    // As wide as the widest label: never clipped, never wasted.
    size: (_u, values) => {
      const w = Math.ceil(Math.max(0, ...(values ?? []).map(textWidth))) + TICK_SIZE + AXIS_GAP + 6;
      const size = Math.max(24, w);
      if (state.current) state.current.ySize = size;
      return size;
    },
  };
  // (uPlot's defaults are replaced by explicit undefined values: set the filters only when used.)
  if (decades) {
    yAxis.filter = decades;
    yAxis.grid!.filter = decades;
    yAxis.ticks!.filter = decades;
  }
  const many = props.lines.length;
  const series: uPlot.Series[] = [{}];
  props.lines.forEach((l, j) => {
    // Dots only where they do not crowd: raw points at least ~6 px apart on average, counted as
    // the distinct x values left after the join (points that share a time are one cell), and
    // always a line of one x. Decided at each draw, from the data and the plot's width then.
    const show = (u: uPlot) => {
      const st = state.current;
      if (!st || !st.lines[j]) return false;
      return showDots(st.lines[j].band.raw, st.joined.distinct[j] ?? 0, u.bbox.width / (window.devicePixelRatio || 1));
    };
    // Otherwise still a dot where no segment shows a value: a cell that merged several points (on
    // its min-max tick) and a value alone between gaps.
    const filter = (_u: uPlot, _si: number, shown: boolean) => (shown ? null : state.current?.lone[j] ?? null);
    const w = l.emphasis ? 2.5 : many > 30 ? 1 : 1.5;
    const dash = l.dash?.length ? l.dash : undefined;
    if (smoothOn) {
      series.push({ label: l.label, stroke: l.color, width: w, dash, points: { show: false }, spanGaps: false });
      series.push({ label: l.label + ' (raw)', stroke: withAlpha(l.color, 0.35), width: 1, dash, points: { show, filter, size: 4 }, spanGaps: false });
    } else {
      series.push({ label: l.label, stroke: l.color, width: w, dash, points: { show, filter, size: 5, fill: l.color }, spanGaps: false });
    }
  });
  const xAxis: uPlot.Axis = {
    stroke: axisColor, font: AXIS_FONT, gap: AXIS_GAP, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor, size: TICK_SIZE },
  };
  const keepX = (vals: string[]) => { if (state.current) state.current.xTicks = vals.filter(Boolean); return vals; };
  if (props.xMode === 'step') {
    xAxis.incrs = STEP_INCRS;
    xAxis.values = (_u, splits, _ax, _space, incr) => keepX(splits.map((s) => (Number.isInteger(s) ? fmtTick(s, Math.max(1, incr)) : '')));
  } else if (props.xMode === 'rel') {
    xAxis.incrs = REL_INCRS;
    xAxis.values = (_u, splits, _ax, _space, incr) => keepX(splits.map((s) => fmtRelTick(s, incr)));
  }
  return {
    width,
    height: props.height ?? 220,
    legend: { show: false },
    padding: [8, 12, 0, 4],
    cursor: {
      drag: { x: true, y: false, setScale: false },
      sync: props.syncKey ? { key: props.syncKey } : undefined,
      points: { size: 6 },
    },
    select: { show: true, left: 0, top: 0, width: 0, height: 0 },
    scales: {
      x: { time: props.xMode === 'wall', auto: false },
      y: {
        distr: props.log ? 3 : 1,
        log: 10,
        range: (u, dmin, dmax) => {
          const st = state.current;
          let ext: [number, number] | null = null;
          if (st) {
            const xs = u.scales.x;
            ext = yExtent(st.joined, st.shown, xs.min ?? -Infinity, xs.max ?? Infinity, props.log);
          }
          let [lo, hi] = ext ?? [dmin, dmax];
          if (lo === null || hi === null || !Number.isFinite(lo) || !Number.isFinite(hi)) { lo = props.log ? 1 : 0; hi = props.log ? 10 : 1; }
          if (props.log) return uPlot.rangeLog(Math.max(lo, 1e-300), Math.max(hi, lo), 10, true) as uPlot.Range.MinMax;
          if (lo === hi) { const d = Math.abs(lo) * 0.05 || 1; lo -= d; hi += d; }
          const pad = (hi - lo) * 0.05;
          return [lo - pad, hi + pad];
        },
      },
    },
    axes: [xAxis, yAxis],
    series,
    hooks: {
      drawAxes: [(u) => drawBands(u, state)],
      draw: [(u) => {
        // For tests and tools: what the axes show (their labels are drawn on the canvas).
        const st = state.current, el = holder.current;
        if (!st || !el) return;
        el.dataset.yticks = st.yTicks.join('|');
        el.dataset.xticks = st.xTicks.join('|');
        el.dataset.yaxis = String(Math.round(st.ySize));
        el.dataset.font = AXIS_FONT;
        el.dataset.plotLeft = String(Math.round(u.bbox.left / (window.devicePixelRatio || 1)));
      }],
      setSelect: [(u) => {
        const sel = u.select;
        // uPlot mirrors a drag on every chart of the sync group: only the chart dragged zooms
        // (one URL update, one re-query).
        const local = (u as any)._localDrag === true;
        (u as any)._localDrag = false;
        if (local && sel.width > 4) {
          const a = u.posToVal(sel.left, 'x');
          const b = u.posToVal(sel.left + sel.width, 'x');
          state.current?.props.onZoom?.([Math.min(a, b), Math.max(a, b)]);
        }
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
      }],
      setCursor: [(u) => {
        const st = state.current;
        if (!st) return;
        const left = u.cursor.left;
        const x = left === undefined || left === null || left < 0 ? null : u.posToVal(left, 'x');
        st.props.onCursor?.(x);
        showTooltip(u, st, x, tip.current);
      }],
    },
  };
}

/** The tooltip of the chart under the mouse: the x, then each shown line's nearest point. */
function showTooltip(u: uPlot, st: State, x: number | null, el: HTMLDivElement | null) {
  if (!el) return;
  if (x === null || !st.hovered) { el.hidden = true; return; }
  const rows: { label: string; color: string; dash?: number[]; v: number | null; lo: number | null; hi: number | null; at: number | null }[] = [];
  st.lines.forEach((l, j) => {
    if (!st.shown[j]) return;
    const p = tooltipPoint(l.band, x);
    if (p === null) return;
    const i = p.i;
    // Its cell in the join: the same point, or the points that share its x merged (their range).
    const c = lowerBound(st.joined.x, l.band.x[i]);
    const cell = (col: Cell[], own: number | null) => (st.joined.x[c] === l.band.x[i] && col[c] !== undefined ? col[c] as number | null : own);
    // A line that ended before the cursor (or starts after it): its nearest point, with its own x.
    rows.push({
      label: l.label, color: l.color, dash: l.dash, v: cell(st.joined.line[j], l.band.line[i]),
      lo: cell(st.joined.min[j], l.band.min[i]), hi: cell(st.joined.max[j], l.band.max[i]), at: p.beyond ? l.band.x[i] : null,
    });
  });
  if (!rows.length) { el.hidden = true; return; }
  // The lines nearest the cursor's height first when they do not all fit.
  const yAt = u.cursor.top !== undefined && u.cursor.top !== null && u.cursor.top >= 0 ? u.posToVal(u.cursor.top, 'y') : null;
  rows.sort((a, b) => (b.v ?? -Infinity) - (a.v ?? -Infinity));
  let shownRows = rows;
  if (rows.length > TOOLTIP_ROWS && yAt !== null) {
    let best = 0;
    rows.forEach((r, i) => { if (r.v !== null && Math.abs(r.v - yAt) < Math.abs((rows[best].v ?? Infinity) - yAt)) best = i; });
    const start = Math.max(0, Math.min(rows.length - TOOLTIP_ROWS, best - Math.floor(TOOLTIP_ROWS / 2)));
    shownRows = rows.slice(start, start + TOOLTIP_ROWS);
  } else if (rows.length > TOOLTIP_ROWS) {
    shownRows = rows.slice(0, TOOLTIP_ROWS);
  }
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]!));
  let html = `<div class="tip-x">${esc(fmtTooltipX(x, st.props.xMode))}</div>`;
  for (const r of shownRows) {
    const val = r.v === null ? '<span class="tip-gap">NaN/∞</span>'
      : esc(fmtNum(r.v)) + (r.lo !== null && r.hi !== null && r.lo !== r.hi ? ` <span class="muted">[${esc(fmtNum(r.lo))} … ${esc(fmtNum(r.hi))}]</span>` : '');
    const at = r.at === null ? '' : ` <span class="muted tip-at">at ${esc(fmtTooltipX(r.at, st.props.xMode, x))}</span>`;
    const dash = r.dash?.length ? ` stroke-dasharray="${r.dash.join(' ')}"` : '';
    html += `<div class="tip-row" data-series="${esc(r.label)}"><svg width="14" height="6"><line x1="0" y1="3" x2="14" y2="3" stroke="${esc(r.color)}" stroke-width="3"${dash}/></svg>`
      + `<span class="tip-label">${esc(r.label)}</span><span class="tip-val">${val}${at}</span></div>`;
  }
  if (shownRows.length < rows.length) html += `<div class="muted">+${rows.length - shownRows.length} more lines</div>`;
  el.innerHTML = html;
  el.hidden = false;
  // Beside the cursor, inside the plot; flipped to the left near the right edge.
  const dpr = window.devicePixelRatio || 1;
  const plotLeft = u.bbox.left / dpr, plotTop = u.bbox.top / dpr, plotW = u.bbox.width / dpr;
  const cx = plotLeft + (u.cursor.left ?? 0);
  const w = el.offsetWidth;
  const left = cx + 14 + w > plotLeft + plotW ? Math.max(0, cx - 14 - w) : cx + 14;
  el.style.left = `${left}px`;
  el.style.top = `${plotTop + 4}px`;
}

/** Paints each shown line's min/max band under the lines, from the band's own points (so that
 * other lines' x values never split it), breaking only at real gaps (buckets without a finite
 * value). Many lines get fainter bands. */
function drawBands(u: uPlot, state: StateRef) {
  const st = state.current;
  if (!st) return;
  const { lines, shown, props } = st;
  const ctx = u.ctx;
  const { left, top, width, height } = u.bbox;
  const xmin = u.scales.x.min ?? -Infinity, xmax = u.scales.x.max ?? Infinity;
  const floor = u.scales.y.min ?? 0;
  const y = (v: number) => u.valToPos(props.log ? Math.max(v, floor) : v, 'y', true);
  const alpha = Math.max(0.04, 0.16 * Math.min(1, 8 / Math.max(1, lines.length)));
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();
  for (let s = 0; s < lines.length; s++) {
    const line = lines[s];
    if (!shown[s] || line.noBand || line.band.raw) continue;
    const { x, min: mn, max: mx } = line.band;
    const i0 = Math.max(0, lowerBound(x, xmin) - 1);
    const i1 = Math.min(x.length - 1, lowerBound(x, xmax));
    ctx.fillStyle = withAlpha(line.color, line.emphasis ? alpha * 1.5 : alpha);
    ctx.strokeStyle = withAlpha(line.color, 0.4);
    ctx.lineWidth = 1;
    let i = i0;
    while (i <= i1) {
      while (i <= i1 && (mn[i] === null || mx[i] === null)) i++;
      const start = i;
      while (i <= i1 && mn[i] !== null && mx[i] !== null) i++;
      const end = i - 1;
      if (end < start) continue;
      ctx.beginPath();
      if (end === start) {
        const px = u.valToPos(x[start], 'x', true);
        ctx.moveTo(px, y(mx[start]!));
        ctx.lineTo(px, y(mn[start]!));
        ctx.stroke();
        continue;
      }
      ctx.moveTo(u.valToPos(x[start], 'x', true), y(mx[start]!));
      for (let k = start + 1; k <= end; k++) ctx.lineTo(u.valToPos(x[k], 'x', true), y(mx[k]!));
      for (let k = end; k >= start; k--) ctx.lineTo(u.valToPos(x[k], 'x', true), y(mn[k]!));
      ctx.closePath();
      ctx.fill();
    }
  }
  ctx.restore();
  // Points that share one x (one timestamp on a time axis) are one cell of the join: a vertical
  // tick from their min to their max (the line's dot sits on it), so that none of them vanishes.
  // Whole at the plot's left and right edges too (where a time axis puts its first and last x).
  const dpr = window.devicePixelRatio || 1;
  ctx.save();
  ctx.beginPath();
  ctx.rect(left - 3 * dpr, top, width + 6 * dpr, height);
  ctx.clip();
  const j = st.joined;
  for (let s = 0; s < lines.length; s++) {
    const cells = j.merged[s];
    if (!shown[s] || !cells?.length) continue;
    const line = lines[s];
    ctx.strokeStyle = line.band.raw ? withAlpha(line.color, 0.85) : withAlpha(line.color, 0.5);
    ctx.lineWidth = (line.band.raw ? 1.5 : 1) * dpr;
    ctx.beginPath();
    for (const c of cells) {
      const lo = j.min[s][c], hi = j.max[s][c];
      if (typeof lo !== 'number' || typeof hi !== 'number' || j.x[c] < xmin || j.x[c] > xmax) continue;
      const px = u.valToPos(j.x[c], 'x', true);
      ctx.moveTo(px, y(hi));
      ctx.lineTo(px, y(lo));
    }
    ctx.stroke();
  }
  ctx.restore();
}
