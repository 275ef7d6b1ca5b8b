import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { colorFor, flatten, fmtBytes, fmtDuration, fmtNum, fmtRelTick, fmtTick, fmtTooltipX, PALETTE, prefixOf, signalOfExit, styleAt, withAlpha } from './format';

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
  it('20 colours, then dashes', () => {
    expect(PALETTE.length).toBe(20);
    expect(new Set(PALETTE).size).toBe(20);
    expect(styleAt(3)).toEqual({ color: PALETTE[3], dash: [] });
    expect(styleAt(23).color).toBe(PALETTE[3]);
    expect(styleAt(23).dash.length).toBeGreaterThan(0);
  });
  it('axis ticks: short, and distinct at their increment', () => {
    expect(fmtTick(6e-4, 1e-4)).toBe('6e-4');
    expect(fmtTick(6.5e-4, 5e-5)).toBe('6.5e-4');
    expect(fmtTick(1e-7, 1e-7)).toBe('1e-7');
    expect(fmtTick(3.2e9, 1e8)).toBe('3.2G');
    expect(fmtTick(1e9, 5e8)).toBe('1G');
    expect(fmtTick(12000, 2000)).toBe('12k');
    expect(fmtTick(0.25, 0.05)).toBe('0.25');
    expect(fmtTick(1500, 500)).toBe('1500');
    expect(fmtTick(0, 0.1)).toBe('0');
    expect(fmtTick(-0.3, 0.1)).toBe('-0.3');
    const ticks = [0.5000, 0.5002, 0.5004].map((v) => fmtTick(v, 0.0002));
    expect(new Set(ticks).size).toBe(3);
    expect([1, 1.25, 1.5, 1.75, 2].map((v) => fmtTick(v, 0.25))).toEqual(['1', '1.25', '1.5', '1.75', '2']);
    expect(fmtTick(2.5e9, 2.5e8)).toBe('2.5G');
    expect(fmtTick(2.75e9, 2.5e8)).toBe('2.75G');
  });
  it('relative-time ticks stay distinct on short runs', () => {
    expect([0, 0.2, 0.4, 0.6].map((s) => fmtRelTick(s, 0.2))).toEqual(['0s', '0.2s', '0.4s', '0.6s']);
    expect(fmtRelTick(90, 30)).toBe('1m 30s');
    expect(fmtRelTick(120, 60)).toBe('2m');
    expect(fmtRelTick(7200, 3600)).toBe('2h');
  });
  it('names the signal behind an exit code', () => {
    expect(signalOfExit(137)).toBe('SIGKILL');
    expect(signalOfExit(143)).toBe('SIGTERM');
    expect(signalOfExit(1)).toBeNull();
    expect(signalOfExit(null)).toBeNull();
  });
});

describe("the chart tooltip's x value", () => {
  // Node reads TZ again whenever it is set (vi.stubEnv sets process.env): 5 hours behind UTC in
  // January, 4 in July.
  beforeAll(() => { vi.stubEnv('TZ', 'America/New_York'); });
  afterAll(() => { vi.unstubAllEnvs(); });
  it('a step as a number', () => {
    expect(fmtTooltipX(1200.4, 'step')).toBe('step 1200');
    expect(fmtTooltipX(7, 'step')).toBe('step 7');
  });
  it('a relative time reads like the axis, with every second (to the ms under a minute)', () => {
    expect(fmtTooltipX(7265.4, 'rel')).toBe('2h 01m 05s');
    expect(fmtTooltipX(65, 'rel')).toBe('1m 05s');
    expect(fmtTooltipX(3600, 'rel')).toBe('1h 00m 00s');
    expect(fmtTooltipX(90000, 'rel')).toBe('25h 00m 00s');
    expect(fmtTooltipX(7.25, 'rel')).toBe('7.25s');
    expect(fmtTooltipX(0.1234567, 'rel')).toBe('0.123s');
    expect(fmtTooltipX(0, 'rel')).toBe('0s');
    expect(fmtTooltipX(-75, 'rel')).toBe('-1m 15s');
  });
  it('a wall time with its date, in local time; a nearby point of the same day by its time only', () => {
    const x = Date.UTC(2026, 0, 2, 3, 4, 5) / 1000;
    expect(fmtTooltipX(x, 'wall')).toBe('2026-01-01 22:04:05');
    expect(fmtTooltipX(x + 60, 'wall', x)).toBe('22:05:05');
    expect(fmtTooltipX(x + 7200, 'wall', x)).toBe('2026-01-02 00:04:05');
  });
});
