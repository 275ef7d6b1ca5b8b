// Chart data: the API's buckets (or raw points) turned into aligned columns for uPlot, with the
// min/max band kept beside the line so that nothing the server summarised is hidden.
// Pure functions, no DOM: unit-tested in series.test.ts.

export type ApiNumber = number | string | null;

export interface ApiBucket {
  step_min: number;
  step_max: number;
  time_min: number;
  time_max: number;
  count: number;
  /** NaN points in the bucket (in neither min, max nor mean). */
  nan_count?: number;
  /** null when the bucket holds no finite value (docs/api.md, "History"). */
  min: ApiNumber;
  max: ApiNumber;
  mean: ApiNumber;
  first: ApiNumber;
  last: ApiNumber;
}

export interface ApiSeries {
  /** The run, in answers that span several runs. */
  run?: string;
  key: string;
  writer: string;
  buckets?: ApiBucket[];
  points?: [number, number, ApiNumber][];
  more?: boolean;
}

export type XMode = 'step' | 'rel' | 'wall';
export type LineMode = 'mean' | 'last';

/** One drawable line with its band, x ascending. Values are null where nothing is drawable. */
export interface Band {
  x: number[];
  line: (number | null)[];
  min: (number | null)[];
  max: (number | null)[];
  /** The step range each x came from (for mapping a time zoom back to steps). */
  stepMin: number[];
  stepMax: number[];
  /** Every x is a single point: draw the raw values, there is no band to show. */
  raw: boolean;
  /** Total points summarised. */
  points: number;
  /** NaN points among them (gaps). */
  nan: number;
  /** Infinite points among them (gaps too): exact when `infExact`, else a lower bound (a bucket
   * of several points says whether it holds infinities, not how many: at least one of each sign
   * its min/max show, exactly its non-NaN count when it holds nothing else). */
  inf: number;
  infExact: boolean;
  /** Buckets (or raw points) holding infinite values. */
  infBuckets: number;
}

/** A value at one x of a joined chart: a number, null (a gap: nothing finite there) or
 * undefined (this line has no point at that x; the line runs on across it). */
export type Cell = number | null | undefined;

/** API numbers: finite numbers stay, "NaN"/"Infinity"/null become null (not drawable). */
export function num(v: ApiNumber | undefined): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  return null;
}

function isInfinite(v: ApiNumber | undefined): boolean {
  return v === 'Infinity' || v === '-Infinity' || (typeof v === 'number' && Math.abs(v) === Infinity);
}

/** x of a bucket: its last step, or its last time (ms -> s) for the time axes. */
function xOf(stepMax: number, timeMax: number, mode: XMode, originMs: number): number {
  if (mode === 'step') return stepMax;
  if (mode === 'wall') return timeMax / 1000;
  return (timeMax - originMs) / 1000;
}

/**
 * Buckets -> a band. `line` picks the bucket's mean or last value; min/max are the bucket's exact
 * extremes. Buckets whose values are all NaN give nulls (a gap), never a made-up value.
 * Sorted by x (time axes can be non-monotonic when clocks jump).
 */
export function bucketsToBand(
  buckets: ApiBucket[],
  mode: XMode,
  lineMode: LineMode = 'mean',
  originMs = 0,
): Band {
  const n = buckets.length;
  const idx = new Array<number>(n);
  const xs = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    idx[i] = i;
    xs[i] = xOf(buckets[i].step_max, buckets[i].time_max, mode, originMs);
  }
  let sorted = true;
  for (let i = 1; i < n; i++) if (xs[i] < xs[i - 1]) { sorted = false; break; }
  if (!sorted) idx.sort((a, b) => xs[a] - xs[b] || a - b);
  const out = emptyBand();
  out.raw = true;
  for (const i of idx) {
    const b = buckets[i];
    const lo = num(b.min);
    const hi = num(b.max);
    // A bucket without a finite mean (all NaN, or infinities) is a gap, whatever its last
    // point was: the line never crosses it.
    const mean = num(b.mean);
    const v = mean === null ? null : num(lineMode === 'last' ? b.last : b.mean);
    out.x.push(xs[i]);
    out.line.push(v);
    out.min.push(v === null ? null : lo !== null && hi !== null ? lo : v);
    out.max.push(v === null ? null : lo !== null && hi !== null ? hi : v);
    out.stepMin.push(b.step_min);
    out.stepMax.push(b.step_max);
    out.points += b.count;
    const nans = b.nan_count ?? 0;
    out.nan += nans;
    const inf = infinitiesOf(b);
    if (inf.atLeast > 0) {
      out.inf += inf.atLeast;
      out.infBuckets += 1;
      if (!inf.exact) out.infExact = false;
    }
    if (b.count > 1) out.raw = false;
  }
  return out;
}

/**
 * The infinite points of a bucket, as far as its statistics tell (docs/api.md, "History": the
 * server counts NaN points, not infinite ones): `atLeast` of them, `exact` when that is the
 * count. A bucket without a finite statistic holds only NaN and infinities of one sign (exactly
 * its non-NaN points); infinite extremes of both signs are at least two points, one at least one;
 * a bucket of one non-NaN point is exact either way.
 */
export function infinitiesOf(b: ApiBucket): { atLeast: number; exact: boolean } {
  const valid = b.count - (b.nan_count ?? 0);
  if (valid <= 0) return { atLeast: 0, exact: true };
  const lo = isInfinite(b.min), hi = isInfinite(b.max);
  if (b.min === null && b.max === null && b.mean === null) return { atLeast: valid, exact: true };
  // Both extremes the same infinity: every non-NaN point is that infinity.
  if (lo && hi && b.min === b.max) return { atLeast: valid, exact: true };
  const atLeast = lo && hi ? 2 : lo || hi || b.mean === null ? 1 : 0;
  return { atLeast, exact: atLeast === 0 || atLeast === valid };
}

/** Raw points -> a band with min = max = value (nothing to hide). */
export function pointsToBand(points: [number, number, ApiNumber][], mode: XMode, originMs = 0): Band {
  const buckets: ApiBucket[] = points.map(([s, t, v]) => ({
    step_min: s, step_max: s, time_min: t, time_max: t, count: 1, nan_count: v === 'NaN' ? 1 : 0,
    min: v, max: v, mean: v, first: v, last: v,
  }));
  return bucketsToBand(buckets, mode, 'mean', originMs);
}

export function emptyBand(): Band {
  return { x: [], line: [], min: [], max: [], stepMin: [], stepMax: [], raw: false, points: 0, nan: 0, inf: 0, infExact: true, infBuckets: 0 };
}

export function seriesToBand(s: ApiSeries, mode: XMode, lineMode: LineMode, originMs = 0): Band {
  if (s.buckets) return bucketsToBand(s.buckets, mode, lineMode, originMs);
  return pointsToBand(s.points ?? [], mode, originMs);
}

/**
 * Exponential moving average with bias correction (as TensorBoard's smoothing): weight in
 * [0, 1); 0 returns the input. Nulls stay null and do not reset the average.
 */
export function smooth(values: (number | null)[], weight: number): (number | null)[] {
  if (!(weight > 0)) return values.slice();
  const w = Math.min(weight, 0.999);
  let acc = 0;
  let n = 0;
  const out = new Array<number | null>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || !Number.isFinite(v)) { out[i] = null; continue; }
    acc = acc * w + (1 - w) * v;
    n++;
    out[i] = acc / (1 - Math.pow(w, n));
  }
  return out;
}

/** Columns aligned on one x array (uPlot's data layout): null where a band has a gap at x,
 * undefined where it has no point at x (uPlot runs a line across undefined, never across null). */
export interface Joined {
  x: number[];
  line: Cell[][];
  min: Cell[][];
  max: Cell[][];
  /** Per line: the distinct x values it has a cell at (its points after equal x merged). */
  distinct: number[];
  /** Per line: the indexes (into x) of cells that merged several of its points (points that
   * share one x, e.g. one timestamp on a time axis): drawn as a min-max tick with a dot. */
  merged: number[][];
}

/** Aligns several bands on the union of their x values (merge of sorted arrays). */
export function joinBands(bands: Band[]): Joined {
  const all: number[] = [];
  for (const b of bands) for (const x of b.x) all.push(x);
  all.sort((a, b) => a - b);
  const x: number[] = [];
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) x.push(all[i]);
  const out: Joined = { x, line: [], min: [], max: [], distinct: [], merged: [] };
  for (const b of bands) {
    const line = new Array<Cell>(x.length).fill(undefined);
    const min = new Array<Cell>(x.length).fill(undefined);
    const max = new Array<Cell>(x.length).fill(undefined);
    const merged: number[] = [];
    let distinct = 0;
    let j = 0;
    for (let i = 0; i < b.x.length; i++) {
      while (x[j] < b.x[i]) j++;
      if (i === 0 || b.x[i] !== b.x[i - 1]) distinct++;
      else if (merged[merged.length - 1] !== j) merged.push(j);
      // Duplicate x within one band (time axis, same ms): keep the extremes, the last line value.
      const v = b.line[i];
      line[j] = v === null ? (typeof line[j] === 'number' ? line[j] : null) : v;
      const lo = b.min[i], hi = b.max[i];
      if (lo !== null) min[j] = typeof min[j] !== 'number' ? lo : Math.min(min[j] as number, lo);
      else if (min[j] === undefined) min[j] = null;
      if (hi !== null) max[j] = typeof max[j] !== 'number' ? hi : Math.max(max[j] as number, hi);
      else if (max[j] === undefined) max[j] = null;
    }
    out.line.push(line);
    out.min.push(min);
    out.max.push(max);
    out.distinct.push(distinct);
    out.merged.push(merged);
  }
  return out;
}

/**
 * Whether a line is drawn with a dot at each of its points, from its `distinct` x values after
 * the join (not its point count: points that share an x are one cell): raw points at least ~6 px
 * apart on average on a plot `plotWidth` px wide, and always a line of a single x (it has no
 * segment to show it, whatever it summarises).
 */
export function showDots(raw: boolean, distinct: number, plotWidth: number): boolean {
  if (distinct <= 0) return false;
  return distinct === 1 || (raw && distinct <= plotWidth / 6);
}

/**
 * The cells of a joined line that get a dot even when its points are too dense for dots: cells
 * that merged several points (drawn as a tick, the dot on it) and values alone between gaps or
 * ends (no segment reaches them). Ascending indexes into the join's x.
 */
export function loneCells(line: Cell[], merged: number[]): number[] {
  const out: number[] = [];
  let m = 0;
  // The previous and next cells with a point of this line (undefined cells belong to others).
  let prev: Cell = undefined;
  for (let i = 0; i < line.length; i++) {
    const v = line[i];
    if (v === undefined) continue;
    while (m < merged.length && merged[m] < i) m++;
    if (typeof v === 'number') {
      let k = i + 1;
      while (k < line.length && line[k] === undefined) k++;
      const next = k < line.length ? line[k] : null;
      if ((m < merged.length && merged[m] === i) || (typeof prev !== 'number' && typeof next !== 'number')) out.push(i);
    }
    prev = v;
  }
  return out;
}

/**
 * Aggregate across processes: the bands are binned on `bins` equal x intervals over [lo, hi]
 * (one bin per pixel, or exactly the server's bucket grid when lo/width match it). Each bin
 * gets min of mins, max of maxes, and the mean over processes of each process's mean value in
 * the bin. x of a bin is the mean x of its members.
 */
export function aggregateBands(bands: Band[], lo: number, hi: number, bins: number): Band {
  const n = Math.max(1, Math.floor(bins));
  const width = hi > lo ? (hi - lo) / n : 1;
  const sumX = new Float64Array(n), cntX = new Float64Array(n);
  const mn = new Float64Array(n).fill(Infinity), mx = new Float64Array(n).fill(-Infinity);
  const sumMean = new Float64Array(n), cntMean = new Float64Array(n);
  const sMin = new Float64Array(n).fill(Infinity), sMax = new Float64Array(n).fill(-Infinity);
  let points = 0;
  let raw = true;
  for (const b of bands) {
    points += b.points;
    if (!b.raw) raw = false;
    // Per-process mean within a bin first, so that a process with more buckets in a bin does not
    // weigh more than another.
    let curBin = -1, acc = 0, cnt = 0;
    const flush = () => {
      if (curBin >= 0 && cnt > 0) { sumMean[curBin] += acc / cnt; cntMean[curBin] += 1; }
      acc = 0; cnt = 0;
    };
    for (let i = 0; i < b.x.length; i++) {
      const x = b.x[i];
      if (x < lo || x > hi) continue;
      const k = Math.min(n - 1, Math.floor((x - lo) / width));
      if (k !== curBin) { flush(); curBin = k; }
      sumX[k] += x; cntX[k] += 1;
      const v = b.line[i];
      if (v !== null) { acc += v; cnt++; }
      const l = b.min[i], h = b.max[i];
      if (l !== null && l < mn[k]) mn[k] = l;
      if (h !== null && h > mx[k]) mx[k] = h;
      if (b.stepMin[i] < sMin[k]) sMin[k] = b.stepMin[i];
      if (b.stepMax[i] > sMax[k]) sMax[k] = b.stepMax[i];
    }
    flush();
  }
  const out: Band = { ...emptyBand(), raw, points };
  for (const b of bands) {
    out.nan += b.nan; out.inf += b.inf; out.infBuckets += b.infBuckets;
    if (!b.infExact) out.infExact = false;
  }
  for (let k = 0; k < n; k++) {
    if (cntX[k] === 0) continue;
    out.x.push(sumX[k] / cntX[k]);
    out.line.push(cntMean[k] ? sumMean[k] / cntMean[k] : null);
    out.min.push(Number.isFinite(mn[k]) ? mn[k] : null);
    out.max.push(Number.isFinite(mx[k]) ? mx[k] : null);
    out.stepMin.push(sMin[k]);
    out.stepMax.push(sMax[k]);
  }
  if (bands.length > 1) out.raw = false;
  return out;
}

/** Smallest and largest x over bands (null when all are empty). */
export function xExtent(bands: Band[]): [number, number] | null {
  let lo = Infinity, hi = -Infinity;
  for (const b of bands) {
    if (!b.x.length) continue;
    lo = Math.min(lo, b.x[0]);
    hi = Math.max(hi, b.x[b.x.length - 1]);
  }
  return lo <= hi ? [lo, hi] : null;
}

/**
 * The step range that covers the visible x range [x0, x1] of a band drawn on a time axis: the
 * first bucket ending at or after x0 to the last bucket starting at or before x1. Lets a zoom
 * on a time axis ask the server for finer buckets of just those steps.
 */
export function stepRangeForX(b: Band, x0: number, x1: number): [number, number] | null {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < b.x.length; i++) {
    if (b.x[i] < x0) continue;
    if (b.x[i] > x1) {
      // The bucket straddling x1 also holds visible points.
      hi = Math.max(hi, b.stepMax[i]);
      lo = Math.min(lo, b.stepMin[i]);
      break;
    }
    lo = Math.min(lo, b.stepMin[i]);
    hi = Math.max(hi, b.stepMax[i]);
  }
  return lo <= hi ? [lo, hi] : null;
}

/** y extent of bands within the visible x range, for autoscaling on the band, not the line. */
export function yExtent(j: Joined, shown: boolean[], x0: number, x1: number, logScale: boolean): [number, number] | null {
  let lo = Infinity, hi = -Infinity;
  const i0 = lowerBound(j.x, x0);
  for (let s = 0; s < j.line.length; s++) {
    if (!shown[s]) continue;
    const mn = j.min[s], mx = j.max[s], ln = j.line[s];
    for (let i = i0; i < j.x.length && j.x[i] <= x1; i++) {
      let a = mn[i] ?? ln[i];
      const b = mx[i] ?? ln[i];
      const l = ln[i];
      // On a log axis the band's non-positive part cannot be drawn: fall back to the line, then
      // to the band's top.
      if (logScale && typeof a === 'number' && a <= 0) a = typeof l === 'number' && l > 0 ? l : b;
      if (typeof a === 'number' && (!logScale || a > 0) && a < lo) lo = a;
      if (typeof b === 'number' && (!logScale || b > 0) && b > hi) hi = b;
    }
  }
  return lo <= hi ? [lo, hi] : null;
}

export function lowerBound(a: number[], v: number): number {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (a[m] < v) lo = m + 1; else hi = m;
  }
  return lo;
}

/** Width of the server's buckets for [lo, hi] in n buckets (inclusive integer steps). */
export function bucketWidth(lo: number, hi: number, n: number): number {
  return Math.max(1, Math.ceil((hi - lo + 1) / Math.max(1, n)));
}

/** Index of the point of `b` nearest to x (null when the band is empty). */
export function nearestIndex(b: Band, x: number): number | null {
  const n = b.x.length;
  if (!n) return null;
  const i = lowerBound(b.x, x);
  if (i <= 0) return 0;
  if (i >= n) return n - 1;
  return x - b.x[i - 1] <= b.x[i] - x ? i - 1 : i;
}

/** The point of `b` a tooltip shows at `x`: its nearest, and whether `x` is beyond the line's
 * range (before its first or after its last point by more than half its mean spacing; a line of
 * one point: anywhere but at it), where that point is not the line's value at `x` and is shown
 * with its own x. */
export function tooltipPoint(b: Band, x: number): { i: number; beyond: boolean } | null {
  const i = nearestIndex(b, x);
  if (i === null) return null;
  const n = b.x.length, first = b.x[0], last = b.x[n - 1];
  const margin = n > 1 ? (last - first) / (n - 1) / 2 : 0;
  return { i, beyond: x < first - margin || x > last + margin };
}
