// Fetching chart lines: buckets = the chart's width in pixels (fewer per line when a chart has
// many lines, so that a chart of 100 runs stays a few MB) over the visible range (the whole
// range, or a zoom). On a time axis a zoom is mapped back to the steps that hold it, so the
// server still buckets only those steps. The charts of a page that load together share requests:
// one per (history or system, writers, range) and up to MAX_SERIES_PER_REQUEST run x key series
// (GET /api/v1/history/{entity}/{project}?runs=...&keys=...).
import { ApiError, type Api, type RangeQuery } from './api';
import type { ApiSeries } from './series';
import { naturalCompare } from './format';
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
  /** Step range of the whole series (from the series list) to align bucket grids across lines. */
  stepRange?: [number, number];
  /** Line label for a writer. */
  name: (writer: string) => string;
}

export interface LoadedLine {
  id: string;
  run: string;
  key: string;
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

/** A line's id: stable across reloads, printable (it goes into the URL for hidden lines). */
export function lineId(run: string, key: string, writer: string) {
  return `${run}|${key}|${writer}`;
}

/** Bucket budget of one chart: pixels, but at most `total` over all its lines (and at least
 * `min` per line): exact min/max bands either way, coarser when many lines share a chart. */
export function bucketsPerLine(pixels: number, lines: number, total = 16000, min = 60): number {
  const px = Math.max(10, Math.round(pixels));
  if (lines <= 1) return px;
  return Math.max(Math.min(min, px), Math.min(px, Math.floor(total / lines)));
}

/** The range parameters of the request for a chart's lines. */
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
      if (!id.startsWith(s.run + '|' + s.key + '|')) continue;
      const r = stepRangeForX(band, o.range[0], o.range[1]);
      if (r) { lo = Math.min(lo, r[0]); hi = Math.max(hi, r[1]); }
    }
  }
  if (lo <= hi) { q.min_step = lo; q.max_step = hi; }
  return q;
}

export function commonStepRange(sources: LineSource[]): [number, number] | null {
  let lo = Infinity, hi = -Infinity;
  for (const s of sources) {
    if (!s.stepRange) continue;
    lo = Math.min(lo, s.stepRange[0]);
    hi = Math.max(hi, s.stepRange[1]);
  }
  return lo <= hi ? [lo, hi] : null;
}

/**
 * Loads every line of a chart. On the relative-time axis each run's lines are queried with that
 * run's origin, so the sources are grouped by (entity, project, system, origin) when zoomed on
 * that axis; otherwise by (entity, project, system): one batched request for all the runs.
 */
export async function loadLines(api: Api, sources: LineSource[], o: LoadOptions): Promise<LoadedLine[]> {
  const groups = new Map<string, LineSource[]>();
  for (const s of sources) {
    const perOrigin = o.xMode === 'rel' && o.range ? `/${s.originMs}` : '';
    const k = `${s.entity}/${s.project}/${s.system}${perOrigin}`;
    let g = groups.get(k);
    if (!g) { g = []; groups.set(k, g); }
    g.push(s);
  }
  const results = await Promise.all([...groups.values()].map(async (g) => {
    const first = g[0];
    const writers = g.some((s) => !s.writers) ? [] : [...new Set(g.flatMap((s) => s.writers!))];
    const range = rangeFor(g, o);
    const wanted = new Map<string, LineSource[]>();  // run|key -> sources
    for (const s of g) {
      const k = s.run + '|' + s.key;
      if (!wanted.has(k)) wanted.set(k, []);
      wanted.get(k)!.push(s);
    }
    const series = await batchedQuery(api, first.system, first.entity, first.project,
      [...new Set(g.map((s) => s.run))], [...new Set(g.map((s) => s.key))], writers, range);
    if (o.signal?.aborted) throw new DOMException('aborted', 'AbortError');
    const out: LoadedLine[] = [];
    for (const sr of series) {
      const run = sr.run ?? first.run;
      const src = wanted.get(run + '|' + sr.key)?.find((s) => !s.writers || s.writers.includes(sr.writer));
      if (!src) continue;
      const band = sr.buckets
        ? bucketsToBand(sr.buckets, o.xMode, o.lineMode, src.originMs)
        : pointsToBand(sr.points ?? [], o.xMode, src.originMs);
      out.push({ id: lineId(run, src.key, sr.writer), run, key: src.key, writer: sr.writer, label: src.name(sr.writer), band });
    }
    return out;
  }));
  // Keep the order of the sources, then writers in natural order.
  const flat = results.flat();
  const order = new Map(sources.map((s, i) => [s.run + '|' + s.key, i]));
  flat.sort((a, b) => (order.get(a.run + '|' + a.key)! - order.get(b.run + '|' + b.key)!)
    || naturalCompare(a.writer, b.writer));
  return flat;
}

// ---- request batching --------------------------------------------------------------------
// Charts of one page that load together (same writers, range and bucket count: the usual case
// when a page opens) share requests with all their runs and keys: one round trip and one pass
// over the store instead of one per chart and run. A request holds at most MAX_SERIES_PER_REQUEST
// (runs x keys), so that a workspace of 100 runs and 20 charts makes a few requests of bounded
// size, answered in parallel (the server answers each request on one thread: a few moderate
// requests use its cores where one large one would not). A request the server refuses as too
// large (413: over --max-answer-points, counted over every writer's series) is split and retried
// (queryPart), so that one big shared run fails only its own chart, and only when a single
// (run, key) is still too large.

interface Pending {
  runs: Set<string>;
  keys: Set<string>;
  waiters: { runs: string[]; keys: string[]; resolve: (s: ApiSeries[]) => void; reject: (e: unknown) => void }[];
}
const pending = new Map<string, Pending>();
export const MAX_SERIES_PER_REQUEST = 800;
/** A batch is sent as up to this many requests in parallel (the browser's connections per host),
 * each of at least MIN_SERIES_PER_PART series: the server answers each request on one thread. */
export const MAX_PARALLEL_PARTS = 6;
const MIN_SERIES_PER_PART = 8;
/** The server's cap on runs per request (ApiLimits::max_runs_per_query). */
export const MAX_RUNS_PER_REQUEST = 200;

function size(runs: Set<string>, keys: Set<string>, addRuns: string[], addKeys: string[]) {
  let r = runs.size, k = keys.size;
  for (const x of addRuns) if (!runs.has(x)) r++;
  for (const x of addKeys) if (!keys.has(x)) k++;
  return { r, k };
}

export function batchedQuery(
  api: Api, system: boolean, entity: string, project: string,
  runs: string[], keys: string[], writers: string[], range: RangeQuery,
): Promise<ApiSeries[]> {
  // One chart with more runs than a request may carry: split by runs.
  if (runs.length > MAX_RUNS_PER_REQUEST || runs.length * Math.max(1, keys.length) > MAX_SERIES_PER_REQUEST) {
    const per = Math.max(1, Math.min(MAX_RUNS_PER_REQUEST, Math.floor(MAX_SERIES_PER_REQUEST / Math.max(1, keys.length))));
    const parts: Promise<ApiSeries[]>[] = [];
    for (let i = 0; i < runs.length; i += per) {
      parts.push(batchedQuery(api, system, entity, project, runs.slice(i, i + per), keys, writers, range));
    }
    return Promise.all(parts).then((xs) => xs.flat());
  }
  // A query of every key (keys empty) never shares a request with one that names keys.
  const id = JSON.stringify([system, entity, project, writers, range, keys.length === 0]);
  let p = pending.get(id);
  const grown = p ? size(p.runs, p.keys, runs, keys) : null;
  if (!p || (grown && (grown.r > MAX_RUNS_PER_REQUEST || grown.r * Math.max(1, grown.k) > MAX_SERIES_PER_REQUEST))) {
    const batch: Pending = { runs: new Set(), keys: new Set(), waiters: [] };
    pending.set(id, batch);
    p = batch;
    setTimeout(() => {
      if (pending.get(id) === batch) pending.delete(id);
      const parts = splitBatch([...batch.runs], [...batch.keys]);
      Promise.all(parts.map(([rs, ks]) => queryPart(api, system, entity, project, rs, ks, writers, range))).then((answers) => {
        const all = answers.flatMap((a) => a.series);
        const failed = answers.flatMap((a) => a.failed);
        for (const w of batch.waiters) {
          const rs = new Set(w.runs), ks = new Set(w.keys);
          // A waiter fails only with a part that held one of its (run, key) pairs.
          const f = failed.find((x) => x.runs.some((r) => rs.has(r)) && (!x.keys.length || !ks.size || x.keys.some((k) => ks.has(k))));
          if (f) w.reject(f.error);
          else w.resolve(all.filter((s) => rs.has(s.run ?? '') && (!ks.size || ks.has(s.key))));
        }
      }).catch((e) => batch.waiters.forEach((w) => w.reject(e)));
    }, 0);
  }
  for (const r of runs) p.runs.add(r);
  for (const k of keys) p.keys.add(k);
  return new Promise((resolve, reject) => p!.waiters.push({ runs, keys, resolve, reject }));
}

/** The requests of one batch: up to MAX_PARALLEL_PARTS, split along keys (or runs, when there are
 * fewer keys than parts), each of at least MIN_SERIES_PER_PART series. */
export function splitBatch(runs: string[], keys: string[]): [string[], string[]][] {
  const total = runs.length * Math.max(1, keys.length);
  const parts = Math.max(1, Math.min(MAX_PARALLEL_PARTS, Math.floor(total / MIN_SERIES_PER_PART)));
  if (parts === 1) return [[runs, keys]];
  const chunk = <T,>(xs: T[], n: number): T[][] => {
    const size = Math.ceil(xs.length / n);
    const out: T[][] = [];
    for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
    return out;
  };
  if (keys.length >= parts) return chunk(keys, parts).map((ks) => [runs, ks]);
  return chunk(runs, parts).map((rs) => [rs, keys]);
}

/** What one part of a batch brought back: its series, and the (runs, keys) that failed with the
 * error they got (keys empty: every key). */
export interface PartAnswer {
  series: ApiSeries[];
  failed: { runs: string[]; keys: string[]; error: unknown }[];
}

/** The server's 413 for an answer over `--max-answer-points` points and buckets (its series count
 * writers too, which the 800-series cap above cannot know: a run of 512 writers holds 512 series
 * per key). */
function tooLarge(e: unknown) {
  return e instanceof ApiError && e.status === 413;
}

/** A request's (runs, keys) in two: the keys halved (or the runs, with one key or every key);
 * null for a single (run, key), or a single run of every key. */
export function halve(runs: string[], keys: string[]): [string[], string[]][] | null {
  if (keys.length > 1) {
    const m = Math.ceil(keys.length / 2);
    return [[runs, keys.slice(0, m)], [runs, keys.slice(m)]];
  }
  if (runs.length > 1) {
    const m = Math.ceil(runs.length / 2);
    return [[runs.slice(0, m), keys], [runs.slice(m), keys]];
  }
  return null;
}

/** One request of a batch. One the server refuses as too large (413) is split in halves, each
 * asked for on its own, down to a single (run, key): only such a one that still gets 413 fails,
 * with the server's message (which names the bound). Another error fails the part as it is. */
export async function queryPart(
  api: Api, system: boolean, entity: string, project: string,
  runs: string[], keys: string[], writers: string[], range: RangeQuery,
): Promise<PartAnswer> {
  try {
    return { series: (await api.historyOfRuns(entity, project, system, runs, keys, writers, range)).series, failed: [] };
  } catch (e) {
    const halves = tooLarge(e) ? halve(runs, keys) : null;
    if (!halves) return { series: [], failed: [{ runs, keys, error: e }] };
    const answers = await Promise.all(halves.map(([rs, ks]) => queryPart(api, system, entity, project, rs, ks, writers, range)));
    return { series: answers.flatMap((a) => a.series), failed: answers.flatMap((a) => a.failed) };
  }
}
