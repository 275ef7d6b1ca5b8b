import { afterEach, describe, expect, it, vi } from 'vitest';
import { Api, type MediaRow } from './api';
import { splitListParam } from './listParam';

const row = (key: string, step = 0): MediaRow => ({
  key, writer: 'rank_0', step, index: 0, time_ms: 0, type: 'image', mime: 'image/png', sha256: 'a'.repeat(64), size: 1,
  caption: key, uploaded: true, url: '/x',
});

/** An Api whose fetch answers `body` and records the paths asked for. */
function answering(body: unknown) {
  const paths: string[] = [];
  vi.stubGlobal('fetch', async (url: string) => {
    paths.push(url);
    return new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } });
  });
  return { api: new Api(''), paths };
}

afterEach(() => { vi.unstubAllGlobals(); });

describe('api.media', () => {
  it('asks for one key and keeps only its rows, saying when the server cut the list', async () => {
    const { api, paths } = answering({ media: [row('samples'), row('samples', 1)], truncated: true });
    const r = await api.media('e', 'p', 'r1', 'samples');
    expect(paths).toEqual(['/api/v1/runs/e/p/r1/media?keys=samples']);
    expect(r.media.map((m) => m.step)).toEqual([0, 1]);
    expect(r.truncated).toBe(true);
  });

  it('asks for a key with a comma by name, the comma escaped, and keeps its rows only', async () => {
    const { api, paths } = answering({ media: [row('a,b'), row('a,b', 3)], truncated: false });
    const r = await api.media('e', 'p', 'r1', 'a,b');
    expect(paths).toEqual(['/api/v1/runs/e/p/r1/media?keys=a%5C%2Cb']);
    expect(r.media.map((m) => [m.key, m.step])).toEqual([['a,b', 0], ['a,b', 3]]);
    expect(r.truncated).toBe(false);
  });
});

describe('list parameters', () => {
  it('names keys, writers, labels and runs with commas as one item each in every list request', async () => {
    const { api, paths } = answering({ series: [], histograms: [], lines: [], missing: [], runs: [] });
    const range = {};
    await api.history('e', 'p', 'r', ['acc,top5', 'loss'], ['node,1'], range);
    await api.histograms('e', 'p', 'r', ['grad,w'], ['node,1'], range);
    await api.system('e', 'p', 'r', ['gpu.0.temp'], ['node,1'], range);
    await api.historyOfRuns('e', 'p', false, ['r1', 'r2'], ['acc,top5'], ['node,1'], range);
    const lists = paths.map((u) => Object.fromEntries([...new URL(u, 'http://x').searchParams]));
    expect(lists[0].keys).toBe('acc\\,top5,loss');
    expect(lists.map((q) => [q.keys, q.writers ?? q.labels].map((v) => splitListParam(v)))).toEqual([
      [['acc,top5', 'loss'], ['node,1']],
      [['grad,w'], ['node,1']],
      [['gpu.0.temp'], ['node,1']],
      [['acc,top5'], ['node,1']],
    ]);
  });
});
