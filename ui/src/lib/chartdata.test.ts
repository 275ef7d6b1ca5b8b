import { afterEach, describe, expect, it, vi } from 'vitest';
import { Api } from './api';
import { batchedQuery, bucketsPerLine, halve, lineId, loadLines, MAX_SERIES_PER_REQUEST, rangeFor, splitBatch, type LineSource } from './chartdata';
import { bucketsToBand } from './series';

const src = (o: Partial<LineSource> = {}): LineSource => ({
  entity: 'e', project: 'p', run: 'r', key: 'loss', system: false, originMs: 1000, stepRange: [0, 999], name: (w) => w, ...o,
});

describe('chart queries', () => {
  it('asks for as many buckets as pixels over the whole step range', () => {
    expect(rangeFor([src(), src({ stepRange: [10, 1999] })], { buckets: 480.4, xMode: 'step', lineMode: 'mean', range: null }))
      .toEqual({ buckets: 480, min_step: 0, max_step: 1999 });
  });
  it('re-queries only the zoomed steps', () => {
    expect(rangeFor([src()], { buckets: 300, xMode: 'step', lineMode: 'mean', range: [100.4, 200.6] }))
      .toEqual({ buckets: 300, min_step: 100, max_step: 201 });
  });
  it('maps a time zoom to times and to the steps that hold them', () => {
    const band = bucketsToBand([
      { step_min: 0, step_max: 9, time_min: 1000, time_max: 10000, count: 10, min: 0, max: 1, mean: 0, first: 0, last: 0 },
      { step_min: 10, step_max: 19, time_min: 11000, time_max: 20000, count: 10, min: 0, max: 1, mean: 0, first: 0, last: 0 },
      { step_min: 20, step_max: 29, time_min: 21000, time_max: 30000, count: 10, min: 0, max: 1, mean: 0, first: 0, last: 0 },
    ], 'rel', 'mean', 1000);
    const previous = new Map([[lineId('r', 'loss', 'rank_0'), band]]);
    const q = rangeFor([src()], { buckets: 100, xMode: 'rel', lineMode: 'mean', range: [10, 18], previous });
    expect(q).toEqual({ buckets: 100, min_time: 11000, max_time: 19000, min_step: 10, max_step: 19 });
    expect(rangeFor([src()], { buckets: 100, xMode: 'wall', lineMode: 'mean', range: [10, 18] }))
      .toEqual({ buckets: 100, min_time: 10000, max_time: 18000 });
  });
  it('batches the charts of a page into one request over every run and key, and hands each its series', async () => {
    const historyOfRuns = vi.fn(async (_e: string, _p: string, _sys: boolean, runs: string[], keys: string[]) => ({
      missing: [],
      series: runs.flatMap((r) => keys.map((k) => ({ run: r, key: k, writer: 'rank_0', buckets: [{ step_min: 0, step_max: 0, time_min: 0, time_max: 0, count: 1, min: 1, max: 1, mean: 1, first: 1, last: 1 }] }))),
    }));
    const api = { historyOfRuns } as any;
    const o = { buckets: 100, xMode: 'step' as const, lineMode: 'mean' as const, range: null };
    const [a, b] = await Promise.all([
      loadLines(api, [src({ key: 'a' }), src({ key: 'a', run: 'r2' })], o),
      loadLines(api, [src({ key: 'b' })], o),
    ]);
    expect(historyOfRuns).toHaveBeenCalledTimes(1);
    expect(historyOfRuns.mock.calls[0][3]).toEqual(['r', 'r2']);
    expect(historyOfRuns.mock.calls[0][4]).toEqual(['a', 'b']);
    expect(a.map((l) => l.id)).toEqual([lineId('r', 'a', 'rank_0'), lineId('r2', 'a', 'rank_0')]);
    expect(b.map((l) => l.label)).toEqual(['rank_0']);
    await batchedQuery(api, false, 'e', 'p', ['r'], ['c'], [], { buckets: 5 });
    expect(historyOfRuns).toHaveBeenCalledTimes(2);
  });
  it('splits a request that would carry too many series', async () => {
    const historyOfRuns = vi.fn(async () => ({ missing: [], series: [] }));
    const runs = Array.from({ length: 300 }, (_, i) => `r${i}`);
    await batchedQuery({ historyOfRuns } as any, false, 'e', 'p', runs, ['a', 'b', 'c', 'd'], [], { buckets: 5 });
    for (const call of historyOfRuns.mock.calls as unknown as [string, string, boolean, string[], string[]][]) {
      expect(call[3].length * call[4].length).toBeLessThanOrEqual(MAX_SERIES_PER_REQUEST);
    }
    expect((historyOfRuns.mock.calls as unknown as [string, string, boolean, string[]][]).flatMap((c) => c[3])).toEqual(runs);
  });
  it('sends a batch as a few parallel requests of some size', () => {
    const ks = (n: number) => Array.from({ length: n }, (_, i) => `k${i}`);
    expect(splitBatch(['r'], ks(20))).toEqual([[['r'], ks(20).slice(0, 10)], [['r'], ks(20).slice(10)]]);
    expect(splitBatch(['r'], ks(5))).toEqual([[['r'], ks(5)]]);
    const runs = Array.from({ length: 100 }, (_, i) => `r${i}`);
    const parts = splitBatch(runs, ks(12));
    expect(parts.length).toBe(6);
    expect(parts.flatMap(([, k]) => k)).toEqual(ks(12));
    const byRuns = splitBatch(runs, ['a']);
    expect(byRuns.length).toBe(6);
    expect(byRuns.flatMap(([r]) => r)).toEqual(runs);
  });
  it('gives each line fewer buckets when many share a chart, never fewer than asked', () => {
    expect(bucketsPerLine(400, 1)).toBe(400);
    expect(bucketsPerLine(400, 20)).toBe(400);
    expect(bucketsPerLine(400, 100)).toBe(160);
    expect(bucketsPerLine(1200, 40)).toBe(400);
    expect(bucketsPerLine(1200, 1000)).toBe(60);
    expect(bucketsPerLine(40, 1000)).toBe(40);
  });

  it('halves a request (keys, then runs) down to a single (run, key)', () => {
    expect(halve(['r'], ['a', 'b', 'c'])).toEqual([[['r'], ['a', 'b']], [['r'], ['c']]]);
    expect(halve(['r1', 'r2', 'r3'], ['a'])).toEqual([[['r1', 'r2'], ['a']], [['r3'], ['a']]]);
    expect(halve(['r1', 'r2'], [])).toEqual([[['r1'], []], [['r2'], []]]);
    expect(halve(['r'], ['a'])).toBeNull();
    expect(halve(['r'], [])).toBeNull();
  });
});

describe('a batch the server refuses as too large (413)', () => {
  afterEach(() => { vi.unstubAllGlobals(); });

  /** A server of `limit` points and buckets per answer whose runs have `writers(key)` writers per
   * key: it answers 413 past the limit (as docs/api.md "History" says), else one series per writer. */
  function server(limit: number, writers: (key: string) => number) {
    const asked: { runs: string[]; keys: string[]; status: number }[] = [];
    vi.stubGlobal('fetch', async (url: string) => {
      const q = new URL(url, 'http://h').searchParams;
      const runs = q.get('runs')!.split(','), keys = q.get('keys')!.split(','), buckets = Number(q.get('buckets'));
      const points = runs.length * keys.reduce((n, k) => n + writers(k) * buckets, 0);
      const status = points > limit ? 413 : 200;
      asked.push({ runs, keys, status });
      const body = status === 413
        ? { error: { code: 'payload_too_large', message: `history: the answer would hold more than ${limit} points and buckets (${points})` } }
        : { missing: [], series: runs.flatMap((run) => keys.flatMap((key) => Array.from({ length: writers(key) }, (_, w) => ({
          run, key, writer: `rank_${w}`, buckets: [{ step_min: 0, step_max: 0, time_min: 0, time_max: 0, count: 1, min: 1, max: 1, mean: 1, first: 1, last: 1 }],
        })))) };
      return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
    });
    return { api: new Api(''), asked };
  }
  const o = { buckets: 800, xMode: 'step' as const, lineMode: 'mean' as const, range: null };
  const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);

  it('splits it and hands every chart its lines: 12 charts of a run of 512 writers at 800 buckets', async () => {
    const { api, asked } = server(4_000_000, () => 512);
    const charts = await Promise.all(keys.map((key) => loadLines(api, [src({ run: 'big', key })], o)));
    for (const [i, lines] of charts.entries()) {
      expect(lines.length).toBe(512);
      expect(lines.every((l) => l.key === keys[i] && l.run === 'big')).toBe(true);
    }
    // The batch of 12 keys (4.9M buckets) was refused, then asked for as two halves of 6.
    expect(asked.map((a) => [a.keys.length, a.status])).toEqual([[12, 413], [6, 200], [6, 200]]);
  });

  it('splits runs too, and fails only the chart of a single (run, key) still too large, with the bound', async () => {
    const { api, asked } = server(4_000_000, (key) => (key === 'k3' ? 6000 : 512));
    const runs = ['r1', 'r2', 'r3'];
    const settled = await Promise.allSettled(keys.map((key) => loadLines(api, runs.map((run) => src({ run, key })), o)));
    for (const [i, s] of settled.entries()) {
      if (keys[i] === 'k3') {
        expect(s.status).toBe('rejected');
        expect(((s as PromiseRejectedResult).reason as Error).message).toMatch(/more than 4000000 points and buckets/);
      } else {
        expect(s.status).toBe('fulfilled');
        expect((s as PromiseFulfilledResult<unknown[]>).value.length).toBe(3 * 512);
      }
    }
    // k3 was asked for down to each single run; every request that came back held at most the bound.
    expect(asked.filter((a) => a.keys.join() === 'k3' && a.runs.length === 1).map((a) => a.status)).toEqual([413, 413, 413]);
    expect(asked.filter((a) => a.status === 200).every((a) => a.runs.length * a.keys.length * 512 * 800 <= 4_000_000)).toBe(true);
  });
});
