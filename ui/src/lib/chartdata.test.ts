import { describe, expect, it, vi } from 'vitest';
import { batchedQuery, lineId, loadLines, rangeFor, type LineSource } from './chartdata';
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
  it('batches the charts of one run into one request and hands each its series', async () => {
    const history = vi.fn(async (_e: string, _p: string, _r: string, keys: string[]) =>
      keys.map((k) => ({ key: k, writer: 'rank_0', buckets: [{ step_min: 0, step_max: 0, time_min: 0, time_max: 0, count: 1, min: 1, max: 1, mean: 1, first: 1, last: 1 }] })));
    const api = { history, system: vi.fn() } as any;
    const o = { buckets: 100, xMode: 'step' as const, lineMode: 'mean' as const, range: null };
    const [a, b] = await Promise.all([
      loadLines(api, [src({ key: 'a' })], o),
      loadLines(api, [src({ key: 'b' })], o),
    ]);
    expect(history).toHaveBeenCalledTimes(1);
    expect(history.mock.calls[0][3]).toEqual(['a', 'b']);
    expect(a.map((l) => l.id)).toEqual([lineId('r', 'a', 'rank_0')]);
    expect(b.map((l) => l.label)).toEqual(['rank_0']);
    await batchedQuery(api, false, 'e', 'p', 'r', ['c'], [], { buckets: 5 });
    expect(history).toHaveBeenCalledTimes(2);
  });
});
