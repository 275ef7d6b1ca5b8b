// The app's state in the URL's query string, so that any screen can be linked and restored:
// project, view, filters, grouping, sort, columns, selection, run, tab, chart options, log
// filters. Query parameters (not path segments) because names may contain dots and slashes.
// Pure functions: unit-tested in url.test.ts.

import type { AlertLevel } from './api';
import type { Clause, UiFilters } from './filters';
import type { LineMode, XMode } from './series';
import { cloneCompare, decodeCompare, encodeCompare, type CompareState } from './compare';
import { listParam, splitListParam } from './listParam';

export type Tab = 'overview' | 'charts' | 'histograms' | 'system' | 'logs' | 'ranks' | 'media' | 'artifacts' | 'alerts';
export const TABS: Tab[] = ['overview', 'charts', 'histograms', 'system', 'logs', 'ranks', 'media', 'artifacts', 'alerts'];

/** One chart's own settings (per-chart overrides of the page's, and its view). */
export interface ChartState {
  /** The x range shown (a zoom), in the page's x units. */
  z?: [number, number];
  /** Lines hidden (lineKey of chartdata.ts). */
  h?: string[];
  /** Log scale / smoothing of this chart, overriding the toolbar's. */
  log?: boolean;
  sm?: number;
}

export interface AppState {
  entity: string;
  project: string;
  run: string;
  group: string;
  art: string; // artifact page: the collection's name ('' none)
  ver: string; // artifact page: the version shown ('' the latest)
  alerts: boolean; // the project's alerts page
  tab: Tab;
  view: string; // saved view id ('' none)
  filters: UiFilters;
  groupBy: '' | 'group' | 'job_type';
  sort: string;
  columns: string[]; // table columns: summary keys, or config.<key> / summary.<key>
  hide: string[]; // workspace: visible runs left out of the charts (the eye toggle)
  cby: string; // workspace: colour the runs' lines by this config field ('' by run)
  panels: CompareState; // workspace: parallel coordinates and scatter panels (compare.ts)
  x: XMode;
  log: boolean;
  smooth: number;
  agg: boolean; // band + mean across processes/writers
  line: LineMode;
  labels: string[]; // logs: labels shown
  lq: string; // logs: text search
  stream: '' | 'stdout' | 'stderr';
  rkey: string; // ranks: the metric compared across ranks ('' the default)
  rank: string; // ranks: the isolated member (label, or run/label on a group page)
  charts: Record<string, ChartState>; // per chart (by its id): zoom, hidden lines, log, smoothing
  full: string; // the chart shown full screen ('' none)
  at: number; // logs: the console line shown in context (its id; 0 none)
  hview: 'bands' | 'heatmap'; // histograms: distribution bands or steps x bins heatmap
  hlog: boolean; // histograms: the heatmap's colour on a log scale of counts
  hw: Record<string, string>; // histograms: the writer shown per key (absent: the first)
  cmp: string[]; // run diff page: the runs compared, in order ('' none: not that page)
  cdiff: boolean; // run diff: only the rows that differ
  ckeys: string[]; // run diff: the metrics whose curves are overlaid ([] the first few)
  imp: string; // workspace: the metric of the parameter importance panel ('' none)
  mq: string; // metric filter box (run Charts and Histograms tabs, workspace charts, group page)
  mkey: string; // media tab: the key shown ('' the first)
  mstep: number | null; // media tab: the step shown (null the latest)
  mhide: string[]; // media tab: the writers hidden
  ast: AlertStateFilter; // alerts page: open, resolved or all alerts
  alv: AlertLevel | ''; // alerts page: only alerts of this level ('' any)
}

/** The alerts page's state filter ('all': both open and resolved). */
export type AlertStateFilter = 'open' | 'resolved' | 'all';
const ALERT_LEVELS: AlertLevel[] = ['INFO', 'WARN', 'ERROR'];

export const DEFAULT_STATE: AppState = {
  entity: '', project: '', run: '', group: '', art: '', ver: '', alerts: false, tab: 'overview', view: '',
  filters: { jobType: null, states: [], tags: [], name: '', extra: [] },
  groupBy: '', sort: '-created', columns: [], hide: [], cby: '', panels: {},
  x: 'step', log: false, smooth: 0, agg: false, line: 'mean',
  labels: [], lq: '', stream: '', rkey: '', rank: '', charts: {}, full: '', at: 0,
  hview: 'bands', hlog: false, hw: {},
  cmp: [], cdiff: false, ckeys: [], imp: '',
  mq: '', mkey: '', mstep: null, mhide: [], ast: 'open', alv: '',
};

export type Page = 'projects' | 'workspace' | 'group' | 'run' | 'artifact' | 'alerts' | 'compare';

export function pageOf(s: AppState): Page {
  if (s.entity && s.project && s.art) return 'artifact';
  if (s.entity && s.project && s.alerts && !s.run && !s.group) return 'alerts';
  if (s.entity && s.project && s.run) return 'run';
  if (s.entity && s.project && s.cmp.length && !s.group) return 'compare';
  if (s.entity && s.project && s.group) return 'group';
  if (s.entity && s.project) return 'workspace';
  return 'projects';
}

// Lists (`state`, `cols`, `labels`, `ck`, ...) are written as the API's list parameters (listParam.ts):
// a metric key or label holding a comma stays one item.
const csv = splitListParam;

export function decodeState(search: string): AppState {
  const p = new URLSearchParams(search);
  const s: AppState = structuredCloneState(DEFAULT_STATE);
  const proj = p.get('p') ?? '';
  const slash = proj.indexOf('/');
  if (slash > 0) {
    s.entity = proj.slice(0, slash);
    s.project = proj.slice(slash + 1);
  }
  s.run = p.get('run') ?? '';
  s.group = p.get('group') ?? '';
  s.art = p.get('art') ?? '';
  s.ver = s.art ? p.get('ver') ?? '' : '';
  s.alerts = p.get('alerts') === '1';
  const tab = p.get('tab') as Tab | null;
  if (tab && TABS.includes(tab)) s.tab = tab;
  s.view = p.get('view') ?? '';
  const jt = p.get('jt');
  if (jt !== null) {
    s.filters.jobType = jt.startsWith('!') ? { op: '!=', value: jt.slice(1) } : { op: '==', value: jt };
  }
  s.filters.states = csv(p.get('state'));
  s.filters.tags = csv(p.get('tags'));
  s.filters.name = p.get('q') ?? '';
  const fx = p.get('fx');
  if (fx) {
    try {
      const parsed = JSON.parse(fx);
      if (Array.isArray(parsed)) s.filters.extra = parsed as Clause[];
    } catch { /* a hand-edited link: ignore the part that does not parse */ }
  }
  const by = p.get('by');
  if (by === 'group' || by === 'job_type') s.groupBy = by;
  s.sort = p.get('sort') || DEFAULT_STATE.sort;
  s.columns = csv(p.get('cols'));
  s.hide = csv(p.get('hide'));
  s.cby = p.get('cby') ?? '';
  s.panels = decodeCompare(p.get('pc'), p.get('sc'));
  const x = p.get('x');
  if (x === 'rel' || x === 'wall' || x === 'step') s.x = x;
  s.log = p.get('log') === '1';
  const sm = Number(p.get('smooth'));
  s.smooth = Number.isFinite(sm) && sm > 0 && sm < 1 ? sm : 0;
  s.agg = p.get('agg') === '1';
  s.line = p.get('line') === 'last' ? 'last' : 'mean';
  s.labels = csv(p.get('labels'));
  s.lq = p.get('lq') ?? '';
  const st = p.get('stream');
  s.stream = st === 'stdout' || st === 'stderr' ? st : '';
  s.rkey = p.get('rkey') ?? '';
  s.rank = p.get('rank') ?? '';
  s.charts = decodeCharts(p.get('ch'));
  s.full = p.get('full') ?? '';
  const at = Number(p.get('at'));
  s.at = Number.isInteger(at) && at > 0 ? at : 0;
  s.hview = p.get('hv') === 'heatmap' ? 'heatmap' : 'bands';
  s.hlog = p.get('hlog') === '1';
  s.hw = decodeStringMap(p.get('hw'));
  s.cmp = csv(p.get('cmp'));
  s.cdiff = p.get('cd') === '1';
  s.ckeys = csv(p.get('ck'));
  s.imp = p.get('imp') ?? '';
  s.mq = p.get('mq') ?? '';
  s.mkey = p.get('mk') ?? '';
  const mstep = p.get('mstep');
  const ms = mstep === null || mstep.trim() === '' ? NaN : Number(mstep);
  s.mstep = Number.isSafeInteger(ms) ? ms : null;
  s.mhide = csv(p.get('mhide'));
  const ast = p.get('ast');
  if (ast === 'resolved' || ast === 'all') s.ast = ast;
  const alv = p.get('alv') as AlertLevel | null;
  if (alv && ALERT_LEVELS.includes(alv)) s.alv = alv;
  return s;
}

/** `hw`: {"key": "writer"}; what does not parse is left out. */
function decodeStringMap(text: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text) return out;
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string' && v) out[k] = v;
    }
  } catch { /* a hand-edited link */ }
  return out;
}

function finite(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/** `ch`: {"chart id": {"z": [a, b], "h": [...], "log": true, "sm": 0.6}}; what does not parse
 * (a hand-edited link) is left out. */
export function decodeCharts(text: string | null): Record<string, ChartState> {
  const out: Record<string, ChartState> = {};
  if (!text) return out;
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { return out; }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return out;
  for (const [id, v] of Object.entries(parsed as Record<string, any>)) {
    if (!v || typeof v !== 'object') continue;
    const cs: ChartState = {};
    if (Array.isArray(v.z) && v.z.length === 2 && finite(v.z[0]) && finite(v.z[1]) && v.z[0] < v.z[1]) cs.z = [v.z[0], v.z[1]];
    if (Array.isArray(v.h)) cs.h = v.h.filter((x: unknown) => typeof x === 'string');
    if (typeof v.log === 'boolean') cs.log = v.log;
    if (finite(v.sm) && v.sm >= 0 && v.sm < 1) cs.sm = v.sm;
    if (Object.keys(cs).length) out[id] = cs;
  }
  return out;
}

/** Drops empty chart entries (and empty hidden lists) so that the URL stays short. */
export function pruneCharts(charts: Record<string, ChartState>): Record<string, ChartState> {
  const out: Record<string, ChartState> = {};
  for (const [id, cs] of Object.entries(charts)) {
    const c: ChartState = { ...cs };
    if (c.h && !c.h.length) delete c.h;
    if (c.z === undefined) delete c.z;
    if (c.log === undefined) delete c.log;
    if (c.sm === undefined) delete c.sm;
    if (Object.keys(c).length) out[id] = c;
  }
  return out;
}

/** Only what differs from the defaults goes into the URL, in a stable order. */
export function encodeState(s: AppState): string {
  const p = new URLSearchParams();
  if (s.entity && s.project) p.set('p', `${s.entity}/${s.project}`);
  if (s.run) p.set('run', s.run);
  if (s.group) p.set('group', s.group);
  if (s.art) p.set('art', s.art);
  if (s.art && s.ver) p.set('ver', s.ver);
  if (s.alerts) p.set('alerts', '1');
  if (s.run && s.tab !== 'overview') p.set('tab', s.tab);
  if (s.view) p.set('view', s.view);
  const f = s.filters;
  if (f.jobType) p.set('jt', (f.jobType.op === '!=' ? '!' : '') + f.jobType.value);
  if (f.states.length) p.set('state', listParam(f.states));
  if (f.tags.length) p.set('tags', listParam(f.tags));
  if (f.name) p.set('q', f.name);
  if (f.extra.length) p.set('fx', JSON.stringify(f.extra));
  if (s.groupBy) p.set('by', s.groupBy);
  if (s.sort && s.sort !== DEFAULT_STATE.sort) p.set('sort', s.sort);
  if (s.columns.length) p.set('cols', listParam(s.columns));
  if (s.hide.length) p.set('hide', listParam(s.hide));
  if (s.cby) p.set('cby', s.cby);
  for (const [k, v] of Object.entries(encodeCompare(s.panels))) p.set(k, v);
  if (s.x !== 'step') p.set('x', s.x);
  if (s.log) p.set('log', '1');
  if (s.smooth > 0) p.set('smooth', String(s.smooth));
  if (s.agg) p.set('agg', '1');
  if (s.line !== 'mean') p.set('line', s.line);
  if (s.labels.length) p.set('labels', listParam(s.labels));
  if (s.lq) p.set('lq', s.lq);
  if (s.stream) p.set('stream', s.stream);
  if (s.rkey) p.set('rkey', s.rkey);
  if (s.rank) p.set('rank', s.rank);
  const charts = pruneCharts(s.charts);
  if (Object.keys(charts).length) p.set('ch', JSON.stringify(charts));
  if (s.full) p.set('full', s.full);
  if (s.at) p.set('at', String(s.at));
  if (s.hview !== 'bands') p.set('hv', s.hview);
  if (s.hlog) p.set('hlog', '1');
  if (Object.keys(s.hw).length) p.set('hw', JSON.stringify(s.hw));
  if (s.cmp.length) p.set('cmp', listParam(s.cmp));
  if (s.cdiff) p.set('cd', '1');
  if (s.ckeys.length) p.set('ck', listParam(s.ckeys));
  if (s.imp) p.set('imp', s.imp);
  // The metric filter, the Media tab's and the alerts page's choices belong to their pages.
  const page = pageOf(s);
  if (s.mq && (page === 'run' || page === 'workspace' || page === 'group')) p.set('mq', s.mq);
  if (page === 'run') {
    if (s.mkey) p.set('mk', s.mkey);
    if (s.mstep !== null) p.set('mstep', String(s.mstep));
    if (s.mhide.length) p.set('mhide', listParam(s.mhide));
  }
  if (page === 'alerts') {
    if (s.ast !== 'open') p.set('ast', s.ast);
    if (s.alv) p.set('alv', s.alv);
  }
  const q = p.toString();
  return q ? `?${q}` : '';
}

export function structuredCloneState(s: AppState): AppState {
  return {
    ...s,
    filters: {
      jobType: s.filters.jobType ? { ...s.filters.jobType } : null,
      states: [...s.filters.states], tags: [...s.filters.tags], name: s.filters.name,
      extra: s.filters.extra.map((c) => ({ ...c })),
    },
    columns: [...s.columns], hide: [...s.hide], labels: [...s.labels], hw: { ...s.hw }, cmp: [...s.cmp], mhide: [...s.mhide], ckeys: [...s.ckeys], panels: cloneCompare(s.panels),
    charts: Object.fromEntries(Object.entries(s.charts).map(([k, v]) => [k, { ...v, h: v.h ? [...v.h] : undefined, z: v.z ? [v.z[0], v.z[1]] as [number, number] : undefined }])),
  };
}

/** Link to a place in the app: keeps chart options, drops what belongs to another page. */
export function linkTo(cur: AppState, patch: Partial<AppState>): string {
  const base: AppState = structuredCloneState(cur);
  const next = { ...base, ...patch };
  if (patch.run !== undefined || patch.group !== undefined || patch.project !== undefined || patch.art !== undefined) {
    // Leaving a page: its tab and log filters do not follow (nor the artifact shown).
    if (patch.art === undefined) next.art = '';
    if (patch.ver === undefined) next.ver = '';
    if (patch.alerts === undefined) next.alerts = false;
    if (patch.tab === undefined) next.tab = 'overview';
    if (patch.labels === undefined) next.labels = [];
    if (patch.lq === undefined) next.lq = '';
    if (patch.stream === undefined) next.stream = '';
    if (patch.rank === undefined) next.rank = '';
    if (patch.charts === undefined) next.charts = {};
    if (patch.full === undefined) next.full = '';
    if (patch.at === undefined) next.at = 0;
    if (patch.hw === undefined) next.hw = {};
    if (patch.cmp === undefined) { next.cmp = []; next.cdiff = false; next.ckeys = []; }
    if (patch.mq === undefined) next.mq = '';
    if (patch.mkey === undefined) next.mkey = '';
    if (patch.mstep === undefined) next.mstep = null;
    if (patch.mhide === undefined) next.mhide = [];
    if (patch.ast === undefined) next.ast = 'open';
    if (patch.alv === undefined) next.alv = '';
  }
  if (patch.project !== undefined && patch.project !== cur.project) {
    next.view = patch.view ?? '';
    next.filters = patch.filters ?? structuredCloneState(DEFAULT_STATE).filters;
    next.hide = [];
    next.cby = '';
    next.panels = {};
    next.columns = [];
    next.groupBy = '';
    next.sort = DEFAULT_STATE.sort;
    next.imp = '';
  }
  return '/' + encodeState(next);
}
