import { afterEach, describe, expect, it, vi } from 'vitest';
import { Api, type MediaRow } from './api';

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

  it('asks for a key with a comma among every key (the server splits keys= on commas) and keeps its rows only', async () => {
    const { api, paths } = answering({ media: [row('a'), row('a,b'), row('b'), row('a,b', 3)], truncated: false });
    const r = await api.media('e', 'p', 'r1', 'a,b');
    expect(paths).toEqual(['/api/v1/runs/e/p/r1/media']);
    expect(r.media.map((m) => [m.key, m.step])).toEqual([['a,b', 0], ['a,b', 3]]);
    expect(r.truncated).toBe(false);
  });
});
