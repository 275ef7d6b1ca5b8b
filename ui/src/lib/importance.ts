// Parameter importance (docs/ui.md): for one metric (a summary field) over a set of runs, each
// config field's correlation with it and its permutation importance in a random forest that
// predicts the metric from all config fields at once (which catches non-linear effects and
// interactions a correlation misses). Pure functions, no DOM: unit-tested in importance.test.ts.
import { binColumn, permutationImportance, trainForest, type ForestOptions, type PermutationOptions } from './forest';
import { flatten, valueAt } from './format';
import { correlationRatio, pearson } from './stats';

export type FieldKind = 'number' | 'boolean' | 'category';

export interface ImportanceRow {
  key: string;
  kind: FieldKind;
  /** Runs with both the field and the metric. */
  n: number;
  /** Pearson r (numbers, booleans as 0/1; signed) or the correlation ratio eta (categories;
   * unsigned). null when it cannot be computed (a constant side, too few pairs). */
  corr: number | null;
  corrKind: 'pearson' | 'eta';
  /** The R^2 lost when the field is shuffled (permutation importance; ~0: not used). */
  importance: number;
  importanceStd: number;
}

export interface ImportanceResult {
  metric: string;
  /** Runs that have the metric (a finite number). */
  runs: number;
  rows: ImportanceRow[];
  /** Fields left out: constant over these runs, or a distinct text per run (names, ids). */
  skipped: { key: string; why: 'constant' | 'identifier' }[];
  /** Out-of-bag R^2 of the forest: how much of the metric the config explains at all. */
  r2: number;
  /** Why nothing was computed (too few runs, no field varies). */
  message?: string;
}

/** The least runs with the metric for which the panel computes anything. */
export const MIN_RUNS = 8;

interface Field { key: string; kind: FieldKind; num: Float64Array; cat: (string | null)[] }

/** A metric's value in a summary (dotted path, or a key with dots in it); NaN when absent. */
export function metricValue(summary: Record<string, unknown> | null | undefined, key: string): number {
  const v = valueAt(summary, key);
  return typeof v === 'number' && Number.isFinite(v) ? v : NaN;
}

/** Summary keys (flattened) that hold a finite number in at least one run, for the metric picker. */
export function numericSummaryKeys(summaries: (Record<string, unknown> | null | undefined)[], limit = 3000): string[] {
  const keys = new Set<string>();
  for (const s of summaries.slice(0, limit)) for (const [k, v] of flatten(s ?? {})) if (typeof v === 'number' && Number.isFinite(v)) keys.add(k);
  return [...keys].sort();
}

/** Config fields (flattened) of the runs, typed: all numbers -> number, all booleans -> boolean,
 * anything else -> category (its text; arrays and objects as JSON). Missing: NaN / null. */
export function configFields(configs: (Record<string, unknown> | null | undefined)[]): Field[] {
  const n = configs.length;
  const cols = new Map<string, unknown[]>();
  configs.forEach((c, i) => {
    for (const [k, v] of flatten(c ?? {})) {
      let col = cols.get(k);
      if (!col) { col = new Array(n).fill(undefined); cols.set(k, col); }
      col[i] = v;
    }
  });
  const out: Field[] = [];
  for (const [key, col] of cols) {
    const present = col.filter((v) => v !== undefined && v !== null);
    const kind: FieldKind = present.every((v) => typeof v === 'number') ? 'number'
      : present.every((v) => typeof v === 'boolean') ? 'boolean' : 'category';
    const num = new Float64Array(n).fill(NaN);
    const cat: (string | null)[] = new Array(n).fill(null);
    col.forEach((v, i) => {
      if (v === undefined || v === null) return;
      if (kind === 'number') num[i] = v as number;
      else if (kind === 'boolean') num[i] = v ? 1 : 0;
      else cat[i] = typeof v === 'string' ? v : JSON.stringify(v);
    });
    out.push({ key, kind, num, cat });
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Categories as numbers for the trees: each category's rank by its mean metric (Breiman's
 * ordering: for squared error the best split of categories is a split of this order). */
function orderedCodes(cat: (string | null)[], y: ArrayLike<number>): Float64Array {
  const g = new Map<string, { s: number; c: number }>();
  cat.forEach((c, i) => {
    if (c === null) return;
    const e = g.get(c);
    if (e) { e.s += y[i]; e.c++; } else g.set(c, { s: y[i], c: 1 });
  });
  const order = [...g.entries()].sort((a, b) => a[1].s / a[1].c - b[1].s / b[1].c || (a[0] < b[0] ? -1 : 1));
  const rank = new Map(order.map(([c], i) => [c, i]));
  return Float64Array.from(cat, (c) => (c === null ? NaN : rank.get(c)!));
}

export interface ImportanceInput { config: Record<string, unknown> | null | undefined; summary: Record<string, unknown> | null | undefined }

export function paramImportance(runs: ImportanceInput[], metric: string, o: { forest?: ForestOptions; perm?: PermutationOptions } = {}): ImportanceResult {
  const withMetric = runs.filter((r) => Number.isFinite(metricValue(r.summary, metric)));
  const y = Float64Array.from(withMetric, (r) => metricValue(r.summary, metric));
  const res: ImportanceResult = { metric, runs: withMetric.length, rows: [], skipped: [], r2: 0 };
  if (withMetric.length < MIN_RUNS) {
    res.message = `${withMetric.length} run${withMetric.length === 1 ? '' : 's'} with ${metric}: at least ${MIN_RUNS} are needed`;
    return res;
  }
  const fields: Field[] = [];
  for (const f of configFields(withMetric.map((r) => r.config))) {
    const distinct = new Set<string | number>();
    let present = 0;
    for (let i = 0; i < y.length; i++) {
      const v = f.kind === 'category' ? f.cat[i] : Number.isNaN(f.num[i]) ? null : f.num[i];
      if (v === null) continue;
      present++;
      distinct.add(v);
    }
    // Missing in some runs counts as a value of its own.
    const levels = distinct.size + (present < y.length ? 1 : 0);
    if (levels < 2) res.skipped.push({ key: f.key, why: 'constant' });
    else if (f.kind === 'category' && distinct.size > 50 && distinct.size > 0.5 * present) res.skipped.push({ key: f.key, why: 'identifier' });
    else fields.push(f);
  }
  if (!fields.length) { res.message = `no config field varies over these ${y.length} runs`; return res; }
  const X = fields.map((f) => binColumn(f.kind === 'category' ? orderedCodes(f.cat, y) : f.num));
  const forest = trainForest(X, y, o.forest);
  const perm = permutationImportance(forest, X, y, o.perm);
  res.r2 = perm.r2;
  res.rows = fields.map((f, j) => {
    const c = f.kind === 'category' ? correlationRatio(f.cat, y) : pearson(f.num, y);
    return { key: f.key, kind: f.kind, n: c.n, corr: c.r, corrKind: f.kind === 'category' ? 'eta' : 'pearson', importance: perm.importance[j], importanceStd: perm.std[j] } as ImportanceRow;
  }).sort((a, b) => b.importance - a.importance || (a.key < b.key ? -1 : 1));
  return res;
}
