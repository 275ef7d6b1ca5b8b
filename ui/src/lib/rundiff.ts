// Run diff: the config and summary of several runs in aligned rows, nested keys flattened with
// dots, each row marked when its values differ (a key one run has and another lacks differs).
// Pure functions: unit-tested in rundiff.test.ts.
import { flatten, fmtNum, naturalCompare } from './format';

export interface DiffRow {
  key: string;
  /** One value per run, in the runs' order; undefined where the run lacks the key. */
  values: unknown[];
  /** Some run's value differs from another's (missing counts as a value of its own). */
  differs: boolean;
}

/** A value's identity for comparison: numbers by value (1 and 1.0 alike), objects and arrays by
 * their JSON with sorted keys, missing as a sentinel no JSON value can equal. */
export function valueId(v: unknown): string {
  if (v === undefined) return '\u0000missing';
  return JSON.stringify(canonical(v));
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v as Record<string, unknown>).sort()) out[k] = canonical((v as Record<string, unknown>)[k]);
    return out;
  }
  // JSON has no NaN: keep it apart from null.
  if (typeof v === 'number' && Number.isNaN(v)) return '\u0000NaN';
  return v;
}

/** Rows of every key any run has (flattened with dots), in natural key order. */
export function diffRows(objs: (Record<string, unknown> | null | undefined)[]): DiffRow[] {
  const flat = objs.map((o) => new Map(flatten(o ?? {})));
  const keys = new Set<string>();
  for (const m of flat) for (const k of m.keys()) keys.add(k);
  return [...keys].sort(naturalCompare).map((key) => {
    const values = flat.map((m) => m.get(key));
    const first = valueId(values[0]);
    return { key, values, differs: values.some((v) => valueId(v) !== first) };
  });
}

/** The rows to show: all, or only those whose values differ. */
export function visibleRows(rows: DiffRow[], onlyDiff: boolean): DiffRow[] {
  return onlyDiff ? rows.filter((r) => r.differs) : rows;
}

/** How many rows differ, of how many. */
export function diffCount(rows: DiffRow[]): { differ: number; total: number } {
  return { differ: rows.filter((r) => r.differs).length, total: rows.length };
}

/** A value written in full: numbers with every digit (the shortest text that reads back as the
 * same double), strings as they are, anything else as JSON. */
export function fullText(v: unknown): string {
  if (v === undefined) return '—';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v;
  return JSON.stringify(v) ?? String(v);
}

/** The cells' texts of a row: short (fmtNum, 5 significant digits), unless two different values
 * would read the same (0.123456 and 0.123459): then the whole row in full, so that a row marked
 * as differing shows how. */
export function diffCellTexts(row: DiffRow): string[] {
  const short = row.values.map((v) => (v === undefined ? '—' : fmtNum(v)));
  if (!row.differs) return short;
  const idOfText = new Map<string, string>();
  for (let i = 0; i < short.length; i++) {
    const id = valueId(row.values[i]);
    const seen = idOfText.get(short[i]);
    if (seen !== undefined && seen !== id) return row.values.map(fullText);
    idOfText.set(short[i], id);
  }
  return short;
}
