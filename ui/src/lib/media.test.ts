import { describe, expect, it } from 'vitest';
import type { MediaRow, SeriesInfo } from './api';
import { cellSortKey, keysOfType, mediaCell, setAt, setsAtOrBefore, sortTableRows, stepAtOrBefore, stepsOf, writersOf } from './media';

const row = (writer: string, step: number, index = 0, key = 'samples'): MediaRow => ({
  key, writer, step, index, time_ms: 0, type: 'image', mime: 'image/png', sha256: `${writer}-${step}-${index}`,
  size: 1, caption: '', uploaded: true, url: `/m/${writer}/${step}/${index}`,
});
const info = (key: string, type: string, writer = 'w'): SeriesInfo => ({ key, writer, type, count: 1, min_step: 0, max_step: 0 });

describe('media helpers', () => {
  it('steps of rows: distinct, ascending', () => {
    expect(stepsOf([row('a', 5), row('a', 1), row('b', 5), row('a', 3, 1)])).toEqual([1, 3, 5]);
    expect(stepsOf([])).toEqual([]);
  });

  it('the last step at or before a chosen one', () => {
    const steps = [0, 2, 4, 10];
    expect(stepAtOrBefore(steps, 4)).toBe(4);
    expect(stepAtOrBefore(steps, 3)).toBe(2);
    expect(stepAtOrBefore(steps, 100)).toBe(10);
    expect(stepAtOrBefore(steps, 0)).toBe(0);
    expect(stepAtOrBefore(steps, -1)).toBeNull();
    expect(stepAtOrBefore([5], 4)).toBeNull();
    expect(stepAtOrBefore([], 4)).toBeNull();
    // Large and negative steps, every index.
    const many = Array.from({ length: 1000 }, (_, i) => i * 3 - 30);
    for (let s = -40; s < 3000; s += 7) {
      const want = [...many].reverse().find((x) => x <= s) ?? null;
      expect(stepAtOrBefore(many, s)).toBe(want);
    }
  });

  it('writers in natural order; a set by index', () => {
    expect(writersOf([row('rank_10', 0), row('rank_2', 0), row('rank_2', 1)])).toEqual(['rank_2', 'rank_10']);
    const rows = [row('a', 1, 1), row('a', 1, 0), row('b', 1, 0), row('a', 2, 0)];
    expect(setAt(rows, 'a', 1).map((m) => m.index)).toEqual([0, 1]);
    expect(setAt(rows, 'a', 3)).toEqual([]);
  });

  it('per writer, the set at its last step at or before the chosen one', () => {
    // rank_0 logs at 0, 2, 4 (two images each); rank_1 at 3 only.
    const rows = [0, 2, 4].flatMap((s) => [row('rank_0', s, 0), row('rank_0', s, 1)]).concat([row('rank_1', 3)]);
    const at = (s: number) => setsAtOrBefore(rows, s).map((w) => [w.writer, w.step, w.set.map((m) => m.sha256)]);
    expect(at(4)).toEqual([['rank_0', 4, ['rank_0-4-0', 'rank_0-4-1']], ['rank_1', 3, ['rank_1-3-0']]]);
    expect(at(3)).toEqual([['rank_0', 2, ['rank_0-2-0', 'rank_0-2-1']], ['rank_1', 3, ['rank_1-3-0']]]);
    expect(at(1)).toEqual([['rank_0', 0, ['rank_0-0-0', 'rank_0-0-1']], ['rank_1', null, []]]);
    expect(at(-5)).toEqual([['rank_0', null, []], ['rank_1', null, []]]);
    expect(setsAtOrBefore([], 3)).toEqual([]);
  });

  it('the keys of a type over several runs, each once', () => {
    const a = [info('samples', 'image', 'rank_0'), info('samples', 'image', 'rank_1'), info('loss', 'scalar'), info('clip', 'audio')];
    const b = [info('masks/10', 'image'), info('masks/2', 'image'), info('samples', 'image')];
    expect(keysOfType([a, b], 'image')).toEqual(['masks/2', 'masks/10', 'samples']);
    expect(keysOfType([a], 'audio')).toEqual(['clip']);
    expect(keysOfType([], 'image')).toEqual([]);
  });

  it('a media cell of a table as a row of the table; other cells are not', () => {
    const table = { ...row('rank_0', 4, 0, 'gallery'), type: 'table' as const };
    const cell = { _type: 'image', sha256: 'ab', size: 10, mime: 'image/png', width: 6, height: 2, caption: 'g1', url: '/m/ab?table=t', uploaded: true };
    expect(mediaCell(cell, table)).toEqual({
      key: 'gallery', writer: 'rank_0', step: 4, index: 0, time_ms: 0, type: 'image', mime: 'image/png', sha256: 'ab',
      size: 10, caption: 'g1', uploaded: true, url: '/m/ab?table=t', width: 6, height: 2, duration_ms: 0,
    });
    expect(mediaCell({ ...cell, uploaded: undefined }, table)?.uploaded).toBe(false);
    for (const other of [null, 3, 'Image', [cell], { ...cell, _type: 'table' }, { ...cell, _type: 'image-file' }, { ...cell, url: undefined }, {}]) {
      expect(mediaCell(other, table)).toBeNull();
    }
  });

  it('a table cell sorts by its value, a media cell by its caption', () => {
    expect([3, null, 'b', true, { _type: 'image', caption: 'z' }, { a: 1 }].map(cellSortKey))
      .toEqual([3, null, 'b', 1, 'z', '{"a":1}']);
    expect(cellSortKey(undefined)).toBeNull();
  });

  it('a table page sorts numbers (±Infinity among them), then "NaN", then strings, then nulls, in either direction, stably', () => {
    // Column 1 mixes what the API sends: numbers, "NaN", "Infinity", "-Infinity", text, null.
    const rows = [
      ['a', 2], ['b', 'NaN'], ['c', 'x'], ['d', null], ['e', -1], ['f', 'Infinity'], ['g', 'NaN'], ['h', 10],
      ['i', '-Infinity'], ['j', 'B'], ['k', 2], ['l', true], ['m', { _type: 'image', caption: 'A' }], ['n', undefined],
    ];
    const ids = (rs: unknown[][]) => rs.map((r) => r[0]).join('');
    expect(ids(sortTableRows(rows, 1, false))).toBe('ielakhfbgmjcdn');
    expect(ids(sortTableRows(rows, 1, true))).toBe('fhaklei' + 'bg' + 'cjm' + 'dn');
    // The same rows in another order sort the same (up to ties): the order is consistent.
    const shuffled = [...rows].reverse();
    expect(ids(sortTableRows(shuffled, 1, false))).toBe('ielkahfgbmjcnd');
    expect(ids(rows)).toBe('abcdefghijklmn'); // the page's rows are left as they were
  });
});
