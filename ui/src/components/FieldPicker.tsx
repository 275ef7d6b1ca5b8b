// Shared by the comparison panels (ParallelCoords, Scatter): a searchable list of the runs'
// config and summary fields, a canvas sized to its box and the device's pixels, and the colour
// legend (a ramp for a number, swatches for categories).
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { fieldLabel, fmtTick, ramp, type ColorScale, type Field } from '../lib/compare';
import { Popover } from './ChartPanel';

const KIND_WORD = { num: 'number', cat: 'category', bool: 'boolean' } as const;

/** A button that opens a searchable list of `fields`; picking one calls `onPick` (and closes). */
export function FieldPicker({ fields, label, text, onPick, exclude = [], allowNone = false }: {
  fields: Field[]; label: string; text: preact.ComponentChildren; onPick: (key: string) => void;
  exclude?: string[]; allowNone?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const [q, setQ] = useState('');
  const ql = q.trim().toLowerCase();
  const shown = fields.filter((f) => !exclude.includes(f.key) && (!ql || f.key.toLowerCase().includes(ql)));
  const pick = (k: string) => { setOpen(false); setQ(''); onPick(k); };
  return (
    <span class="picker">
      <button type="button" class="small" aria-expanded={open} aria-label={label} onClick={() => setOpen(!open)}>{text}</button>
      {open && (
        <Popover onClose={() => setOpen(false)} label={label} class="field-picker">
          <input type="search" placeholder="search fields" aria-label={`search fields: ${label}`} value={q} autoFocus
            onInput={(e) => setQ((e.target as HTMLInputElement).value)}
            onKeyDown={(e) => { if (e.key === 'Enter' && shown.length) { e.preventDefault(); pick(shown[0].key); } }} />
          <ul class="field-list" role="listbox" aria-label={label}>
            {allowNone && !ql && <li><button type="button" role="option" class="link" onClick={() => pick('')}>(none)</button></li>}
            {shown.slice(0, 300).map((f) => (
              <li key={f.key}>
                <button type="button" role="option" class="link" data-field={f.key} onClick={() => pick(f.key)}>
                  <span class={`field-src ${f.key.startsWith('config.') ? 'cfg' : 'sum'}`}>{f.key.startsWith('config.') ? 'config' : 'summary'}</span>
                  {' '}{fieldLabel(f.key)} <span class="muted small">{KIND_WORD[f.kind]} · {f.runs.toLocaleString()} runs</span>
                </button>
              </li>
            ))}
            {!shown.length && <li class="muted small">No field matches.</li>}
            {shown.length > 300 && <li class="muted small">{shown.length - 300} more: refine the search</li>}
          </ul>
        </Popover>
      )}
    </span>
  );
}

/** A canvas as wide as its parent, `height` CSS pixels tall, at the device's pixel ratio; `draw`
 * runs with a 2D context in CSS pixels whenever `deps` or the width change. */
export function useCanvas(height: number, draw: (ctx: CanvasRenderingContext2D, width: number, height: number) => void, deps: unknown[]) {
  const ref = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(0);
  useLayoutEffect(() => {
    const el = ref.current?.parentElement;
    if (!el) return;
    setWidth(el.clientWidth);
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  useLayoutEffect(() => {
    const c = ref.current;
    if (!c || width <= 0) return;
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(width * dpr) || c.height !== Math.round(height * dpr)) {
      c.width = Math.round(width * dpr);
      c.height = Math.round(height * dpr);
    }
    c.style.width = width + 'px';
    c.style.height = height + 'px';
    const ctx = c.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    draw(ctx, width, height);
  }, [width, height, ...deps]);
  return { ref, width };
}

type Theme = { fg: string; muted: string; border: string; panel: string };
let themeCache: { dark: boolean; theme: Theme } | null = null;

/** The canvas's text and line colours from the page's CSS (light or dark), read once per colour
 * scheme: getComputedStyle on every draw forced a style recalculation of the whole page. */
export function themeColors(el: Element | null): Theme {
  const dark = typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches;
  if (themeCache && themeCache.dark === dark) return themeCache.theme;
  const cs = el ? getComputedStyle(el) : null;
  const v = (name: string, dflt: string) => cs?.getPropertyValue(name).trim() || dflt;
  const theme = { fg: v('--fg', '#1d2129'), muted: v('--muted', '#6b7280'), border: v('--border', '#dfe3ea'), panel: v('--panel', '#ffffff') };
  if (el) themeCache = { dark, theme };
  return theme;
}

/** The legend of a colour scale: a ramp between the field's min and max, or category swatches. */
/** A panel's "runs" switch: all the runs of the filter ('') or only the visible ones. */
export function ScopeSelect({ label, value, onChange }: {
  label: string; value: '' | 'visible'; onChange: (scope: '' | 'visible') => void;
}) {
  return (
    <label class="small">runs{' '}
      <select aria-label={label} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value as '' | 'visible')}>
        <option value="">of the filter</option>
        <option value="visible">visible (eye on)</option>
      </select>
    </label>
  );
}

export function ColorLegend({ scale, testid }: { scale: ColorScale | null; testid: string }) {
  if (!scale) return null;
  const name = fieldLabel(scale.key);
  if (scale.kind === 'num' && scale.range) {
    const stops = Array.from({ length: 9 }, (_, i) => ramp(i / 8)).join(', ');
    return (
      <span class="color-legend" data-testid={testid}>
        <span class="muted small">{name}{scale.log ? ' (log)' : ''}</span>
        <span class="small" data-testid={`${testid}-min`}>{fmtTick(scale.range[0])}</span>
        <span class="color-ramp" style={{ background: `linear-gradient(to right, ${stops})` }} />
        <span class="small" data-testid={`${testid}-max`}>{fmtTick(scale.range[1])}</span>
      </span>
    );
  }
  return (
    <span class="color-legend" data-testid={testid}>
      <span class="muted small">{name}</span>
      {(scale.legend ?? []).map((l) => (
        <span key={l.label} class="legend-item small"><span class="swatch" style={{ background: l.color }} />{l.label}</span>
      ))}
      {scale.colors.length > (scale.legend?.length ?? 0) && <span class="muted small">+{scale.colors.length - (scale.legend?.length ?? 0)} more (grey)</span>}
    </span>
  );
}
