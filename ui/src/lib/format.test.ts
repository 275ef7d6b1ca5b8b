import { describe, expect, it } from 'vitest';
import { colorFor, flatten, fmtBytes, fmtDuration, fmtNum, PALETTE, prefixOf, withAlpha } from './format';

describe('format', () => {
  it('durations', () => {
    expect(fmtDuration(0)).toBe('0s');
    expect(fmtDuration(61_000)).toBe('1m 01s');
    expect(fmtDuration(3_600_000 * 3 + 60_000)).toBe('3h 01m');
    expect(fmtDuration(-5000)).toBe('-5s');
    expect(fmtDuration(null)).toBe('—');
  });
  it('byte counts', () => {
    expect(fmtBytes(0)).toBe('0 B');
    expect(fmtBytes(999)).toBe('999 B');
    expect(fmtBytes(1500)).toBe('1.5 kB');
    expect(fmtBytes(12_345_678)).toBe('12 MB');
    expect(fmtBytes(2.5e12)).toBe('2.5 TB');
    expect(fmtBytes(undefined)).toBe('—');
  });
  it('numbers', () => {
    expect(fmtNum(3)).toBe('3');
    expect(fmtNum(0.123456789)).toBe('0.12346');
    expect(fmtNum(1e-7)).toBe('1.000e-7');
    expect(fmtNum('NaN')).toBe('NaN');
    expect(fmtNum(undefined)).toBe('—');
  });
  it('flattens config and groups keys by prefix', () => {
    expect(flatten({ a: 1, b: { c: 2, d: { e: 'x' } }, f: [1] })).toEqual([['a', 1], ['b.c', 2], ['b.d.e', 'x'], ['f', [1]]]);
    expect(prefixOf('train/loss')).toBe('train');
    expect(prefixOf('loss')).toBe('');
  });
  it('colours rank_N by N', () => {
    expect(colorFor('rank_3')).toBe(PALETTE[3]);
    expect(withAlpha('#ff0000', 0.5)).toBe('rgba(255, 0, 0, 0.5)');
  });
});
