// Workspace filters: the UI's filter model, its translation to the API's filter clauses (the
// same clauses a saved view stores), and a client-side evaluation of those clauses with the
// server's semantics (src/store/sqlite/sqlite_run_list.cc), so that a loaded workspace filters
// and sorts without a round trip. Pure functions: unit-tested in filters.test.ts.

import { fmtTime, valueAt } from './format';

export interface Run {
  id: string;
  entity: string;
  project: string;
  name: string;
  group: string;
  job_type: string;
  tags: string[];
  notes?: string;
  host: string;
  config: Record<string, unknown>;
  summary: Record<string, unknown>;
  state: string;
  exit_code: number | null;
  created_ms: number;
  updated_ms: number;
  heartbeat_ms: number;
  finished_ms: number | null;
  runtime_ms: number;
  writer_count: number;
}

export type Op = '==' | '!=' | 'in' | 'not in' | '~' | '<' | '>';

/** One API filter clause, as `filters=` and a view's spec.filters take it. */
export interface Clause {
  field: string;
  op: Op;
  value?: string | number;
  values?: string[];
}

export const STATES = ['running', 'finished', 'failed', 'crashed', 'killed', 'preempted'] as const;

/** What the filter bar edits. `extra` keeps clauses the bar has no control for (from a view). */
export interface UiFilters {
  jobType: { op: '==' | '!='; value: string } | null;
  states: string[];
  tags: string[];
  name: string;
  extra: Clause[];
}

export const EMPTY_FILTERS: UiFilters = { jobType: null, states: [], tags: [], name: '', extra: [] };

export function uiToClauses(f: UiFilters, includeName = true): Clause[] {
  const out: Clause[] = [];
  if (f.jobType && f.jobType.value !== '') out.push({ field: 'job_type', op: f.jobType.op, value: f.jobType.value });
  if (f.states.length) out.push({ field: 'state', op: 'in', values: [...f.states] });
  for (const t of f.tags) if (t) out.push({ field: 'tag', op: '==', value: t });
  if (includeName && f.name) out.push({ field: 'name', op: '~', value: f.name });
  out.push(...f.extra);
  return out;
}

/** Inverse of uiToClauses: clauses the bar can show go to their control, the rest to extra. */
export function clausesToUi(clauses: Clause[]): UiFilters {
  const f: UiFilters = { jobType: null, states: [], tags: [], name: '', extra: [] };
  for (const c of clauses ?? []) {
    if (c.field === 'job_type' && (c.op === '==' || c.op === '!=') && c.value !== undefined && !f.jobType) {
      f.jobType = { op: c.op, value: String(c.value) };
    } else if (c.field === 'state' && c.op === 'in' && c.values && !f.states.length) {
      f.states = [...c.values];
    } else if (c.field === 'state' && c.op === '==' && c.value !== undefined && !f.states.length) {
      f.states = [String(c.value)];
    } else if (c.field === 'tag' && c.op === '==' && c.value !== undefined) {
      f.tags.push(String(c.value));
    } else if (c.field === 'name' && c.op === '~' && c.value !== undefined && !f.name) {
      f.name = String(c.value);
    } else {
      f.extra.push(c);
    }
  }
  return f;
}

export interface RunListQuery {
  filters: Clause[];
  sort?: string;
  limit?: number;
}

/** Sorts the server can do; others are done by the client. */
export const SERVER_SORTS = ['created', 'updated', 'name', 'state', 'group', 'job_type'];

/** The query string of GET /api/v1/runs/{entity}/{project} for these clauses. */
export function toApiQuery(q: RunListQuery): string {
  const p = new URLSearchParams();
  if (q.filters.length) p.set('filters', JSON.stringify(q.filters));
  const key = (q.sort ?? '').replace(/^-/, '');
  if (q.sort && SERVER_SORTS.includes(key)) p.set('sort', q.sort);
  if (q.limit) p.set('limit', String(q.limit));
  return p.toString();
}

// ---- client-side evaluation (server semantics) -------------------------------------------

function textOf(run: Run, field: string): string {
  switch (field) {
    case 'name': return run.name;
    case 'group': return run.group;
    case 'job_type': return run.job_type;
    case 'state': return run.state;
    case 'host': return run.host;
    default: return '';
  }
}

function operands(c: Clause): string[] {
  if (c.values && c.values.length) return c.values.map(String);
  return c.value === undefined ? [] : [String(c.value)];
}

function asNumber(s: string): number | null {
  if (s.trim() === '') return null;
  const n = Number(s);
  return Number.isFinite(n) ? n : null;
}

/** SQLite json_extract equality: numbers by value (booleans as 1/0), strings by text. */
function jsonEquals(v: unknown, operand: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'boolean') v = v ? 1 : 0;
  if (typeof v === 'number') {
    const n = asNumber(operand);
    return n !== null ? v === n : String(v) === operand;
  }
  if (typeof v === 'string') return v === operand;
  return JSON.stringify(v) === operand;
}

export function matchClause(run: Run, c: Clause): boolean {
  const vals = operands(c);
  if (c.field.startsWith('config.') || c.field.startsWith('summary.')) {
    const dot = c.field.indexOf('.');
    const doc = c.field.slice(0, dot) === 'config' ? run.config : run.summary;
    const v = valueAt(doc, c.field.slice(dot + 1));
    switch (c.op) {
      case '==': case 'in': return vals.some((o) => jsonEquals(v, o));
      case '!=': case 'not in': return !vals.some((o) => jsonEquals(v, o));
      case '~': {
        if (v === undefined || v === null) return false;
        const t = typeof v === 'string' ? v : typeof v === 'boolean' ? (v ? '1' : '0') : JSON.stringify(v);
        return t.includes(vals[0] ?? '');
      }
      case '<': case '>': {
        const n = asNumber(vals[0] ?? '');
        let cmp: number;
        if (n !== null) {
          const x = typeof v === 'boolean' ? (v ? 1 : 0) : v;
          if (typeof x !== 'number') return false;
          cmp = x - n;
        } else {
          if (typeof v !== 'string') return false;
          cmp = v < vals[0] ? -1 : v > vals[0] ? 1 : 0;
        }
        return c.op === '<' ? cmp < 0 : cmp > 0;
      }
    }
    return false;
  }
  if (c.field === 'tag') {
    const tags = run.tags ?? [];
    switch (c.op) {
      case '==': return tags.includes(vals[0]);
      case '!=': return !tags.includes(vals[0]);
      case '~': return tags.some((t) => t.includes(vals[0]));
      case 'in': return tags.some((t) => vals.includes(t));
      case 'not in': return !tags.some((t) => vals.includes(t));
      default: return false;
    }
  }
  if (c.field === 'created' || c.field === 'updated') {
    const t = c.field === 'created' ? run.created_ms : run.updated_ms;
    const n = Number(vals[0]);
    switch (c.op) {
      case '==': return t === n;
      case '!=': return t !== n;
      case '<': return t < n;
      case '>': return t > n;
      default: return false;
    }
  }
  const t = textOf(run, c.field);
  switch (c.op) {
    case '==': return t === vals[0];
    case '!=': return t !== vals[0];
    case '<': return t < vals[0];
    case '>': return t > vals[0];
    case '~': return t.includes(vals[0]);
    case 'in': return vals.includes(t);
    case 'not in': return !vals.includes(t);
  }
  return false;
}

/**
 * Runs that pass every clause. The name search of the bar is matched case-insensitively here
 * (a search box), while a stored `name ~` clause keeps the server's case-sensitive substring.
 */
export function filterRuns(runs: Run[], f: UiFilters): Run[] {
  const clauses = uiToClauses(f, false);
  const needle = f.name.toLowerCase();
  const out: Run[] = [];
  for (const r of runs) {
    if (needle && !r.name.toLowerCase().includes(needle) && !r.id.includes(needle)) continue;
    let ok = true;
    for (const c of clauses) if (!matchClause(r, c)) { ok = false; break; }
    if (ok) out.push(r);
  }
  return out;
}

// ---- sorting -------------------------------------------------------------------------------

/** Sort keys: created, updated, name, state, group, job_type, host, runtime, writers, summary.<k>. */
export function sortRuns(runs: Run[], sort: string, nowMs = Date.now()): Run[] {
  const desc = sort.startsWith('-');
  const key = desc ? sort.slice(1) : sort;
  const dir = desc ? -1 : 1;
  let get: (r: Run) => number | string | null;
  switch (key) {
    case 'created': get = (r) => r.created_ms; break;
    case 'updated': get = (r) => r.updated_ms; break;
    case 'runtime': get = (r) => runtimeOf(r, nowMs); break;
    case 'writers': get = (r) => r.writer_count; break;
    case 'exit_code': get = (r) => r.exit_code; break;
    case 'name': case 'state': case 'group': case 'job_type': case 'host':
      get = (r) => textOf(r, key) || (r as any)[key] || ''; break;
    default:
      if (key.startsWith('summary.') || key.startsWith('config.')) {
        const dot = key.indexOf('.');
        const name = key.slice(dot + 1);
        const path = name.split('.');
        const docName = key.slice(0, dot) as 'summary' | 'config';
        get = (r) => {
          const v = valueAt(r[docName], name, path);
          return typeof v === 'number' || typeof v === 'string' ? v : typeof v === 'boolean' ? +v : null;
        };
      } else {
        get = (r) => r.created_ms;
      }
  }
  // Decorate-sort-undecorate: one key read per run. As the server (docs/api.md "List"): numbers,
  // then "NaN", then other strings, then missing values, whatever the direction; the direction
  // applies within a class.
  const dec = runs.map((r, i) => {
    const k = get(r);
    return { r, i, ...sortClass(k) };
  });
  dec.sort((a, b) => {
    if (a.cls !== b.cls) return a.cls - b.cls;
    let c = 0;
    if (a.cls === 0) c = (a.num as number) < (b.num as number) ? -1 : (a.num as number) > (b.num as number) ? 1 : 0;
    else if (a.cls === 2) c = compareCodePoints(a.str, b.str);
    return c !== 0 ? c * dir : a.i - b.i;
  });
  return dec.map((d) => d.r);
}

/** A sort key's class (0 number, 1 "NaN", 2 other string, 3 missing) and its value in the class;
 * the strings "Infinity"/"-Infinity" (non-finite metrics) are numbers. (Also media.ts' table sort.) */
export function sortClass(k: number | string | null | undefined): { cls: number; num: number; str: string } {
  if (typeof k === 'number') return Number.isNaN(k) ? { cls: 1, num: 0, str: '' } : { cls: 0, num: k, str: '' };
  if (typeof k === 'string') {
    if (k === 'NaN') return { cls: 1, num: 0, str: '' };
    if (k === 'Infinity') return { cls: 0, num: Infinity, str: '' };
    if (k === '-Infinity') return { cls: 0, num: -Infinity, str: '' };
    return { cls: 2, num: 0, str: k };
  }
  return { cls: 3, num: 0, str: '' };
}

/** Strings in code point order (the server's: by UTF-8 bytes). */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!, y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

export function runtimeOf(r: Run, nowMs = Date.now()): number {
  if (r.state === 'running' && r.finished_ms === null) return Math.max(r.runtime_ms, nowMs - r.created_ms);
  return r.runtime_ms;
}

/** Rows of the table when grouped: a header row per distinct value, then its runs. */
export type GroupedRow = { kind: 'group'; value: string; count: number; states: Record<string, number> } | { kind: 'run'; run: Run };

export function groupRows(runs: Run[], by: '' | 'group' | 'job_type', collapsed: Set<string>): GroupedRow[] {
  if (!by) return runs.map((run) => ({ kind: 'run', run }));
  const order: string[] = [];
  const buckets = new Map<string, Run[]>();
  for (const r of runs) {
    const v = by === 'group' ? r.group : r.job_type;
    let b = buckets.get(v);
    if (!b) { b = []; buckets.set(v, b); order.push(v); }
    b.push(r);
  }
  const rows: GroupedRow[] = [];
  for (const v of order) {
    const members = buckets.get(v)!;
    const states: Record<string, number> = {};
    for (const r of members) states[r.state] = (states[r.state] ?? 0) + 1;
    rows.push({ kind: 'group', value: v, count: members.length, states });
    if (!collapsed.has(v)) for (const run of members) rows.push({ kind: 'run', run });
  }
  return rows;
}

/** The seed's three views, offered to a project that has none. */
export const DEFAULT_VIEWS: { name: string; spec: ViewSpec }[] = [
  { name: 'default: hide workers', spec: { filters: [{ field: 'job_type', op: '!=', value: 'worker' }], group_by: 'group', sort: '-created' } },
  { name: 'debug: crashed workers', spec: { filters: [{ field: 'job_type', op: '==', value: 'worker' }, { field: 'state', op: 'in', values: ['crashed'] }], group_by: 'group', sort: '-created' } },
  { name: 'all nodes', spec: { filters: [], group_by: 'group', sort: '-created' } },
];

export interface ViewSpec {
  filters?: Clause[];
  group_by?: '' | 'group' | 'job_type';
  sort?: string;
  columns?: string[];
  layout?: ViewLayout;
}

/** A view's workspace layout (views.ts): colour-by field, comparison panels in their URL form,
 * importance metric, charts' x axis, log scale, smoothing; absent fields are the defaults. */
export interface ViewLayout {
  cby?: string;
  pc?: string;
  sc?: string;
  imp?: string;
  x?: string;
  log?: boolean;
  smooth?: number;
}

// ---- the filter builder and the default columns -------------------------------------------

/** Flattened config keys (dotted) of the runs, with the number of distinct scalar values each
 * takes among them. */
export function configKeyStats(runs: Run[], limit = 1000): Map<string, { runs: number; values: Set<string> }> {
  const out = new Map<string, { runs: number; values: Set<string> }>();
  const walk = (o: unknown, prefix: string) => {
    if (o && typeof o === 'object' && !Array.isArray(o)) {
      for (const k in o as Record<string, unknown>) walk((o as Record<string, unknown>)[k], prefix ? `${prefix}.${k}` : k);
      return;
    }
    if (!prefix || (typeof o !== 'number' && typeof o !== 'string' && typeof o !== 'boolean')) return;
    let e = out.get(prefix);
    if (!e) { e = { runs: 0, values: new Set() }; out.set(prefix, e); }
    e.runs++;
    if (e.values.size < 1000) e.values.add(typeof o === 'string' ? 's' + o : String(o));
  };
  for (let i = 0; i < runs.length && i < limit; i++) walk(runs[i].config ?? {}, '');
  return out;
}

/** Summary keys with scalar values, most common first (then by name), from the first `limit`
 * runs. */
export function summaryKeysOf(runs: Run[], limit = 3000): string[] {
  const count = new Map<string, number>();
  for (let i = 0; i < runs.length && i < limit; i++) {
    const s = runs[i].summary ?? {};
    for (const k in s) {
      const v = s[k];
      if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') count.set(k, (count.get(k) ?? 0) + 1);
    }
  }
  return [...count.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k]) => k);
}

// Config keys that differ between runs without being what an experiment varies.
const NOT_A_PARAMETER = /(^|[._])(seed|random_seed|rank|local_rank|global_rank|world_rank|run_id|id|uuid|name|run_name|path|dir|output_dir|log_dir|timestamp|time|date|host|hostname)$/i;
// A metric people look at first (loss, accuracy, ...) and the bookkeeping ones nobody sorts by.
const MAIN_METRIC = /(^|[/_.\-])(loss|acc|accuracy|f1|auc|score|reward|return|perplexity|ppl|error|err|bleu|rouge|map|iou|precision|recall)($|[/_.\-])/i;
const NOT_A_METRIC = /^_|(^|[/_.\-])(lr|learning_rate|epoch|epochs|step|global_step|steps|time|timestamp|runtime|iter|iteration|batch|samples)($|[/_.\-])/i;

/**
 * The table's default columns: config keys whose value varies across the runs (fewest distinct
 * values first: a sweep's parameters; not seeds, ranks, ids or paths), then the main metrics of the summary (loss, accuracy,
 * ... before other common keys; never the learning rate or the step). Config columns are named
 * `config.<key>`, summary ones by their key.
 */
export function defaultColumns(runs: Run[], maxConfig = 3, maxMetrics = 3): string[] {
  const varying = [...configKeyStats(runs).entries()]
    .filter(([k, e]) => e.values.size > 1 && !NOT_A_PARAMETER.test(k))
    .sort((a, b) => a[1].values.size - b[1].values.size || a[0].localeCompare(b[0]))
    .slice(0, maxConfig).map(([k]) => 'config.' + k);
  const keys = summaryKeysOf(runs, 1000).filter((k) => !NOT_A_METRIC.test(k) && !k.startsWith('system/'));
  const main = keys.filter((k) => MAIN_METRIC.test(k));
  const rest = keys.filter((k) => !MAIN_METRIC.test(k));
  return [...varying, ...[...main, ...rest].slice(0, maxMetrics)];
}

/** A column's header and value: `config.<key>` reads the config, anything else the summary. */
export function columnLabel(col: string): string {
  return col.startsWith('config.') ? col.slice(7) : col;
}

export function columnValue(run: Run, col: string): unknown {
  if (col.startsWith('config.')) return valueAt(run.config, col.slice(7));
  return valueAt(run.summary, col);
}

/** The sort key of a column (sortRuns). */
export function columnSort(col: string): string {
  return col.startsWith('config.') ? col : 'summary.' + col;
}

/** A clause in words, for the chips of the filter bar. */
export function describeClause(c: Clause): string {
  const field = c.field.startsWith('config.') ? c.field.slice(7) : c.field.startsWith('summary.') ? c.field.slice(8) : c.field;
  if (c.field === 'created' || c.field === 'updated') {
    // Local time, as the date picker and the table show it (minutes: the picker's precision).
    const when = fmtTime(Number(c.value)).slice(0, 16);
    const op = c.op === '<' ? 'before' : c.op === '>' ? 'after' : c.op === '==' ? 'at' : 'not at';
    return `${c.field} ${op} ${when}`;
  }
  const op = c.op === '~' ? 'contains' : c.op;
  const v = c.values ? c.values.join(' | ') : String(c.value);
  return `${field} ${op} ${v}`;
}
