import { describe, expect, it } from 'vitest';
import { decodeState, DEFAULT_STATE, encodeState, linkTo, pageOf, structuredCloneState } from './url';

describe('URL state', () => {
  it('round-trips every field', () => {
    const s = structuredCloneState(DEFAULT_STATE);
    Object.assign(s, {
      entity: 'alice', project: 'my.proj', run: 'k3v9', tab: 'logs', view: '3', groupBy: 'job_type', sort: '-summary.loss',
      columns: ['loss', 'config.lr'], hide: ['a', 'b'], cby: 'optimizer.name', x: 'rel', log: true, smooth: 0.6, agg: true, line: 'last',
      labels: ['rank_0', 'rank_2'], lq: 'error: x&y', stream: 'stderr', rkey: 'train/loss', rank: 'run1/rank_3',
      charts: { 'train/loss': { z: [10, 20.5], h: ['r|train/loss|rank_0'], log: true, sm: 0.5 }, 'sys:gpu.temp': { log: false } },
      full: 'train/loss', at: 1234, hview: 'heatmap', hlog: true, hw: { 'gradients/fc.weight': 'rank_1' },
    });
    s.filters = { jobType: { op: '!=', value: 'worker' }, states: ['crashed'], tags: ['a b'], name: 'ddp', extra: [{ field: 'config.lr', op: '<', value: 1 }] };
    const enc = encodeState(s);
    expect(decodeState(enc)).toEqual(s);
  });
  it('keeps a key or label holding a comma (or backslash) as one item of its list', () => {
    const s = structuredCloneState(DEFAULT_STATE);
    Object.assign(s, {
      entity: 'alice', project: 'p', run: 'k3v9', tab: 'logs', columns: ['summary.acc,top5', 'loss'], labels: ['node,1', 'node\\2'],
      cmp: ['r1', 'r2'], ckeys: ['acc,top5'], hide: ['x'],
    });
    const enc = encodeState(s);
    expect(new URLSearchParams(enc).get('labels')).toBe('node\\,1,node\\\\2');
    expect(decodeState(enc)).toEqual(s);
    expect(decodeState('?labels=rank_0,rank_1').labels).toEqual(['rank_0', 'rank_1']); // links as before
  });
  it('writes nothing for defaults and decodes junk to defaults', () => {
    expect(encodeState(DEFAULT_STATE)).toBe('');
    const d = decodeState('?tab=nope&x=zzz&smooth=7&fx=%7Bbad&stream=x&ch=%7B%22a%22%3A%7B%22z%22%3A%5B5%2C1%5D%2C%22sm%22%3A3%7D%7D&at=-4');
    expect(d.charts).toEqual({});
    expect(d.at).toBe(0);
    expect(d.tab).toBe('overview');
    expect(d.x).toBe('step');
    expect(d.smooth).toBe(0);
    expect(d.filters.extra).toEqual([]);
    expect(d.stream).toBe('');
  });
  it('derives the page', () => {
    expect(pageOf(decodeState(''))).toBe('projects');
    expect(pageOf(decodeState('?p=a/b'))).toBe('workspace');
    expect(pageOf(decodeState('?p=a/b&group=DDP'))).toBe('group');
    expect(pageOf(decodeState('?p=a/b&run=x&tab=system'))).toBe('run');
    expect(decodeState('?p=a/b/c').project).toBe('b/c');
  });
  it('names an artifact page by collection and version; links elsewhere drop them', () => {
    const s = decodeState('?p=a/b&art=mnist.model-1&ver=v3');
    expect(pageOf(s)).toBe('artifact');
    expect([s.art, s.ver]).toEqual(['mnist.model-1', 'v3']);
    expect(decodeState(encodeState(s))).toEqual(s);
    // A version without a collection means nothing.
    expect(decodeState('?p=a/b&ver=v3').ver).toBe('');
    // The run page's Artifacts tab round-trips; a link to an artifact leaves the run and its tab.
    const run = decodeState('?p=a/b&run=x&tab=artifacts');
    expect(run.tab).toBe('artifacts');
    const art = decodeState(linkTo(run, { run: '', art: 'm', ver: 'v0' }).slice(1));
    expect([pageOf(art), art.art, art.ver, art.run, art.tab]).toEqual(['artifact', 'm', 'v0', '', 'overview']);
    // From the artifact page: to a run, to the project (breadcrumb), to another version.
    expect(pageOf(decodeState(linkTo(s, { run: 'r1' }).slice(1)))).toBe('run');
    const home = decodeState(linkTo(s, { run: '', group: '', project: 'b' }).slice(1));
    expect([pageOf(home), home.art, home.ver]).toEqual(['workspace', '', '']);
    expect(decodeState(linkTo(s, { art: 'mnist.model-1', ver: 'v1' }).slice(1)).ver).toBe('v1');
  });
  it('links keep chart options and drop page-specific state', () => {
    const s = decodeState('?p=a/b&run=x&tab=logs&labels=rank_0&x=wall&jt=!worker');
    const l = decodeState(linkTo(s, { run: 'y' }).slice(1));
    expect(l.run).toBe('y');
    expect(l.tab).toBe('overview');
    expect(l.labels).toEqual([]);
    expect(decodeState(linkTo(decodeState('?p=a/b&run=x&tab=ranks&rank=rank_2'), { group: 'G', run: '' }).slice(1)).rank).toBe('');
    expect(l.x).toBe('wall');
    expect(l.filters.jobType).toEqual({ op: '!=', value: 'worker' });
    const other = decodeState(linkTo(s, { project: 'c', run: '' }).slice(1));
    expect(other.filters.jobType).toBeNull();
    // A chart's zoom and the line shown in context belong to their page.
    const z = decodeState('?p=a/b&run=x&ch=%7B%22loss%22%3A%7B%22z%22%3A%5B1%2C2%5D%7D%7D&full=loss&at=5');
    expect(z.charts).toEqual({ loss: { z: [1, 2] } });
    const away = decodeState(linkTo(z, { run: 'y' }).slice(1));
    expect(away.charts).toEqual({});
    expect(away.full).toBe('');
    expect(away.at).toBe(0);
  });
  it('the Histograms tab: view and log scale kept, the per-key writer left with its run', () => {
    const h = decodeState('?p=a/b&run=x&tab=histograms&hv=heatmap&hlog=1&hw=%7B%22gradients%2Fw%22%3A%22rank_1%22%7D');
    expect([h.tab, h.hview, h.hlog, h.hw]).toEqual(['histograms', 'heatmap', true, { 'gradients/w': 'rank_1' }]);
    expect(decodeState(encodeState(h))).toEqual(h);
    const away = decodeState(linkTo(h, { run: 'y' }).slice(1));
    expect([away.hview, away.hlog, away.hw]).toEqual(['heatmap', true, {}]);
    const junk = decodeState('?hv=pie&hw=%5B1%5D&hlog=yes');
    expect([junk.hview, junk.hlog, junk.hw]).toEqual(['bands', false, {}]);
  });
  it('run diff: the compared runs, only-differences and curves in the URL; leaving the page drops them', () => {
    const s = decodeState('?p=alice/proj&cmp=r1,r2,r3&cd=1&ck=loss,val%2Facc&imp=summary.loss');
    expect(pageOf(s)).toBe('compare');
    expect([s.cmp, s.cdiff, s.ckeys, s.imp]).toEqual([['r1', 'r2', 'r3'], true, ['loss', 'val/acc'], 'summary.loss']);
    expect(decodeState(encodeState(s))).toEqual(s);
    const run = decodeState(linkTo(s, { run: 'r2' }).slice(1));
    expect(pageOf(run)).toBe('run');
    expect([run.cmp, run.cdiff, run.ckeys]).toEqual([[], false, []]);
    const ws = decodeState(linkTo(s, { run: '', group: '', project: 'proj' }).slice(1));
    expect(pageOf(ws)).toBe('workspace');
    expect(ws.imp).toBe('summary.loss');
    expect(decodeState(linkTo(s, { project: 'other' }).slice(1)).imp).toBe('');
  });
  it('the metric filter: kept on the pages with one, written only when set, left with its page', () => {
    const s = decodeState('?p=a/b&run=x&tab=charts&mq=train%2Floss%20%26x');
    expect(s.mq).toBe('train/loss &x');
    expect(decodeState(encodeState(s))).toEqual(s);
    for (const q of ['?p=a/b&mq=acc', '?p=a/b&group=G&mq=acc']) expect(decodeState(encodeState(decodeState(q))).mq).toBe('acc');
    expect(encodeState(decodeState('?p=a/b&run=x&tab=charts'))).not.toContain('mq');
    // The Histograms tab shares it (tabs are changed with update(), which keeps it).
    expect(encodeState({ ...s, tab: 'histograms' })).toContain('mq=train%2Floss');
    // A link to another run, group or project leaves it; so do pages without a metric filter.
    expect(decodeState(linkTo(s, { run: 'y' }).slice(1)).mq).toBe('');
    expect(decodeState(linkTo(decodeState('?p=a/b&mq=acc'), { group: 'G' }).slice(1)).mq).toBe('');
    expect(encodeState({ ...decodeState('?p=a/b&mq=acc'), alerts: true })).not.toContain('mq');
  });
  it('the Media tab: key, step and hidden writers in the URL, on the run page only', () => {
    const s = decodeState('?p=a/b&run=x&tab=media&mk=samples%2Fval&mstep=0&mhide=rank_1,node%5C,2');
    expect([s.mkey, s.mstep, s.mhide]).toEqual(['samples/val', 0, ['rank_1', 'node,2']]);
    expect(decodeState(encodeState(s))).toEqual(s);
    const big = { ...s, mstep: 123456789012 };
    expect(decodeState(encodeState(big)).mstep).toBe(123456789012);
    // Defaults (the first key, the latest step, every writer) are not written.
    expect(encodeState(decodeState('?p=a/b&run=x&tab=media'))).toBe('?p=a%2Fb&run=x&tab=media');
    // Junk is the default.
    for (const bad of ['', 'x', '1.5', 'NaN', '1e400', ' ']) expect(decodeState(`?p=a/b&run=x&mstep=${bad}`).mstep).toBeNull();
    expect(decodeState('?p=a/b&run=x&mstep=-3').mstep).toBe(-3);
    // Another run: the choices stay with their run.
    const away = decodeState(linkTo(s, { run: 'y' }).slice(1));
    expect([away.mkey, away.mstep, away.mhide]).toEqual(['', null, []]);
    expect(encodeState({ ...s, run: '' })).not.toMatch(/mk=|mstep|mhide/);
  });
  it('the alerts page: state and level filters in the URL, defaults not written', () => {
    const s = decodeState('?p=a/b&alerts=1&ast=resolved&alv=WARN');
    expect([pageOf(s), s.ast, s.alv]).toEqual(['alerts', 'resolved', 'WARN']);
    expect(decodeState(encodeState(s))).toEqual(s);
    const all = { ...s, ast: 'all' as const, alv: '' as const };
    expect(encodeState(all)).toBe('?p=a%2Fb&alerts=1&ast=all');
    expect(decodeState(encodeState(all))).toEqual(all);
    expect(encodeState(decodeState('?p=a/b&alerts=1'))).toBe('?p=a%2Fb&alerts=1');
    expect(encodeState({ ...s, ast: 'open', alv: '' })).toBe('?p=a%2Fb&alerts=1');
    const junk = decodeState('?p=a/b&alerts=1&ast=closed&alv=warn');
    expect([junk.ast, junk.alv]).toEqual(['open', '']);
    // Back to the runs, or to a run: the filters stay with the alerts page.
    expect(linkTo(s, { alerts: false })).toBe('/?p=a%2Fb');
    const run = decodeState(linkTo(s, { run: 'r1', alerts: false, tab: 'alerts' }).slice(1));
    expect([run.ast, run.alv]).toEqual(['open', '']);
  });
});
