// Histogram data (docs/api.md "Histograms"): the server's steps (bins and counts, neighbouring
// steps merged into buckets) turned into what the Histograms tab draws -- TensorBoard-style
// distribution bands (percentiles computed from the bins) and a steps x bins heatmap of counts
// on a common value grid. Pure functions, no DOM: unit-tested in histograms.test.ts.
import type { ApiNumber } from './series';

/** One step (or bucket of merged steps) as the server answers it. */
export interface ApiHistStep {
  step: number;
  /** Present when steps were merged (`merged` > 1): the bucket's last step. */
  last_step?: number;
  merged?: number;
  exact?: boolean;
  time_ms: number;
  /** Uniform bins over [lo, hi] ... */
  lo?: ApiNumber;
  hi?: ApiNumber;
  /** ... or explicit edges (`counts.length + 1`). */
  edges?: ApiNumber[];
  counts: ApiNumber[];
}

export interface ApiHistogram {
  run?: string; key: string; writer: string; count: number; steps: ApiHistStep[];
  /** The explicit edges every step shares, sent once (steps then carry neither edges nor lo/hi). */
  edges?: ApiNumber[];
}

/** Gives each step of `h` the series' shared edges when the server sent them once. */
export function withSharedEdges(h: ApiHistogram): ApiHistogram {
  if (!h.edges) return h;
  const edges = h.edges;
  return { ...h, steps: h.steps.map((s) => (s.edges || s.lo !== undefined ? s : { ...s, edges })) };
}

/** The percentiles drawn, as TensorBoard's distributions do (the normal distribution's
 * -inf, -1.5, -1, -0.5, 0, 0.5, 1, 1.5 and +inf sigma points): min, 7%, 16%, 31%, median, 69%,
 * 84%, 93%, max. */
export const PERCENTILES = [0, 0.0668, 0.1587, 0.3085, 0.5, 0.6915, 0.8413, 0.9332, 1];
export const PERCENTILE_LABELS = ['min', '7%', '16%', '31%', 'median', '69%', '84%', '93%', 'max'];

/** A step's bins, validated: ascending edges (`counts.length + 1`) and finite counts >= 0;
 * null when the step cannot be read (a value that is not a number is never taken as 0). */
export interface Bins { edges: number[]; counts: number[]; total: number }

export function binsOf(s: ApiHistStep): Bins | null {
  const n = s.counts?.length ?? 0;
  if (!n) return null;
  const counts: number[] = new Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const c = s.counts[i];
    if (typeof c !== 'number' || !Number.isFinite(c) || c < 0) return null;
    counts[i] = c;
    total += c;
  }
  let edges: number[];
  if (s.edges) {
    if (s.edges.length !== n + 1) return null;
    edges = new Array(n + 1);
    for (let i = 0; i <= n; i++) {
      const e = s.edges[i];
      if (typeof e !== 'number' || !Number.isFinite(e) || (i > 0 && e < edges[i - 1])) return null;
      edges[i] = e;
    }
  } else {
    const lo = s.lo, hi = s.hi;
    if (typeof lo !== 'number' || typeof hi !== 'number' || !Number.isFinite(lo) || !Number.isFinite(hi) || hi < lo) return null;
    edges = new Array(n + 1);
    for (let i = 0; i < n; i++) edges[i] = lo + ((hi - lo) * i) / n;
    edges[n] = hi;
  }
  return { edges, counts, total };
}

/**
 * Percentiles (0..1) of the values a histogram counts, interpolated linearly inside the bin that
 * holds them (values spread evenly over a bin). 0 is the lower edge of the first non-empty bin,
 * 1 the upper edge of the last one. null for every percentile when the histogram counts nothing
 * (e.g. every value was NaN and left out): there is nothing to draw, not a 0.
 */
export function percentiles(b: Bins, ps: number[] = PERCENTILES): (number | null)[] {
  const { edges, counts, total } = b;
  if (!(total > 0)) return ps.map(() => null);
  let first = 0;
  while (counts[first] <= 0) first++;
  let last = counts.length - 1;
  while (counts[last] <= 0) last--;
  return ps.map((p) => {
    if (p <= 0) return edges[first];
    if (p >= 1) return edges[last + 1];
    const target = p * total;
    let cum = 0;
    for (let i = first; i <= last; i++) {
      const c = counts[i];
      if (c > 0 && cum + c >= target) {
        const f = (target - cum) / c;
        return edges[i] + f * (edges[i + 1] - edges[i]);
      }
      cum += c;
    }
    return edges[last + 1];
  });
}

/** The fraction (0..1) of the counted values below `v` (values spread evenly over their bin);
 * null when the histogram counts nothing. */
export function fractionBelow(b: Bins, v: number): number | null {
  if (!(b.total > 0) || !Number.isFinite(v)) return null;
  let below = 0;
  for (let i = 0; i < b.counts.length; i++) {
    const a = b.edges[i], e = b.edges[i + 1], c = b.counts[i];
    if (v >= e) below += c;
    else if (v > a) below += (c * (v - a)) / (e - a);
  }
  return Math.max(0, Math.min(1, below / b.total));
}

/** One drawn column: a step (or a bucket of merged steps) with its percentiles. */
export interface HistPoint {
  /** x on the step axis: the bucket's last step (as the history charts place a bucket). */
  x: number;
  step: number;
  lastStep: number;
  merged: number;
  exact: boolean;
  timeMs: number;
  bins: Bins | null;
  /** PERCENTILES' values, null (a gap) where the step counts no value. */
  q: (number | null)[];
  total: number;
}

export interface Distribution {
  key: string;
  writer: string;
  points: HistPoint[];
  /** Steps in the range (before merging). */
  steps: number;
  /** Columns that count nothing or could not be read: gaps. */
  empty: number;
  /** Every column is one step (nothing merged). */
  raw: boolean;
  /** Some columns were re-binned approximately by the server (`exact: false`). */
  approx: boolean;
}

export function distribution(h: ApiHistogram): Distribution {
  const points: HistPoint[] = (h.steps ?? []).map((s) => {
    const bins = binsOf(s);
    const q = bins ? percentiles(bins) : PERCENTILES.map(() => null);
    const lastStep = s.last_step ?? s.step;
    return {
      x: lastStep, step: s.step, lastStep, merged: s.merged ?? 1, exact: s.exact ?? true, timeMs: s.time_ms,
      bins, q, total: bins?.total ?? 0,
    };
  });
  points.sort((a, b) => a.x - b.x || a.step - b.step);
  return {
    key: h.key, writer: h.writer, points, steps: h.count ?? points.length,
    empty: points.filter((p) => p.q[0] === null).length,
    raw: points.every((p) => p.merged <= 1),
    approx: points.some((p) => !p.exact),
  };
}

/** The value range the drawn columns cover (min of mins, max of maxes); null without data.
 * A single value (every value equal) gets a small range around it. */
export function valueExtent(points: HistPoint[]): [number, number] | null {
  let lo = Infinity, hi = -Infinity;
  for (const p of points) {
    const a = p.q[0], b = p.q[p.q.length - 1];
    if (a !== null && a < lo) lo = a;
    if (b !== null && b > hi) hi = b;
  }
  if (!(lo <= hi)) return null;
  if (lo === hi) { const d = Math.abs(lo) * 0.05 || 0.5; return [lo - d, hi + d]; }
  return [lo, hi];
}

/** The x range drawn: from the first to the last column, widened by half a column on each side
 * for the heatmap (and around a single step, which has no width of its own). */
export function xExtent(points: HistPoint[], widen: boolean): [number, number] | null {
  if (!points.length) return null;
  const a = points[0].x, b = points[points.length - 1].x;
  if (points.length === 1) return [a - 1, b + 1];
  if (!widen) return [a, b];
  const [l0] = columnSpan(points, 0);
  const [, r1] = columnSpan(points, points.length - 1);
  return [l0, r1];
}

/** Column i's x span in the heatmap: halfway to its neighbours (half its neighbour's distance
 * at the ends; one step either side of a lone column). */
export function columnSpan(points: HistPoint[], i: number): [number, number] {
  const n = points.length;
  const x = points[i].x;
  if (n === 1) return [x - 1, x + 1];
  const left = i > 0 ? (points[i - 1].x + x) / 2 : x - (points[1].x - x) / 2;
  const right = i < n - 1 ? (x + points[i + 1].x) / 2 : x + (x - points[n - 2].x) / 2;
  return [left, right];
}

/** Index of the column nearest x (columns sorted by x); null when there are none. */
export function nearestPoint(points: HistPoint[], x: number): number | null {
  if (!points.length) return null;
  let lo = 0, hi = points.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid].x < x) lo = mid + 1; else hi = mid;
  }
  if (lo > 0 && Math.abs(points[lo - 1].x - x) <= Math.abs(points[lo].x - x)) return lo - 1;
  return lo;
}

/** The steps x bins heatmap: every column's counts spread onto one value grid of `rows` equal
 * bins over [lo, hi] (a bin's count shared between the grid bins it overlaps, in proportion; a
 * bin of zero width counts where its value is). `cells[column][row]`, row 0 at `lo`. A column
 * that counts nothing is `null` (nothing drawn there, not zeros). */
export interface Heatmap {
  lo: number;
  hi: number;
  rows: number;
  cells: (Float64Array | null)[];
  /** The largest cell (for the colour scale); 0 when there is nothing. */
  max: number;
}

export function heatmap(points: HistPoint[], rows: number, range: [number, number] | null = valueExtent(points)): Heatmap | null {
  if (!range || rows < 1) return null;
  const [lo, hi] = range;
  const w = (hi - lo) / rows;
  let max = 0;
  const rowOf = (v: number) => Math.min(rows - 1, Math.max(0, Math.floor((v - lo) / w)));
  const cells = points.map((p) => {
    if (!p.bins || !(p.total > 0)) return null;
    const out = new Float64Array(rows);
    const { edges, counts } = p.bins;
    for (let i = 0; i < counts.length; i++) {
      const c = counts[i];
      if (c <= 0) continue;
      const a = edges[i], b = edges[i + 1];
      if (b <= a) { out[rowOf(a)] += c; continue; }
      // Clip to the grid; a part outside it (outside a zoomed value range) is not drawn.
      const r0 = rowOf(Math.max(a, lo)), r1 = rowOf(Math.min(b, hi));
      for (let r = r0; r <= r1; r++) {
        const cl = Math.max(a, lo + r * w), cr = Math.min(b, lo + (r + 1) * w);
        if (cr > cl) out[r] += (c * (cr - cl)) / (b - a);
      }
    }
    for (let r = 0; r < rows; r++) if (out[r] > max) max = out[r];
    return out;
  });
  return { lo, hi, rows, cells, max };
}

/** The grid rows of a heatmap over `range`: one per narrowest bin among the columns, so that
 * histograms sharing their bins (fixed edges, or merged steps) map one bin to one row and their
 * counts stay exact, and histograms whose ranges move from step to step keep their own
 * resolution; within [1, maxRows] (the plot's height in pixels / 2). */
export function heatmapRows(points: HistPoint[], range: [number, number] | null, maxRows: number): number {
  if (!range) return 1;
  let w = Infinity;
  for (const p of points) {
    if (!p.bins || !(p.total > 0)) continue;
    const { edges } = p.bins;
    for (let i = 0; i + 1 < edges.length; i++) {
      const d = edges[i + 1] - edges[i];
      if (d > 0 && d < w) w = d;
    }
  }
  const cap = Math.max(1, Math.floor(maxRows));
  if (!Number.isFinite(w)) return Math.min(cap, 8);
  const n = (range[1] - range[0]) / w;
  // A whole number of bins up to rounding: exactly that many rows.
  const rows = Math.abs(n - Math.round(n)) < 1e-6 * Math.max(1, n) ? Math.round(n) : Math.ceil(n);
  return Math.max(1, Math.min(cap, rows));
}

/** Heat of a cell, 0..1: count / max, or log(1 + count) / log(1 + max) on a log scale; 0 for an
 * empty cell (drawn as nothing). */
export function heat(count: number, max: number, log: boolean): number {
  if (!(count > 0) || !(max > 0)) return 0;
  const t = log ? Math.log1p(count) / Math.log1p(max) : count / max;
  return Math.max(0, Math.min(1, t));
}

/** A heat (0..1, > 0) as a colour: a perceptually ordered ramp (dark purple -> blue -> green ->
 * yellow, as viridis), so that more is always brighter. */
const RAMP: [number, number, number][] = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
export function heatColour(t: number): string {
  const x = Math.max(0, Math.min(1, t)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  const c = RAMP[i].map((v, k) => Math.round(v + f * (RAMP[i + 1][k] - v)));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

/** The heatmap row under a value; null outside the grid. */
export function rowAt(h: Heatmap, v: number): number | null {
  if (!(v >= h.lo && v <= h.hi)) return null;
  return Math.min(h.rows - 1, Math.floor(((v - h.lo) / (h.hi - h.lo)) * h.rows));
}

/** Buckets to ask the server for: one per pixel of the plot, within the API's 1..10,000. */
export function bucketsFor(plotWidth: number): number {
  return Math.max(1, Math.min(10000, Math.floor(plotWidth)));
}

/** Histogram keys grouped by prefix (`gradients/...`, `parameters/...`), keys in natural order,
 * the keys without a prefix first; each key with the writers that logged it, in label order. */
export function groupHistKeys(
  keys: { key: string; writer: string; type?: string; min_step: number; max_step: number }[],
  compare: (a: string, b: string) => number,
  prefixOf: (k: string) => string,
): [string, { key: string; writers: string[]; range: [number, number] }[]][] {
  const per = new Map<string, { key: string; writers: string[]; range: [number, number] }>();
  for (const k of keys) {
    if (k.type !== 'histogram') continue;
    const cur = per.get(k.key);
    if (cur) {
      if (!cur.writers.includes(k.writer)) cur.writers.push(k.writer);
      cur.range = [Math.min(cur.range[0], k.min_step), Math.max(cur.range[1], k.max_step)];
    } else per.set(k.key, { key: k.key, writers: [k.writer], range: [k.min_step, k.max_step] });
  }
  const sections = new Map<string, { key: string; writers: string[]; range: [number, number] }[]>();
  for (const e of [...per.values()].sort((a, b) => compare(a.key, b.key))) {
    e.writers.sort(compare);
    const p = prefixOf(e.key);
    if (!sections.has(p)) sections.set(p, []);
    sections.get(p)!.push(e);
  }
  return [...sections.entries()].sort((a, b) => (a[0] === '' ? -1 : b[0] === '' ? 1 : compare(a[0], b[0])));
}
