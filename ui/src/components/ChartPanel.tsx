// A chart with its data: loads when scrolled into view, asks for as many buckets as the plot
// has pixels, re-queries the visible range on zoom and on every live tick, and can add the
// aggregate across processes (min/max band + mean) over the individual lines.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../lib/api';
import { loadLines, type LineSource, type LoadedLine } from '../lib/chartdata';
import { colorFor } from '../lib/format';
import { aggregateBands, bucketWidth, xExtent, type Band, type LineMode, type XMode } from '../lib/series';
import { Chart, type ChartLine } from './Chart';

export interface ChartSettings {
  xMode: XMode;
  log: boolean;
  smooth: number;
  line: LineMode;
  agg: boolean;
}

export interface ChartPanelProps {
  title: string;
  sources: LineSource[];
  settings: ChartSettings;
  tick?: number;
  height?: number;
  syncKey?: string;
  aggLabel?: string;
  color?: (l: LoadedLine, i: number) => string;
}

const AXIS_SPACE = 72; // y axis + padding: the plot's width in pixels is the container's minus this

export function ChartPanel(p: ChartPanelProps) {
  const box = useRef<HTMLDivElement>(null);
  const [visible, setVisible] = useState(false);
  const [width, setWidth] = useState(0);
  const [zoom, setZoom] = useState<[number, number] | null>(null);
  const [lines, setLines] = useState<LoadedLine[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const previous = useRef(new Map<string, Band>());
  const { xMode, line: lineMode } = p.settings;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    setWidth(el.clientWidth);
    if (typeof IntersectionObserver === 'undefined') { setVisible(true); return; }
    const io = new IntersectionObserver((es) => {
      if (es.some((e) => e.isIntersecting)) { setVisible(true); io.disconnect(); }
    }, { rootMargin: '300px' });
    io.observe(el);
    const ro = new ResizeObserver(() => {
      // Re-query only when the width changed enough to matter (10%).
      setWidth((w) => (Math.abs(el.clientWidth - w) > w * 0.1 ? el.clientWidth : w));
    });
    ro.observe(el);
    return () => { io.disconnect(); ro.disconnect(); };
  }, []);

  // A zoom is in x units: a new axis kind drops it.
  useEffect(() => setZoom(null), [xMode]);

  const sourcesKey = JSON.stringify(p.sources.map(({ name: _n, ...s }) => s));
  useEffect(() => {
    if (!visible || width <= 0 || !p.sources.length) return;
    const ctl = new AbortController();
    setLoading(true);
    loadLines(api, p.sources, {
      buckets: Math.max(10, width - AXIS_SPACE), xMode, lineMode, range: zoom,
      previous: previous.current, signal: ctl.signal,
    }).then((ls) => {
      if (ctl.signal.aborted) return;
      previous.current = new Map(ls.map((l) => [l.id, l.band]));
      setLines(ls);
      setError(null);
      setLoading(false);
    }, (e) => {
      if (ctl.signal.aborted || (e as Error).name === 'AbortError') return;
      setError(e instanceof ApiError ? e.message : String(e));
      setLoading(false);
    });
    return () => ctl.abort();
  }, [visible, width, sourcesKey, xMode, lineMode, zoom?.[0], zoom?.[1], p.tick]);

  const chartLines = useMemo<ChartLine[]>(() => {
    if (!lines) return [];
    const color = p.color ?? ((l: LoadedLine, i: number) => (lines.length > 1 ? colorFor(l.writer || l.label, undefined) : colorFor('', i)));
    const ls: ChartLine[] = lines.map((l, i) => ({ id: l.id, label: l.label, color: color(l, i), band: l.band, noBand: p.settings.agg && lines.length > 1 }));
    if (p.settings.agg && lines.length > 1) {
      const bands = lines.map((l) => l.band);
      const n = Math.max(10, width - AXIS_SPACE);
      let lo: number, hi: number;
      const common = stepRangeOf(p.sources);
      if (xMode === 'step' && !zoom && common) {
        // Exactly the server's bucket grid: one bin per bucket of every process.
        const w = bucketWidth(common[0], common[1], n);
        lo = common[0];
        hi = common[0] + Math.ceil((common[1] - common[0] + 1) / w) * w;
        const agg = aggregateBands(bands, lo, hi, Math.ceil((hi - lo) / w));
        ls.push({ id: '__agg', label: p.aggLabel ?? `mean of ${lines.length}`, color: 'var-agg', band: agg, emphasis: true });
      } else {
        const ext = zoom ?? xExtent(bands);
        if (ext) {
          [lo, hi] = ext;
          const agg = aggregateBands(bands, lo, hi === lo ? lo + 1 : hi, n);
          ls.push({ id: '__agg', label: p.aggLabel ?? `mean of ${lines.length}`, color: 'var-agg', band: agg, emphasis: true });
        }
      }
      const aggColor = getComputedStyle(document.documentElement).getPropertyValue('--fg').trim() || '#222';
      for (const l of ls) if (l.color === 'var-agg') l.color = toHex(aggColor);
    }
    return ls;
  }, [lines, p.settings.agg, width, xMode, zoom?.[0], zoom?.[1]]);

  const points = lines?.reduce((a, l) => a + l.band.points, 0) ?? 0;
  const raw = lines?.every((l) => l.band.raw) ?? false;

  return (
    <section class="panel" ref={box} data-chart={p.title} aria-busy={loading}>
      <header class="panel-head">
        <h3 title={p.title}>{p.title}</h3>
        <span class="panel-meta">
          {lines && (raw ? `${points.toLocaleString()} raw points` : `${points.toLocaleString()} points, min/max bands`)}
        </span>
        {zoom && <button type="button" class="small" onClick={() => setZoom(null)}>Reset zoom</button>}
      </header>
      {error ? <div class="error" role="alert">{error}</div>
        : !lines ? <div class="chart-skeleton" style={{ height: (p.height ?? 220) + 'px' }}>{visible ? 'Loading…' : ''}</div>
          : !lines.length ? <div class="empty" style={{ height: (p.height ?? 220) + 'px' }}>No data in this range</div>
            : <Chart lines={chartLines} xMode={xMode} log={p.settings.log} smooth={p.settings.smooth} height={p.height}
                zoom={zoom} onZoom={setZoom} syncKey={p.syncKey} ariaLabel={`${p.title} chart`} />}
    </section>
  );
}

function stepRangeOf(sources: LineSource[]): [number, number] | null {
  let lo = Infinity, hi = -Infinity;
  for (const s of sources) {
    if (!s.stepRange) continue;
    lo = Math.min(lo, s.stepRange[0]);
    hi = Math.max(hi, s.stepRange[1]);
  }
  return lo <= hi ? [lo, hi] : null;
}

/** CSS colours (#rgb, #rrggbb, rgb()) to #rrggbb for the canvas alpha helper. */
function toHex(c: string): string {
  if (/^#[0-9a-f]{6}$/i.test(c)) return c;
  if (/^#[0-9a-f]{3}$/i.test(c)) return '#' + c.slice(1).split('').map((x) => x + x).join('');
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(c);
  if (m) return '#' + [m[1], m[2], m[3]].map((v) => Number(v).toString(16).padStart(2, '0')).join('');
  return '#222222';
}
