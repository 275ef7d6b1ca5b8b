import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  clausesToUi, columnSort, columnValue, DEFAULT_VIEWS, defaultColumns, describeClause, EMPTY_FILTERS, filterRuns, groupRows, matchClause, sortRuns, toApiQuery, uiToClauses,
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
  it('sorts numbers, then "NaN", then other strings, then missing values, in either direction (the server\'s order)', () => {
    const rs = [
      run('nan', { summary: { loss: 'NaN' } }), run('one', { summary: { loss: 1 } }), run('none', { summary: {} }),
      run('text', { summary: { loss: 'diverged' } }), run('inf', { summary: { loss: 'Infinity' } }), run('two', { summary: { loss: 2 } }),
      run('neginf', { summary: { loss: '-Infinity' } }), run('Text', { summary: { loss: 'Z' } }),
    ];
    expect(sortRuns(rs, 'summary.loss').map((r) => r.id)).toEqual(['neginf', 'one', 'two', 'inf', 'nan', 'Text', 'text', 'none']);
    expect(sortRuns(rs, '-summary.loss').map((r) => r.id)).toEqual(['inf', 'two', 'one', 'neginf', 'nan', 'text', 'Text', 'none']);
  });
  it('orders strings by code point, as the server orders UTF-8 bytes', () => {
    // U+FF21 (a BMP letter) sorts before U+1F600 (a surrogate pair in UTF-16).
    const rs = [run('emoji', { summary: { tag: '\u{1F600}' } }), run('wide', { summary: { tag: '\uFF21' } })];
    expect(sortRuns(rs, 'summary.tag').map((r) => r.id)).toEqual(['wide', 'emoji']);
  });
  it('groups rows with headers, collapsing on demand', () => {
    const rows = groupRows(runs, 'group', new Set(['']));
    expect(rows.map((r) => (r.kind === 'group' ? `#${r.value}:${r.count}` : r.run.id))).toEqual(['#DDP:3', 'main', 'w1', 'w2', '#:1']);
    const h = rows[0];
    expect(h.kind === 'group' && h.states).toEqual({ finished: 2, crashed: 1 });
  });
  it('sorts 10,000 runs by a summary metric, missing values last', () => {
    // (How fast is measured by bench/ui_bench.mjs, not here.)
    const many: Run[] = [];
    for (let i = 0; i < 10000; i++) many.push(run(`r${i}`, { created_ms: (i * 7919) % 10007, summary: i % 10 ? { loss: Math.sin(i) } : {} }));
    const sorted = sortRuns(filterRuns(many, { ...EMPTY_FILTERS, name: '1' }), '-summary.loss');
    const losses = sorted.map((r) => r.summary.loss as number | undefined);
    const firstMissing = losses.findIndex((v) => v === undefined);
    for (let i = 1; i < firstMissing; i++) expect(losses[i - 1]! >= losses[i]!).toBe(true);
    expect(losses.slice(firstMissing).every((v) => v === undefined)).toBe(true);
  });
});

describe('filter builder and default columns', () => {
  it('filters by creation time as the server does (ms since 1970)', () => {
    expect(filterRuns(runs, { ...EMPTY_FILTERS, extra: [{ field: 'created', op: '>', value: 2 }] }).map((r) => r.id)).toEqual(['main', 'w1']);
    expect(filterRuns(runs, { ...EMPTY_FILTERS, extra: [{ field: 'created', op: '<', value: 2 }] }).map((r) => r.id)).toEqual(['shared']);
    expect(describeClause({ field: 'config.lr', op: '<', value: 0.01 })).toBe('lr < 0.01');
  });
  describe('date chips in local time, as the picker and the table (fmtTime) show it', () => {
    // Node reads TZ again whenever it is set (vi.stubEnv sets process.env): 5 hours behind UTC in
    // January, 4 in July.
    beforeAll(() => { vi.stubEnv('TZ', 'America/New_York'); });
    afterAll(() => { vi.unstubAllEnvs(); });
    it('says the local minute, never the UTC one', () => {
      expect(new Date(Date.UTC(2026, 0, 2, 3, 4)).getHours()).toBe(22); // the zone took
      expect(describeClause({ field: 'created', op: '>', value: Date.UTC(2026, 0, 2, 3, 4) })).toBe('created after 2026-01-01 22:04');
      expect(describeClause({ field: 'updated', op: '<', value: Date.UTC(2026, 6, 1, 12, 30, 59) })).toBe('updated before 2026-07-01 08:30');
      // What the datetime-local picker gives (Date.parse of a form without a zone is local) reads back as typed.
      expect(describeClause({ field: 'created', op: '>', value: Date.parse('2026-03-04T05:06') })).toBe('created after 2026-03-04 05:06');
    });
  });
  it('defaults to the config keys that vary, then the main metrics (never lr or step)', () => {
    const sweep = [0.1, 0.01, 0.001].flatMap((lr, i) => [32, 64].map((bs, j) => run(`s${i}${j}`, {
      config: { lr, batch_size: bs, model: 'resnet', seed: i * 2 + j },
      summary: { lr: lr / 10, step: 100, 'train/loss': 0.5, acc: 0.9, epoch: 3, throughput: 10 },
    })));
    expect(defaultColumns(sweep)).toEqual(['config.batch_size', 'config.lr', 'acc', 'train/loss', 'throughput']);
    expect(columnValue(sweep[0], 'config.lr')).toBe(0.1);
    expect(columnValue(sweep[0], 'acc')).toBe(0.9);
    expect(columnSort('config.lr')).toBe('config.lr');
    expect(columnSort('acc')).toBe('summary.acc');
  });
});

describe('keys with a dot in them (a flat "optim.lr"), as format.ts valueAt reads them', () => {
  const rs = [
    run('a', { config: { 'optim.lr': 0.01, model: { depth: 4 } }, summary: { 'eval.acc': 0.7 } }),
    run('b', { config: { 'optim.lr': 0.1, model: { depth: 8 } }, summary: { 'eval.acc': 0.9 } }),
    run('c', { config: { optim: { lr: 0.001 } }, summary: { eval: { acc: 0.8 } } }),
    run('d', {}),
  ];
  it('a column shows the value: the key itself first, else the nested path', () => {
    expect(rs.map((r) => columnValue(r, 'config.optim.lr'))).toEqual([0.01, 0.1, 0.001, undefined]);
    expect(rs.map((r) => columnValue(r, 'eval.acc'))).toEqual([0.7, 0.9, 0.8, undefined]);
    expect(columnValue(rs[1], 'config.model.depth')).toBe(8);
  });
  it('sorting by it sorts', () => {
    expect(sortRuns(rs, 'summary.eval.acc').map((r) => r.id)).toEqual(['a', 'c', 'b', 'd']);
    expect(sortRuns(rs, '-summary.eval.acc').map((r) => r.id)).toEqual(['b', 'c', 'a', 'd']);
    expect(sortRuns(rs, 'config.optim.lr').map((r) => r.id)).toEqual(['c', 'a', 'b', 'd']);
  });
  it('a filter on it keeps the runs that match', () => {
    const ids = (extra: UiFilters['extra']) => filterRuns(rs, { ...EMPTY_FILTERS, extra }).map((r) => r.id);
    expect(ids([{ field: 'summary.eval.acc', op: '>', value: 0.75 }])).toEqual(['b', 'c']);
    expect(ids([{ field: 'config.optim.lr', op: '==', value: '0.01' }])).toEqual(['a']);
    expect(ids([{ field: 'config.optim.lr', op: 'in', values: ['0.1', '0.001'] }])).toEqual(['b', 'c']);
    expect(ids([{ field: 'config.model.depth', op: '<', value: 5 }])).toEqual(['a']);
  });
});
