import { describe, expect, it } from 'vitest';
import { decodeState, DEFAULT_STATE, encodeState, linkTo, pageOf, structuredCloneState } from './url';

describe('URL state', () => {
  it('round-trips every field', () => {
    const s = structuredCloneState(DEFAULT_STATE);
    Object.assign(s, {
      entity: 'alice', project: 'my.proj', run: 'k3v9', tab: 'logs', view: '3', groupBy: 'job_type', sort: '-summary.loss',
      columns: ['loss', 'acc'], selected: ['a', 'b'], x: 'rel', log: true, smooth: 0.6, agg: true, line: 'last',
      labels: ['rank_0', 'rank_2'], lq: 'error: x&y', stream: 'stderr', rkey: 'train/loss', rank: 'run1/rank_3',
    });
    s.filters = { jobType: { op: '!=', value: 'worker' }, states: ['crashed'], tags: ['a b'], name: 'ddp', extra: [{ field: 'config.lr', op: '<', value: 1 }] };
    const enc = encodeState(s);
    expect(decodeState(enc)).toEqual(s);
  });
  it('writes nothing for defaults and decodes junk to defaults', () => {
    expect(encodeState(DEFAULT_STATE)).toBe('');
    const d = decodeState('?tab=nope&x=zzz&smooth=7&fx=%7Bbad&stream=x');
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
  });
});
