// The workspace's comparison panels (parallel coordinates and scatter) without the drawing: the
// config and summary fields the runs have and their type, axis scales (numeric, log, categorical,
// boolean), brushes and the runs inside them, colour scales, and the panels' state in the URL.
// Pure functions: unit-tested in compare.test.ts.

import type { Run } from './filters';
import { fmtNum, naturalCompare, PALETTE, valueAt } from './format';

/** A field's type: numbers, categories (strings, or a mix), booleans. */
export type FieldKind = 'num' | 'cat' | 'bool';

/** A field: `config.<dotted key>` or `summary.<key>`, its type and how many runs have it. */
export interface Field { key: string; kind: FieldKind; runs: number }

/** A scalar value of a field, or undefined (missing, null, an object, a non-finite number, also
 * when spelled as a string). */
export type Scalar = number | string | boolean;

function scalar(v: unknown): Scalar | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string') return NON_FINITE.has(v) ? undefined : v;
  if (typeof v === 'boolean') return v;
  return undefined;
}

/** How the server spells a non-finite summary value: no value on an axis. */
const NON_FINITE = new Set(['NaN', 'Infinity', '-Infinity']);

/** A reader of the field `config.a.b` (nested, or a key with a dot in it) or `summary.<key>`:
 * the key parsed once, for the loops over 10,000 runs. */
export function getter(key: string): (run: Run) => Scalar | undefined {
  for (const [prefix, doc] of [['config.', (r: Run) => r.config], ['summary.', (r: Run) => r.summary]] as const) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length), path = rest.split('.');
    return (run) => scalar(valueAt(doc(run) as Record<string, unknown> | undefined, rest, path));
  }
  return () => undefined;
}

/** The value of a field of a run (see getter). */
export function fieldValue(run: Run, key: string): Scalar | undefined {
  return getter(key)(run);
}

/** A field's label: its key without `config.` / `summary.`. */
export function fieldLabel(key: string): string {
  return key.startsWith('config.') ? key.slice(7) : key.startsWith('summary.') ? key.slice(8) : key;
}

function kindOfValues(seen: { num: number; str: number; bool: number }): FieldKind {
  if (seen.str || (seen.num && seen.bool)) return 'cat';
  if (seen.bool) return 'bool';
  return 'num';
}

/** The scalar config (flattened) and summary fields of the runs (the first `limit` of them),
 * config first, each in natural order. */
export function fieldsOf(runs: Run[], limit = 1000): Field[] {
  const stats = new Map<string, { num: number; str: number; bool: number; runs: number }>();
  const add = (key: string, v: unknown) => {
    const s = scalar(v);
    if (s === undefined) return;
    let e = stats.get(key);
    if (!e) { e = { num: 0, str: 0, bool: 0, runs: 0 }; stats.set(key, e); }
    e.runs++;
    if (typeof s === 'number') e.num++; else if (typeof s === 'string') e.str++; else e.bool++;
  };
  const walk = (o: unknown, prefix: string) => {
    if (o && typeof o === 'object' && !Array.isArray(o)) {
      for (const k in o as Record<string, unknown>) walk((o as Record<string, unknown>)[k], `${prefix}.${k}`);
      return;
    }
    if (prefix !== 'config') add(prefix, o);
  };
  for (let i = 0; i < runs.length && i < limit; i++) {
    walk(runs[i].config ?? {}, 'config');
    const s = runs[i].summary ?? {};
    for (const k in s) add('summary.' + k, s[k]);
  }
  return [...stats.entries()].map(([key, e]) => ({ key, kind: kindOfValues(e), runs: e.runs }))
    .sort((a, b) => (a.key.startsWith('config.') === b.key.startsWith('config.') ? naturalCompare(a.key, b.key) : a.key.startsWith('config.') ? -1 : 1));
}

/** The type of one field over all the runs (a field named by a link may not be in fieldsOf's
 * sample). */
export function kindOf(runs: Run[], key: string): FieldKind {
  const seen = { num: 0, str: 0, bool: 0 };
  const get = getter(key);
  for (const r of runs) {
    const v = get(r);
    if (typeof v === 'number') seen.num++; else if (typeof v === 'string') seen.str++; else if (typeof v === 'boolean') seen.bool++;
  }
  return kindOfValues(seen);
}

/** A category's label: strings as they are, numbers and booleans as text. */
export function catKey(v: Scalar): string {
  return typeof v === 'string' ? v : typeof v === 'boolean' ? (v ? 'true' : 'false') : fmtNum(v);
}

// ---- axes ------------------------------------------------------------------------------------

export interface Tick { at: number; label: string }

/** A number for a tick or a brush: fmtNum, with short exponents (1e-4, 2.5e-7, 1.2e6). */
export function fmtTick(v: number): string {
  const a = Math.abs(v);
  if (a !== 0 && Number.isFinite(v) && (a < 1e-3 || a >= 1e6)) return Number(v.toPrecision(4)).toExponential().replace('e+', 'e');
  return fmtNum(v);
}

/** An axis: `pos` maps a value to 0 (bottom/left) .. 1 (top/right), or null when the run has
 * none on this axis; `invert` maps a position back to a value (numeric axes). */
export interface Axis {
  key: string;
  kind: FieldKind;
  /** The field's value of a run. */
  value: (run: Run) => Scalar | undefined;
  log: boolean;
  /** Numeric: the values' range (a single value widened). */
  domain: [number, number];
  /** Categorical and boolean: the categories in order (bottom to top). */
  cats: string[];
  pos(v: Scalar | undefined): number | null;
  invert(u: number): number;
  ticks: Tick[];
}

/** 1, 2, 5 x 10^k ticks within [lo, hi], about `n` of them. */
export function niceTicks(lo: number, hi: number, n = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  const out: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : Number(t.toPrecision(12)));
  return out;
}

/** A log axis when every value is positive and they span at least two decades. */
export const LOG_RATIO = 100;

export function makeAxis(key: string, runs: Run[], kind: FieldKind = kindOf(runs, key)): Axis {
  const value = getter(key);
  if (kind === 'num') {
    let lo = Infinity, hi = -Infinity;
    for (const r of runs) {
      const v = value(r);
      if (typeof v === 'number') { if (v < lo) lo = v; if (v > hi) hi = v; }
    }
    if (lo === Infinity) { lo = 0; hi = 1; }
    const log = lo > 0 && hi / lo >= LOG_RATIO;
    if (lo === hi) { const d = Math.abs(lo) * 0.1 || 0.5; lo -= d; hi += d; }
    const f = log ? Math.log10 : (x: number) => x;
    const a = f(lo), b = f(hi);
    const pos = (v: Scalar | undefined) => (typeof v === 'number' && (!log || v > 0) ? (f(v) - a) / (b - a) : null);
    const invert = (u: number) => { const x = a + u * (b - a); return log ? 10 ** x : x; };
    let ticks: Tick[];
    if (log) {
      const ts: number[] = [];
      for (let e = Math.ceil(a - 1e-9); e <= b + 1e-9; e++) ts.push(10 ** e);
      ticks = (ts.length >= 2 ? ts : [lo, hi]).map((t) => ({ at: pos(t)!, label: fmtTick(t) }));
    } else {
      ticks = niceTicks(lo, hi).map((t) => ({ at: pos(t)!, label: fmtTick(t) }));
    }
    return { key, kind, value, log, domain: [lo, hi], cats: [], pos, invert, ticks };
  }
  let cats: string[];
  if (kind === 'bool') cats = ['false', 'true'];
  else {
    const set = new Set<string>();
    for (const r of runs) { const v = value(r); if (v !== undefined) set.add(catKey(v)); }
    cats = [...set].sort(naturalCompare);
  }
  const index = new Map(cats.map((c, i) => [c, i]));
  const n = cats.length || 1;
  const pos = (v: Scalar | undefined) => {
    if (v === undefined) return null;
    const i = index.get(catKey(v));
    return i === undefined ? null : (i + 0.5) / n;
  };
  return {
    key, kind, value, log: false, domain: [0, 1], cats, pos, invert: (u) => u,
    ticks: cats.length <= 40 ? cats.map((c, i) => ({ at: (i + 0.5) / n, label: c })) : [],
  };
}

// ---- brushes -----------------------------------------------------------------------------------

/** A brush on an axis: a value range [lo, hi] (numeric axes) or the categories it covers. */
export type Brush = [number, number] | string[];

export function isRange(b: Brush): b is [number, number] {
  return b.length === 2 && typeof b[0] === 'number';
}

/** `x` to six significant digits, rounded down (dir -1) or up (dir 1); `x` itself when that
 * cannot be done exactly. */
function roundOut(x: number, dir: -1 | 1): number {
  const p = Number(x.toPrecision(6));
  if (!Number.isFinite(x) || x === 0 || (dir < 0 ? p <= x : p >= x)) return p;
  const unit = Math.pow(10, Math.floor(Math.log10(Math.abs(x))) - 5);
  const q = Number((p + dir * unit).toPrecision(6));
  return (dir < 0 ? q <= x : q >= x) ? q : x;
}

/** The brush that positions u0..u1 (either order) of `axis` cover; null when it covers no
 * category. */
export function brushFromUnits(axis: Axis, u0: number, u1: number): Brush | null {
  const lo = Math.max(0, Math.min(u0, u1)), hi = Math.min(1, Math.max(u0, u1));
  if (axis.kind === 'num') {
    // Six significant digits (short URLs), rounded outwards so that a brush dragged to an end
    // of the axis keeps the run at that end.
    return [roundOut(axis.invert(lo), -1), roundOut(axis.invert(hi), 1)];
  }
  const n = axis.cats.length;
  const cats = axis.cats.filter((_, i) => { const u = (i + 0.5) / n; return u >= lo && u <= hi; });
  return cats.length ? cats : null;
}

/** The positions (0..1, low first) a brush covers on `axis`; null when it covers nothing there. */
export function brushUnits(axis: Axis, b: Brush): [number, number] | null {
  if (isRange(b)) {
    if (axis.kind !== 'num') return null;
    const clamp = (u: number) => Math.max(0, Math.min(1, u));
    const lo = axis.log ? Math.max(b[0], Number.MIN_VALUE) : b[0];
    return [clamp(axis.pos(lo) ?? 0), clamp(axis.pos(b[1]) ?? 1)];
  }
  const n = axis.cats.length;
  const at = (b as string[]).map((c) => axis.cats.indexOf(c)).filter((i) => i >= 0);
  if (!at.length || !n) return null;
  return [Math.min(...at) / n, (Math.max(...at) + 1) / n];
}

/** Whether a value is inside a brush (a run without the field never is). */
export function inBrush(v: Scalar | undefined, b: Brush): boolean {
  if (v === undefined) return false;
  if (isRange(b)) return typeof v === 'number' && v >= b[0] && v <= b[1];
  return (b as string[]).includes(catKey(v));
}

/** The runs inside every brush (all of `runs`, the same array, when there is none). */
export function applyBrushes(runs: Run[], brushes: Record<string, Brush> | undefined): Run[] {
  const list = Object.entries(brushes ?? {}).map(([k, b]) => [getter(k), b] as const);
  if (!list.length) return runs;
  return runs.filter((r) => list.every(([get, b]) => inBrush(get(r), b)));
}

/** A brush in words: `0.001 – 0.01`, `adam | sgd`. */
export function describeBrush(b: Brush): string {
  return isRange(b) ? `${fmtTick(b[0])} – ${fmtTick(b[1])}` : (b as string[]).join(' | ');
}

// ---- colour ------------------------------------------------------------------------------------

/** Viridis, 9 stops (low: dark purple, high: yellow). */
const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725'];
/** Numeric colours come in this many bins (one canvas path per bin). */
export const COLOR_BINS = 32;

function hexToRgb(h: string): [number, number, number] {
  return [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
}

/** The colour at t (0..1) of the viridis ramp, as #rrggbb. */
export function ramp(t: number): string {
  const x = Math.max(0, Math.min(1, t)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const a = hexToRgb(VIRIDIS[i]), b = hexToRgb(VIRIDIS[i + 1]);
  return '#' + a.map((c, k) => Math.round(c + (b[k] - c) * f).toString(16).padStart(2, '0')).join('');
}

/** Colours of runs by a field: `bin` is the colour index of a run (-1: no value, drawn grey),
 * `colors` the bins' colours; a numeric field has a ramp (min/max), a categorical one a legend. */
export interface ColorScale {
  key: string;
  kind: FieldKind;
  colors: string[];
  bin(run: Run): number;
  /** Numeric: the range and whether it is logarithmic. */
  range?: [number, number];
  log?: boolean;
  /** Categorical: each category and its colour (the first 20, then grey). */
  legend?: { label: string; color: string }[];
}

export const NO_COLOR = '#9aa3b2';

export function makeColorScale(key: string, runs: Run[]): ColorScale | null {
  if (!key) return null;
  const axis = makeAxis(key, runs);
  if (axis.kind === 'num') {
    const colors = Array.from({ length: COLOR_BINS }, (_, i) => ramp(i / (COLOR_BINS - 1)));
    return {
      key, kind: 'num', colors, range: axis.domain, log: axis.log,
      bin: (r) => { const u = axis.pos(axis.value(r)); return u === null ? -1 : Math.min(COLOR_BINS - 1, Math.floor(u * COLOR_BINS)); },
    };
  }
  const colors = axis.cats.map((_, i) => (i < PALETTE.length ? PALETTE[i] : NO_COLOR));
  const index = new Map(axis.cats.map((c, i) => [c, i]));
  return {
    key, kind: axis.kind, colors, legend: axis.cats.slice(0, PALETTE.length).map((c, i) => ({ label: c, color: colors[i] })),
    bin: (r) => { const v = axis.value(r); return v === undefined ? -1 : index.get(catKey(v)) ?? -1; },
  };
}

// ---- the panels' state in the URL ---------------------------------------------------------------

/** Parallel coordinates: its axes (fields), colour field, brushes per axis, and which runs it
 * shows ('' the filter's, 'visible' the filter's less the hidden ones). */
export interface ParCoordsState { axes: string[]; color: string; brushes: Record<string, Brush>; scope: '' | 'visible' }
/** Scatter: x, y and colour fields. */
export interface ScatterState { x: string; y: string; color: string; scope: '' | 'visible' }
/** The workspace's comparison panels; a panel that is absent is closed. */
export interface CompareState { pc?: ParCoordsState; sc?: ScatterState }

const str = (v: unknown) => (typeof v === 'string' ? v : '');
const isField = (v: unknown): v is string => typeof v === 'string' && (v.startsWith('config.') || v.startsWith('summary.'));

function parse(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch { return {}; }
}

function decodeBrush(v: unknown): Brush | null {
  if (!Array.isArray(v) || !v.length) return null;
  if (v.length === 2 && v.every((x) => typeof x === 'number' && Number.isFinite(x))) return v[0] <= v[1] ? [v[0], v[1]] : [v[1], v[0]];
  if (v.every((x) => typeof x === 'string')) return [...v] as string[];
  return null;
}

/**
 * `pc`: {"a": [axes], "c": "colour field", "b": {"field": [lo, hi] | ["cat", ...]}, "s": "visible"};
 * `sc`: {"x": "field", "y": "field", "c": "field", "s": "visible"}. A parameter present opens its
 * panel; what does not parse (a hand-edited link) is left out, and a brush is kept only on an axis.
 */
export function decodeCompare(pc: string | null, sc: string | null): CompareState {
  const out: CompareState = {};
  const p = parse(pc);
  if (p) {
    const axes = Array.isArray(p.a) ? [...new Set(p.a.filter(isField))] : [];
    const brushes: Record<string, Brush> = {};
    if (p.b && typeof p.b === 'object' && !Array.isArray(p.b)) {
      for (const [k, v] of Object.entries(p.b as Record<string, unknown>)) {
        const b = decodeBrush(v);
        if (b && axes.includes(k)) brushes[k] = b;
      }
    }
    out.pc = { axes, color: isField(p.c) ? p.c : '', brushes, scope: p.s === 'visible' ? 'visible' : '' };
  }
  const s = parse(sc);
  if (s) {
    out.sc = { x: isField(s.x) ? str(s.x) : '', y: isField(s.y) ? str(s.y) : '', color: isField(s.c) ? str(s.c) : '', scope: s.s === 'visible' ? 'visible' : '' };
  }
  return out;
}

/** The URL parameters of the open panels (only what is set). */
export function encodeCompare(c: CompareState): { pc?: string; sc?: string } {
  const out: { pc?: string; sc?: string } = {};
  if (c.pc) {
    const o: Record<string, unknown> = { a: c.pc.axes };
    if (c.pc.color) o.c = c.pc.color;
    const b = Object.fromEntries(Object.entries(c.pc.brushes).filter(([k]) => c.pc!.axes.includes(k)));
    if (Object.keys(b).length) o.b = b;
    if (c.pc.scope) o.s = c.pc.scope;
    out.pc = JSON.stringify(o);
  }
  if (c.sc) {
    const o: Record<string, unknown> = {};
    if (c.sc.x) o.x = c.sc.x;
    if (c.sc.y) o.y = c.sc.y;
    if (c.sc.color) o.c = c.sc.color;
    if (c.sc.scope) o.s = c.sc.scope;
    out.sc = JSON.stringify(o);
  }
  return out;
}

export function cloneCompare(c: CompareState): CompareState {
  const out: CompareState = {};
  if (c.pc) {
    out.pc = { ...c.pc, axes: [...c.pc.axes], brushes: Object.fromEntries(Object.entries(c.pc.brushes).map(([k, b]) => [k, [...b] as Brush])) };
  }
  if (c.sc) out.sc = { ...c.sc };
  return out;
}

/** The axes a new parallel-coordinates panel starts with: the config fields that vary (fewest
 * distinct values first, at most `max`), then the colour field. */
export function defaultAxes(runs: Run[], fields: Field[], color: string, max = 5): string[] {
  const distinct = new Map<string, Set<string>>();
  const sample = runs.slice(0, 2000);
  for (const f of fields) {
    if (!f.key.startsWith('config.')) continue;
    const s = new Set<string>();
    for (const r of sample) { const v = fieldValue(r, f.key); if (v !== undefined) s.add(catKey(v)); if (s.size > 50) break; }
    distinct.set(f.key, s);
  }
  const varying = [...distinct.entries()].filter(([k, s]) => s.size > 1 && !/(^|[._])(seed|rank|id|uuid|name|path|dir)$/i.test(k))
    .sort((a, b) => a[1].size - b[1].size || naturalCompare(a[0], b[0])).slice(0, max).map(([k]) => k);
  return color && !varying.includes(color) ? [...varying, color] : varying;
}

/** The colour field a new panel starts with: a summary number that looks like the main metric. */
export function defaultColor(fields: Field[]): string {
  const nums = fields.filter((f) => f.key.startsWith('summary.') && f.kind === 'num' && !/(^|[/_.])(_step|step|runtime|timestamp|lr)$/.test(f.key));
  return (nums.find((f) => /loss|acc|score|reward|error/i.test(f.key)) ?? nums[0])?.key ?? '';
}
