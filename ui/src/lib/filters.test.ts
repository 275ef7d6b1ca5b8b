import { describe, expect, it } from 'vitest';
import {
  clausesToUi, DEFAULT_VIEWS, EMPTY_FILTERS, filterRuns, groupRows, matchClause, sortRuns, toApiQuery, uiToClauses,
  type Run, type UiFilters,
} from './filters';

const run = (id: string, o: Partial<Run>): Run => ({
  id, entity: 'e', project: 'p', name: id, group: '', job_type: '', tags: [], host: 'h', config: {}, summary: {},
  state: 'finished', exit_code: 0, created_ms: 0, updated_ms: 0, heartbeat_ms: 0, finished_ms: null, runtime_ms: 0,
  writer_count: 1, ...o,
});

const runs = [
  run('main', { group: 'DDP', job_type: 'main', created_ms: 4, summary: { loss: 0.2 } }),
  run('w1', { group: 'DDP', job_type: 'worker', created_ms: 3, summary: { loss: 0.3 } }),
  run('w2', { group: 'DDP', job_type: 'worker', state: 'crashed', created_ms: 2, summary: { loss: 0.9 } }),
  run('shared', { group: '', job_type: '', tags: ['shared'], state: 'running', created_ms: 1, config: { lr: 0.1, opt: { name: 'adam' } } }),
];

describe('filter -> API query', () => {
  it('turns the bar into the API clauses, and back', () => {
    const f: UiFilters = { ...EMPTY_FILTERS, jobType: { op: '!=', value: 'worker' }, states: ['crashed', 'failed'], tags: ['x'], name: 'ddp' };
    const clauses = uiToClauses(f);
    expect(clauses).toEqual([
      { field: 'job_type', op: '!=', value: 'worker' },
      { field: 'state', op: 'in', values: ['crashed', 'failed'] },
      { field: 'tag', op: '==', value: 'x' },
      { field: 'name', op: '~', value: 'ddp' },
    ]);
    expect(clausesToUi(clauses)).toEqual(f);
    const q = new URLSearchParams(toApiQuery({ filters: clauses, sort: '-created', limit: 1000 }));
    expect(JSON.parse(q.get('filters')!)).toEqual(clauses);
    expect(q.get('sort')).toBe('-created');
    expect(q.get('limit')).toBe('1000');
  });
  it('leaves client-only sorts and empty filters out of the query', () => {
    expect(toApiQuery({ filters: [], sort: '-summary.loss' })).toBe('');
  });
  it('keeps clauses it has no control for', () => {
    const ui = clausesToUi([{ field: 'config.lr', op: '<', value: 0.5 }]);
    expect(ui.extra).toEqual([{ field: 'config.lr', op: '<', value: 0.5 }]);
    expect(uiToClauses(ui)).toEqual([{ field: 'config.lr', op: '<', value: 0.5 }]);
  });
});

describe('client-side evaluation', () => {
  const ids = (rs: Run[]) => rs.map((r) => r.id);
  it('applies the seed views as the server does', () => {
    const [hide, crashed, all] = DEFAULT_VIEWS;
    expect(ids(filterRuns(runs, clausesToUi(hide.spec.filters!)))).toEqual(['main', 'shared']);
    expect(ids(filterRuns(runs, clausesToUi(crashed.spec.filters!)))).toEqual(['w2']);
    expect(ids(filterRuns(runs, clausesToUi(all.spec.filters!)))).toEqual(['main', 'w1', 'w2', 'shared']);
  });
  it('matches tags, config paths and comparisons', () => {
    const r = runs[3];
    expect(matchClause(r, { field: 'tag', op: '==', value: 'shared' })).toBe(true);
    expect(matchClause(r, { field: 'tag', op: '!=', value: 'shared' })).toBe(false);
    expect(matchClause(r, { field: 'config.lr', op: '==', value: '0.1' })).toBe(true);
    expect(matchClause(r, { field: 'config.lr', op: '<', value: 0.5 })).toBe(true);
    expect(matchClause(r, { field: 'config.lr', op: '>', value: 0.5 })).toBe(false);
    expect(matchClause(r, { field: 'config.opt.name', op: '~', value: 'ad' })).toBe(true);
    expect(matchClause(r, { field: 'config.missing', op: '!=', value: 'x' })).toBe(true);
    expect(matchClause(r, { field: 'config.missing', op: '==', value: 'x' })).toBe(false);
    expect(matchClause(r, { field: 'state', op: 'not in', values: ['crashed'] })).toBe(true);
  });
  it('searches names case-insensitively', () => {
    expect(ids(filterRuns(runs, { ...EMPTY_FILTERS, name: 'SHA' }))).toEqual(['shared']);
  });
});

describe('sorting and grouping', () => {
  it('sorts by columns and summary metrics, missing values last', () => {
    expect(sortRuns(runs, 'created').map((r) => r.id)).toEqual(['shared', 'w2', 'w1', 'main']);
    expect(sortRuns(runs, '-summary.loss').map((r) => r.id)).toEqual(['w2', 'w1', 'main', 'shared']);
    expect(sortRuns(runs, 'summary.loss').map((r) => r.id)).toEqual(['main', 'w1', 'w2', 'shared']);
  });
  it('groups rows with headers, collapsing on demand', () => {
    const rows = groupRows(runs, 'group', new Set(['']));
    expect(rows.map((r) => (r.kind === 'group' ? `#${r.value}:${r.count}` : r.run.id))).toEqual(['#DDP:3', 'main', 'w1', 'w2', '#:1']);
    const h = rows[0];
    expect(h.kind === 'group' && h.states).toEqual({ finished: 2, crashed: 1 });
  });
  it('sorts 10,000 runs fast', () => {
    const many: Run[] = [];
    for (let i = 0; i < 10000; i++) many.push(run(`r${i}`, { created_ms: (i * 7919) % 10007, summary: { loss: Math.sin(i) } }));
    const t0 = performance.now();
    sortRuns(filterRuns(many, { ...EMPTY_FILTERS, name: '1' }), '-summary.loss');
    expect(performance.now() - t0).toBeLessThan(300);
  });
});
