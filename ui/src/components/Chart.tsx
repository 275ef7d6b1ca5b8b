// A uPlot line chart that does not lie: every line is drawn with the exact min/max band of the
// buckets it summarises (painted under the lines), the line is the bucket mean or last value,
// smoothing is drawn over a faded raw line and never replaces the band. Dragging selects an x
// range and asks the owner to query it again (ChartPanel re-fetches with buckets = pixels).
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtDuration, fmtNum, withAlpha } from '../lib/format';
import { joinBands, lowerBound, smooth as smoothValues, yExtent, type Band, type Joined, type XMode } from '../lib/series';

export interface ChartLine {
  id: string;
  label: string;
  color: string;
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
}

function xValue(x: number, mode: XMode): string {
  if (mode === 'step') return `step ${fmtNum(x)}`;
  if (mode === 'rel') return fmtDuration(x * 1000);
  return new Date(x * 1000).toLocaleTimeString();
}

export function Chart(props: ChartProps) {
  const holder = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const state = useRef<{ joined: Joined; lines: ChartLine[]; shown: boolean[]; props: ChartProps; smoothOn: boolean }>();
  const legendVals = useRef<(HTMLSpanElement | null)[]>([]);
  const cursorX = useRef<HTMLSpanElement>(null);
  const [hidden, setHidden] = useState<Set<string>>(new Set());

  const smoothOn = props.smooth > 0;
  // Structure: what forces a new uPlot (series count and kinds, axes).
  const structure = `${props.lines.map((l) => l.id + (l.emphasis ? '!' : '')).join('|')}#${props.xMode}#${props.log}#${smoothOn}#${props.height ?? 220}`;

  useLayoutEffect(() => {
    const joined = joinBands(props.lines.map((l) => l.band));
    const shown = props.lines.map((l) => !hidden.has(l.id));
    state.current = { joined, lines: props.lines, shown, props, smoothOn };
    const data = buildData(joined, props.smooth);
    const u = plot.current;
    if (u && (u as any)._structure === structure) {
      u.setData(data as uPlot.AlignedData, false);
      applyScale(u);
      return;
    }
    u?.destroy();
    plot.current = null;
    if (!holder.current) return;
    const width = Math.max(200, holder.current.clientWidth);
    const opts = makeOptions(width, props, smoothOn, state, legendVals, cursorX);
    const p = new uPlot(opts, data as uPlot.AlignedData, holder.current);
    (p as any)._structure = structure;
    plot.current = p;
    applyScale(p);
    p.over.addEventListener('dblclick', () => state.current?.props.onZoom?.(null));
    let downX = 0;
    p.over.addEventListener('mousedown', (e) => { downX = e.clientX; });
    p.over.addEventListener('click', (e) => { if (Math.abs(e.clientX - downX) < 4) state.current?.props.onPlotClick?.(); });
  });

  function applyScale(u: uPlot) {
    const z = state.current!.props.zoom;
    const x = state.current!.joined.x;
    if (z) u.setScale('x', { min: z[0], max: z[1] });
    else if (x.length) u.setScale('x', { min: x[0], max: x[x.length - 1] === x[0] ? x[0] + 1 : x[x.length - 1] });
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
    setHidden(next);
    const u = plot.current;
    if (u && state.current) {
      props.lines.forEach((l, j) => {
        const show = !next.has(l.id);
        state.current!.shown[j] = show;
        for (const si of seriesIndexes(j, smoothOn)) if (u.series[si].show !== show) u.setSeries(si, { show });
      });
      u.redraw(true);
    }
  };

  return (
    <div class="chart">
      <div ref={holder} class="chart-plot" role="img" aria-label={props.ariaLabel ?? 'chart'} />
      <div class="legend" role="group" aria-label="series">
        <span class="legend-x" ref={cursorX} />
        {props.lines.map((l, i) => (
          <button
            type="button"
            key={l.id}
            class={`legend-item${hidden.has(l.id) ? ' off' : ''}${l.emphasis ? ' emph' : ''}`}
            aria-pressed={!hidden.has(l.id)}
            title="click: show/hide · shift+click: only this one"
            data-series={l.label}
            onClick={(e) => toggle(i, (e as MouseEvent).shiftKey)}
          >
            <span class="swatch" style={{ background: l.color }} />
            <span class="legend-label">{l.label}</span>
            <span class="legend-val" ref={(el) => { legendVals.current[i] = el; }} />
          </button>
        ))}
      </div>
    </div>
  );
}

/** uPlot series indexes of line j: its line, and its faded raw line when smoothing is on. */
function seriesIndexes(j: number, smoothOn: boolean): number[] {
  return smoothOn ? [1 + 2 * j, 2 + 2 * j] : [1 + j];
}

function buildData(j: Joined, smoothW: number): (number | null)[][] {
  const data: (number | null)[][] = [j.x];
  for (const line of j.line) {
    if (smoothW > 0) {
      data.push(smoothValues(line, smoothW));
      data.push(line);
    } else {
      data.push(line);
    }
  }
  return data;
}

type StateRef = { current?: { joined: Joined; lines: ChartLine[]; shown: boolean[]; props: ChartProps; smoothOn: boolean } };

function makeOptions(
  width: number, props: ChartProps, smoothOn: boolean, state: StateRef,
  legendVals: { current: (HTMLSpanElement | null)[] }, cursorX: { current: HTMLSpanElement | null },
): uPlot.Options {
  const css = getComputedStyle(document.documentElement);
  const axisColor = css.getPropertyValue('--muted').trim() || '#888';
  const gridColor = css.getPropertyValue('--grid').trim() || 'rgba(128,128,128,0.15)';
  // Log scale: grid, ticks and labels at powers of ten only (uPlot adds 2..9 of every decade).
  const decades = props.log
    ? (_u: uPlot, splits: number[]) => splits.map((v) => (Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? v : null))
    : undefined;
  const yAxis: uPlot.Axis = {
    stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor }, size: 56,
    values: (_u, splits) => splits.map((s) => (s === null ? '' : fmtNum(s))),
  };
  // (uPlot's defaults are replaced by explicit undefined values: set the filters only when used.)
  if (decades) {
    yAxis.filter = decades;
    yAxis.grid!.filter = decades;
    yAxis.ticks!.filter = decades;
  }
  const series: uPlot.Series[] = [{}];
  props.lines.forEach((l) => {
    // Dots only where they do not crowd: raw points at least ~6 px apart on average.
    const pts = l.band.raw && l.band.x.length <= width / 6;
    if (smoothOn) {
      series.push({ label: l.label, stroke: l.color, width: l.emphasis ? 2.5 : 1.5, points: { show: false }, spanGaps: true });
      series.push({ label: l.label + ' (raw)', stroke: withAlpha(l.color, 0.35), width: 1, points: { show: pts, size: 4 }, spanGaps: true });
    } else {
      series.push({ label: l.label, stroke: l.color, width: l.emphasis ? 2.5 : 1.5, points: { show: pts, size: 5, fill: l.color }, spanGaps: true });
    }
  });
  const xAxis: uPlot.Axis = { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor } };
  if (props.xMode === 'rel') xAxis.values = (_u, splits) => splits.map((s) => fmtDuration(s * 1000));
  if (props.xMode === 'step') xAxis.values = (_u, splits) => splits.map((s) => fmtNum(s));
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
      setSelect: [(u) => {
        const sel = u.select;
        if (sel.width > 4) {
          const a = u.posToVal(sel.left, 'x');
          const b = u.posToVal(sel.left + sel.width, 'x');
          state.current?.props.onZoom?.([Math.min(a, b), Math.max(a, b)]);
        }
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
      }],
      setCursor: [(u) => {
        const st = state.current;
        if (!st) return;
        const i = u.cursor.idx;
        if (cursorX.current) cursorX.current.textContent = i === null || i === undefined ? '' : xValue(st.joined.x[i], st.props.xMode);
        st.props.onCursor?.(i === null || i === undefined ? null : st.joined.x[i]);
        st.lines.forEach((_l, j) => {
          const el = legendVals.current[j];
          if (!el) return;
          if (i === null || i === undefined) { el.textContent = ''; return; }
          const v = st.joined.line[j][i];
          const lo = st.joined.min[j][i], hi = st.joined.max[j][i];
          el.textContent = v === null ? '' : (lo !== null && hi !== null && lo !== hi ? `${fmtNum(v)} [${fmtNum(lo)} … ${fmtNum(hi)}]` : fmtNum(v));
        });
      }],
    },
  };
}

/** Paints each shown line's min/max band under the lines, from the band's own points (so that
 * other lines' x values never split it), breaking only at real gaps (NaN buckets). */
function drawBands(u: uPlot, state: StateRef) {
  const st = state.current;
  if (!st) return;
  const { lines, shown, props } = st;
  const ctx = u.ctx;
  const { left, top, width, height } = u.bbox;
  const xmin = u.scales.x.min ?? -Infinity, xmax = u.scales.x.max ?? Infinity;
  const floor = u.scales.y.min ?? 0;
  const y = (v: number) => u.valToPos(props.log ? Math.max(v, floor) : v, 'y', true);
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
    ctx.fillStyle = withAlpha(line.color, line.emphasis ? 0.24 : 0.16);
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
}
