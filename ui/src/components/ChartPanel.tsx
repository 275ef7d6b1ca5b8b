// A chart with its data: loads when scrolled into view, asks for as many buckets as the plot
// has pixels (fewer per line when many lines share it), re-queries the visible range on zoom and
// on every live tick, and can add the aggregate across processes (min/max band + mean) over the
// individual lines. Its own log scale, smoothing, zoom and hidden lines live in the URL (`ch`),
// and it can fill the window (`full`).
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../lib/api';
import { bucketsPerLine, commonStepRange, loadLines, type LineSource, type LoadedLine } from '../lib/chartdata';
import { colorFor, fmtNum } from '../lib/format';
import { startLoad } from '../lib/load';
import { update, updateChart } from '../lib/nav';
import { aggregateBands, bucketWidth, xExtent, type Band, type LineMode, type XMode } from '../lib/series';
import type { ChartState } from '../lib/url';
import { useVisibleWidth } from '../lib/useVisibleWidth';
import { Chart, type ChartLine } from './Chart';
import { ErrorBox } from './common';

export interface ChartSettings {
  xMode: XMode;
  log: boolean;
  smooth: number;
  line: LineMode;
  agg: boolean;
}

export interface LineStyle { color: string; dash?: number[] }

export interface ChartPanelProps {
  /** The chart's id in the URL's chart state (unique on its page). */
  id: string;
  /** The chart's full name (a metric key): its `data-chart`, accessible names and tooltip. */
  title: string;
  /** The title shown, when shorter than `title` (the key without the section it is grouped
   * under); cut in the middle when too long, its end always visible. */
  label?: string;
  sources: LineSource[];
  settings: ChartSettings;
  /** This chart's own state from the URL (zoom, hidden lines, log, smoothing). */
  chart?: ChartState;
  /** True when the URL shows this chart full screen. */
  fullscreen?: boolean;
  tick?: number;
  height?: number;
  syncKey?: string;
  aggLabel?: string;
  style?: (l: LoadedLine, i: number) => LineStyle;
}

const AXIS_SPACE = 72; // y axis + padding: the plot's width in pixels is the container's minus this

export function ChartPanel(p: ChartPanelProps) {
  const box = useRef<HTMLDivElement>(null);
  const { visible, width } = useVisibleWidth(box);
  const [lines, setLines] = useState<LoadedLine[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  // Bumped by the error's Retry button: the load runs again.
  const [attempt, setAttempt] = useState(0);
  const [menu, setMenu] = useState(false);
  const previous = useRef(new Map<string, Band>());
  const { xMode, line: lineMode } = p.settings;
  const cs = p.chart ?? {};
  const zoom = cs.z ?? null;
  const log = cs.log ?? p.settings.log;
  const smooth = cs.sm ?? p.settings.smooth;
  const hidden = useMemo(() => new Set(cs.h ?? []), [(cs.h ?? []).join('\u0000')]);
  const full = !!p.fullscreen;
  const height = full ? Math.max(240, window.innerHeight - 150) : p.height ?? 220;

  // Escape leaves full screen. A layout effect: the key listener is there from the first paint of
  // the full-screen panel (an effect runs after it, and an Escape pressed in between was lost).
  useLayoutEffect(() => {
    if (!full) return;
    const onKey = (e: KeyboardEvent) => { if (e.key === 'Escape') update({ full: '' }); };
    window.addEventListener('keydown', onKey);
    box.current?.querySelector<HTMLButtonElement>('.panel-close')?.focus();
    return () => window.removeEventListener('keydown', onKey);
  }, [full]);

  const sourcesKey = JSON.stringify(p.sources.map(({ name: _n, ...s }) => s));
  const runs = new Set(p.sources.map((s) => s.run)).size;
  useEffect(() => {
    if ((!visible && !full) || width <= 0 || !p.sources.length) return;
    return startLoad((signal) => loadLines(api, p.sources, {
      buckets: bucketsPerLine(width - AXIS_SPACE, p.sources.length), xMode, lineMode, range: zoom,
      previous: previous.current, signal,
    }), (ls) => {
      previous.current = new Map(ls.map((l) => [l.id, l.band]));
      setLines(ls);
    }, setError, setLoading);
  }, [visible, full, width, sourcesKey, xMode, lineMode, zoom?.[0], zoom?.[1], p.tick, attempt]);

  const chartLines = useMemo<ChartLine[]>(() => {
    if (!lines) return [];
    const style = p.style ?? ((l: LoadedLine, i: number) => ({ color: lines.length > 1 ? colorFor(l.writer || l.label) : colorFor('', i) }));
    const agg = p.settings.agg && lines.length > 1;
    const ls: ChartLine[] = lines.map((l, i) => ({ id: l.id, label: l.label, ...style(l, i), band: l.band, noBand: agg }));
    if (agg) {
      const bands = lines.map((l) => l.band);
      const n = Math.max(10, width - AXIS_SPACE);
      const common = commonStepRange(p.sources);
      const aggColor = toHex(getComputedStyle(document.documentElement).getPropertyValue('--fg').trim() || '#222');
      const label = p.aggLabel ?? `mean of ${lines.length}`;
      if (xMode === 'step' && !zoom && common) {
        // Exactly the server's bucket grid: one bin per bucket of every process.
        const w = bucketWidth(common[0], common[1], bucketsPerLine(n, p.sources.length));
        const lo = common[0];
        const hi = common[0] + Math.ceil((common[1] - common[0] + 1) / w) * w;
        ls.push({ id: '__agg', label, color: aggColor, band: aggregateBands(bands, lo, hi, Math.ceil((hi - lo) / w)), emphasis: true });
      } else {
        const ext = zoom ?? xExtent(bands);
        if (ext) {
          const [lo, hi] = ext;
          ls.push({ id: '__agg', label, color: aggColor, band: aggregateBands(bands, lo, hi === lo ? lo + 1 : hi, n), emphasis: true });
        }
      }
    }
    return ls;
  }, [lines, p.settings.agg, width, xMode, zoom?.[0], zoom?.[1], p.style]);

  const points = lines?.reduce((a, l) => a + l.band.points, 0) ?? 0;
  const nan = lines?.reduce((a, l) => a + l.band.nan, 0) ?? 0;
  const inf = lines?.reduce((a, l) => a + l.band.inf, 0) ?? 0;
  const infExact = lines?.every((l) => l.band.infExact) ?? true;
  const infBuckets = lines?.reduce((a, l) => a + l.band.infBuckets, 0) ?? 0;
  const raw = lines?.every((l) => l.band.raw) ?? false;
  const meta = lines ? (raw ? `${points.toLocaleString()} raw points` : `${points.toLocaleString()} points, min/max bands`) : '';
  const [head, tail] = titleParts(p.label ?? p.title);
  const setChart = (patch: Partial<ChartState>, replace = false) => updateChart(p.id, patch, replace);

  return (
    <section class={`panel${full ? ' fullscreen' : ''}`} ref={box} data-chart={p.title} data-chart-id={p.id} aria-busy={loading}
      role={full ? 'dialog' : undefined} aria-modal={full ? true : undefined} aria-label={full ? `${p.title}, full screen` : undefined}>
      <header class="panel-head">
        <h3 class="panel-title" title={p.title} data-testid="panel-title">
          <span class="title-head">{head}</span>{tail && <span class="title-tail">{tail}</span>}
        </h3>
        <span class="panel-meta" data-testid="panel-meta" title={meta}>{meta}</span>
        {lines && (nan > 0 || inf > 0) && (
          <span class="nonfinite" data-testid="nonfinite" title={nonfiniteTitle(inf, infExact, infBuckets)}>
            {[nan > 0 ? `${nan.toLocaleString()} NaN` : '', inf > 0 ? infLabel(inf, infExact) : ''].filter(Boolean).join(' · ')}
          </span>
        )}
        {zoom && <button type="button" class="small" onClick={() => setChart({ z: undefined })}>Reset zoom</button>}
        <button type="button" class={`small toggle${cs.log !== undefined ? ' set' : ''}`} aria-pressed={log} title="log scale (this chart)"
          onClick={() => setChart({ log: log === p.settings.log ? !log : undefined })}>log</button>
        <span class="picker">
          <button type="button" class={`small toggle${cs.sm !== undefined ? ' set' : ''}`} aria-expanded={menu} aria-label={`smoothing of ${p.title}`}
            title="smoothing (this chart)" onClick={() => setMenu(!menu)}>{smooth > 0 ? `~${fmtNum(smooth)}` : '~'}</button>
          {menu && (
            <Popover onClose={() => setMenu(false)} label="smoothing">
              <label class="row">smoothing{' '}
                <input type="range" min="0" max="0.99" step="0.01" value={smooth} aria-label={`smoothing of ${p.title} (slider)`}
                  onInput={(e) => setChart({ sm: Number((e.target as HTMLInputElement).value) }, true)} />
                <span class="mono">{smooth.toFixed(2)}</span>
              </label>
              {cs.sm !== undefined && <button type="button" class="link" onClick={() => setChart({ sm: undefined })}>use the page's ({p.settings.smooth.toFixed(2)})</button>}
            </Popover>
          )}
        </span>
        {full
          ? <button type="button" class="small panel-close" onClick={() => update({ full: '' })} aria-label="close full screen">✕ Close</button>
          : <button type="button" class="small" onClick={() => update({ full: p.id })} aria-label={`show ${p.title} full screen`} title="full screen">⤢</button>}
      </header>
      {error ? <ErrorBox error={error} retry={() => setAttempt((n) => n + 1)} />
        : !lines ? <div class="chart-skeleton" style={{ height: height + 'px' }}>{visible ? 'Loading…' : ''}</div>
          : !lines.length ? <div class="empty" style={{ height: height + 'px' }}>No data in this range</div>
            : <Chart lines={chartLines} xMode={xMode} log={log} smooth={smooth} height={height}
                zoom={zoom} onZoom={(z) => setChart({ z: z ?? undefined })} syncKey={full ? undefined : p.syncKey}
                ariaLabel={`${p.title} chart`} hidden={hidden}
                onHidden={(h) => setChart({ h: [...h] })} legendMax={full ? 40 : runs > 1 ? 6 : 8} />}
    </section>
  );
}

/** Characters of a long title always shown at its end (the part that tells keys apart). */
export const TITLE_TAIL = 18;

/**
 * A title split for an ellipsis in the middle: the head (cut with "…" by CSS when the title does
 * not fit) and the tail (its last TITLE_TAIL characters, kept whole); a short title is all head.
 */
export function titleParts(text: string, tail = TITLE_TAIL): [string, string] {
  const chars = [...text];
  if (chars.length <= tail + 6) return [text, ''];
  return [chars.slice(0, chars.length - tail).join(''), chars.slice(chars.length - tail).join('')];
}

/** A key's title in the section it is grouped under: without the section's prefix
 * (`train/loss` under "train": `loss`); the key itself when it is not in that section. */
export function titleInSection(key: string, section: string): string {
  return section && key.startsWith(section + '/') && key.length > section.length + 1 ? key.slice(section.length + 1) : key;
}

/** The ±Inf badge: the count of infinite points, "≥N" when buckets hide how many there are. */
export function infLabel(inf: number, exact: boolean): string {
  return `${exact ? '' : '≥'}${inf.toLocaleString()} ±Inf`;
}

/** The NaN/±Inf badge's tooltip: what the counts are, and why an infinite count is a bound. */
export function nonfiniteTitle(inf: number, exact: boolean, buckets: number): string {
  const base = 'points that are not numbers or infinite: drawn as gaps';
  if (!inf || exact) return base;
  return `${base}. Infinite values in ${buckets.toLocaleString()} bucket${buckets === 1 ? '' : 's'}: a bucket tells that it holds `
    + `infinities, not how many, so at least ${inf.toLocaleString()} point${inf === 1 ? ' is' : 's are'} infinite `
    + '(zoom in for the raw points and their exact count)';
}

/** A small panel that closes on Escape and on a click outside it. */
export function Popover({ onClose, label, children, class: cls }: { onClose: () => void; label: string; children: preact.ComponentChildren; class?: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const close = useRef(onClose);
  close.current = onClose;
  // Listeners added in a layout effect, once: they are there from the popover's first paint (an
  // effect runs after it, so an Escape or a click pressed right after opening was lost: a CI flake
  // under load), and a new onClose on each render of the parent does not re-add them.
  useLayoutEffect(() => {
    const onDown = (e: MouseEvent) => {
      const el = ref.current;
      // A click on the button that opened it toggles it itself.
      if (el && !el.contains(e.target as Node) && !el.parentElement?.contains(e.target as Node)) close.current();
    };
    const onKey = (e: KeyboardEvent) => { if (e.key === 'Escape') { e.stopPropagation(); close.current(); } };
    document.addEventListener('mousedown', onDown, true);
    document.addEventListener('keydown', onKey, true);
    return () => { document.removeEventListener('mousedown', onDown, true); document.removeEventListener('keydown', onKey, true); };
  }, []);
  return <div ref={ref} class={`popover${cls ? ' ' + cls : ''}`} role="dialog" aria-label={label}>{children}</div>;
}

/** CSS colours (#rgb, #rrggbb, rgb()) to #rrggbb for the canvas alpha helper. */
function toHex(c: string): string {
  if (/^#[0-9a-f]{6}$/i.test(c)) return c;
  if (/^#[0-9a-f]{3}$/i.test(c)) return '#' + c.slice(1).split('').map((x) => x + x).join('');
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(c);
  if (m) return '#' + [m[1], m[2], m[3]].map((v) => Number(v).toString(16).padStart(2, '0')).join('');
  return '#222222';
}
