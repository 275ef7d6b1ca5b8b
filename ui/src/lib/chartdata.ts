// Fetching chart lines: one request per run for all the lines of a chart, with buckets = the
// chart's width in pixels over the visible range (the whole range, or a zoom). On a time axis a
// zoom is mapped back to the steps that hold it, so the server still buckets only those steps.
import type { Api, RangeQuery } from './api';
import type { ApiSeries } from './series';
import { bucketsToBand, pointsToBand, stepRangeForX, type Band, type LineMode, type XMode } from './series';

export interface LineSource {
  entity: string;
  project: string;
  run: string;
  key: string;
  system: boolean;
  /** Writers (labels) to include; undefined: all. */
  writers?: string[];
  /** ms the relative-time axis counts from (the run's start). */
  originMs: number;
  /** Step range of the whole series (from /keys) to align bucket grids across lines. */
  stepRange?: [number, number];
  /** Line label for a writer. */
  name: (writer: string) => string;
}

export interface LoadedLine {
  id: string;
  run: string;
  writer: string;
  label: string;
  band: Band;
}

export interface LoadOptions {
  buckets: number;
  xMode: XMode;
  lineMode: LineMode;
  /** Visible x range (a zoom) or null. */
  range: [number, number] | null;
  /** Lines drawn before, by id (to map a time zoom to steps). */
  previous?: Map<string, Band>;
  signal?: AbortSignal;
}

export function lineId(run: string, key: string, writer: string) {
  return `${run}\u0000${key}\u0000${writer}`;
}

/** The range parameters of the request for one run's lines. */
export function rangeFor(sources: LineSource[], o: LoadOptions): RangeQuery {
  const q: RangeQuery = { buckets: Math.max(1, Math.min(10000, Math.round(o.buckets))) };
  const common = commonStepRange(sources);
  if (o.xMode === 'step') {
    if (o.range) {
      q.min_step = Math.floor(o.range[0]);
      q.max_step = Math.ceil(o.range[1]);
    } else if (common) {
      q.min_step = common[0];
      q.max_step = common[1];
    }
    return q;
  }
  if (!o.range) {
    if (common) { q.min_step = common[0]; q.max_step = common[1]; }
    return q;
  }
  const origin = sources[0]?.originMs ?? 0;
  const toMs = (x: number) => (o.xMode === 'wall' ? x * 1000 : x * 1000 + origin);
  q.min_time = Math.floor(toMs(o.range[0]));
  q.max_time = Math.ceil(toMs(o.range[1]));
  // Steps holding the visible time range, from the lines drawn before.
  let lo = Infinity, hi = -Infinity;
  for (const s of sources) {
    for (const [id, band] of o.previous ?? []) {
      if (!id.startsWith(s.run + '\u0000' + s.key + '\u0000')) continue;
      const r = stepRangeForX(band, o.range[0], o.range[1]);
      if (r) { lo = Math.min(lo, r[0]); hi = Math.max(hi, r[1]); }
    }
  }
  if (lo <= hi) { q.min_step = lo; q.max_step = hi; }
  return q;
}

function commonStepRange(sources: LineSource[]): [number, number] | null {
  let lo = Infinity, hi = -Infinity;
  for (const s of sources) {
    if (!s.stepRange) continue;
    lo = Math.min(lo, s.stepRange[0]);
    hi = Math.max(hi, s.stepRange[1]);
  }
  return lo <= hi ? [lo, hi] : null;
}

/** Loads every line of a chart: sources grouped per run (and system or not), one request each. */
export async function loadLines(api: Api, sources: LineSource[], o: LoadOptions): Promise<LoadedLine[]> {
  const groups = new Map<string, LineSource[]>();
  for (const s of sources) {
    const k = `${s.entity}/${s.project}/${s.run}/${s.system}`;
    let g = groups.get(k);
    if (!g) { g = []; groups.set(k, g); }
    g.push(s);
  }
  const results = await Promise.all([...groups.values()].map(async (g) => {
    const first = g[0];
    const keys = [...new Set(g.map((s) => s.key))];
    const writers = g.some((s) => !s.writers) ? [] : [...new Set(g.flatMap((s) => s.writers!))];
    const range = rangeFor(g, o);
    const series = await batchedQuery(api, first.system, first.entity, first.project, first.run, keys, writers, range);
    if (o.signal?.aborted) throw new DOMException('aborted', 'AbortError');
    const out: LoadedLine[] = [];
    for (const sr of series) {
      if (!keys.includes(sr.key)) continue;
      const src = g.find((s) => s.key === sr.key && (!s.writers || s.writers.includes(sr.writer)));
      if (!src) continue;
      const band = sr.buckets
        ? bucketsToBand(sr.buckets, o.xMode, o.lineMode, src.originMs)
        : pointsToBand(sr.points ?? [], o.xMode, src.originMs);
      out.push({ id: lineId(src.run, src.key, sr.writer), run: src.run, writer: sr.writer, label: src.name(sr.writer), band });
    }
    return out;
  }));
  // Keep the order of the sources, then writers by label.
  const flat = results.flat();
  const order = new Map(sources.map((s, i) => [s.run + '\u0000' + s.key, i]));
  flat.sort((a, b) => (order.get(a.run + '\u0000' + a.id.split('\u0000')[1])! - order.get(b.run + '\u0000' + b.id.split('\u0000')[1])!)
    || a.writer.localeCompare(b.writer, undefined, { numeric: true }));
  return flat;
}

// ---- request batching --------------------------------------------------------------------
// Charts of one page that load together (same run, writers, range and bucket count: the usual
// case when a run page opens) share one request with all their keys: one round trip and one
// store read instead of twenty.

interface Pending {
  keys: Set<string>;
  waiters: { resolve: (s: ApiSeries[]) => void; reject: (e: unknown) => void }[];
}
const pending = new Map<string, Pending>();
const MAX_KEYS_PER_REQUEST = 64;

export function batchedQuery(
  api: Api, system: boolean, entity: string, project: string, run: string,
  keys: string[], writers: string[], range: RangeQuery,
): Promise<ApiSeries[]> {
  const id = JSON.stringify([system, entity, project, run, writers, range]);
  let p = pending.get(id);
  if (!p || p.keys.size + keys.length > MAX_KEYS_PER_REQUEST) {
    const batch: Pending = { keys: new Set(), waiters: [] };
    pending.set(id, batch);
    p = batch;
    setTimeout(() => {
      if (pending.get(id) === batch) pending.delete(id);
      const ks = [...batch.keys];
      const req = system
        ? api.system(entity, project, run, ks, writers, range)
        : api.history(entity, project, run, ks, writers, range);
      req.then((series) => batch.waiters.forEach((w) => w.resolve(series)), (e) => batch.waiters.forEach((w) => w.reject(e)));
    }, 0);
  }
  for (const k of keys) p.keys.add(k);
  return new Promise((resolve, reject) => p!.waiters.push({ resolve, reject }));
}
