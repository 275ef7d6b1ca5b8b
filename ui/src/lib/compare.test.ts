import { describe, expect, test } from 'vitest';
import {
  applyBrushes, brushFromUnits, brushUnits, cloneCompare, decodeCompare, defaultAxes, defaultColor, describeBrush, encodeCompare,
  fieldsOf, fieldValue, fmtTick, inBrush, kindOf, makeAxis, makeColorScale, niceTicks, ramp,
} from './compare';
import type { Run } from './filters';
import { decodeState, encodeState } from './url';

function run(name: string, config: Record<string, unknown>, summary: Record<string, unknown> = {}): Run {
  return {
    id: name, entity: 'e', project: 'p', name, group: '', job_type: '', tags: [], host: '', config, summary, state: 'finished',
    exit_code: 0, created_ms: 0, updated_ms: 0, heartbeat_ms: 0, finished_ms: 0, runtime_ms: 0, writer_count: 1,
  };
}

const RUNS = [
  run('a', { lr: 0.001, batch_size: 32, optimizer: 'adam', amp: true, model: { depth: 18 } }, { val_loss: 0.5, note: 'x' }),
  run('b', { lr: 0.01, batch_size: 64, optimizer: 'sgd', amp: false, model: { depth: 50 } }, { val_loss: 0.3 }),
  run('c', { lr: 0.1, batch_size: 64, optimizer: 'adam', amp: true, model: { depth: 50 } }, { val_loss: 0.9, val_acc: null }),
  run('d', { lr: 0.03, batch_size: 128, optimizer: 'lamb', 'dotted.key': 7 }, { val_loss: 'NaN' }),
];

describe('fields', () => {
  test('values: nested and dotted config keys, summary keys; missing, null and objects are undefined', () => {
    expect(fieldValue(RUNS[0], 'config.model.depth')).toBe(18);
    expect(fieldValue(RUNS[3], 'config.dotted.key')).toBe(7);
    expect(fieldValue(RUNS[0], 'config.model')).toBeUndefined();
    expect(fieldValue(RUNS[0], 'summary.val_loss')).toBe(0.5);
    expect(fieldValue(RUNS[2], 'summary.val_acc')).toBeUndefined();
    expect(fieldValue(RUNS[3], 'config.amp')).toBeUndefined();
    expect(fieldValue(RUNS[0], 'lr')).toBeUndefined();
  });

  test('fieldsOf: config first, typed, counted', () => {
    const fs = fieldsOf(RUNS);
    const by = Object.fromEntries(fs.map((f) => [f.key, f]));
    expect(fs.map((f) => f.key)).toEqual([
      'config.amp', 'config.batch_size', 'config.dotted.key', 'config.lr', 'config.model.depth', 'config.optimizer',
      'summary.note', 'summary.val_loss']);
    expect(by['config.lr'].kind).toBe('num');
    expect(by['config.optimizer'].kind).toBe('cat');
    expect(by['config.amp'].kind).toBe('bool');
    expect(by['config.amp'].runs).toBe(3);
    // 'NaN' as a string is no value: val_loss stays a number.
    expect(by['summary.val_loss'].kind).toBe('num');
    expect(by['summary.val_loss'].runs).toBe(3);
    expect(fieldValue(RUNS[3], 'summary.val_loss')).toBeUndefined();
    expect(kindOf(RUNS, 'summary.note')).toBe('cat');
  });
});

describe('axes', () => {
  test('numeric axis: linear, its ends at 0 and 1, missing values null, nice ticks', () => {
    const ax = makeAxis('config.batch_size', RUNS);
    expect(ax.kind).toBe('num');
    expect(ax.log).toBe(false);
    expect(ax.pos(32)).toBe(0);
    expect(ax.pos(128)).toBe(1);
    expect(ax.pos(80)).toBeCloseTo(0.5);
    expect(ax.pos('x')).toBeNull();
    expect(ax.pos(undefined)).toBeNull();
    expect(ax.invert(0.5)).toBeCloseTo(80);
    expect(ax.ticks.map((t) => t.label)).toEqual(['40', '60', '80', '100', '120']);
  });

  test('numeric axis over two decades or more is logarithmic', () => {
    const ax = makeAxis('config.lr', RUNS);
    expect(ax.log).toBe(true);
    expect(ax.pos(0.01)).toBeCloseTo(0.5);
    expect(ax.invert(0.5)).toBeCloseTo(0.01);
    expect(ax.ticks.map((t) => t.label)).toEqual(['0.001', '0.01', '0.1']);
  });

  test('a single value is widened; categories sorted; booleans false then true', () => {
    const one = makeAxis('config.model.depth', [RUNS[0]]);
    expect(one.domain[0]).toBeLessThan(18);
    expect(one.pos(18)).toBeCloseTo(0.5);
    const cat = makeAxis('config.optimizer', RUNS);
    expect(cat.cats).toEqual(['adam', 'lamb', 'sgd']);
    expect(cat.pos('lamb')).toBeCloseTo(0.5);
    expect(cat.pos('rmsprop')).toBeNull();
    const b = makeAxis('config.amp', RUNS);
    expect(b.cats).toEqual(['false', 'true']);
    expect(b.pos(true)).toBeCloseTo(0.75);
    expect(b.pos(undefined)).toBeNull();
  });

  test('niceTicks', () => {
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(-3, 7, 5)).toEqual([-2, 0, 2, 4, 6]);
    expect(niceTicks(5, 5)).toEqual([5]);
  });
});

describe('brushes', () => {
  test('a numeric brush from positions, back to positions, and the runs inside it', () => {
    const ax = makeAxis('config.batch_size', RUNS);
    const b = brushFromUnits(ax, 0.5, 0.2)!;
    expect(b[0]).toBeCloseTo(51.2);
    expect(b[1]).toBeCloseTo(80);
    const u = brushUnits(ax, b)!;
    expect(u[0]).toBeCloseTo(0.2);
    expect(u[1]).toBeCloseTo(0.5);
    expect(applyBrushes(RUNS, { 'config.batch_size': b }).map((r) => r.name)).toEqual(['b', 'c']);
  });

  test('a categorical brush covers the categories whose position it spans', () => {
    const ax = makeAxis('config.optimizer', RUNS);
    expect(brushFromUnits(ax, 0, 0.55)).toEqual(['adam', 'lamb']);
    // A brush over a whole number axis keeps the runs at both ends, whatever their digits.
    const ends = [run('lo', { x: -0.1234564 }), run('mid', { x: 0.05 }), run('hi', { x: 0.1234564 })];
    const whole = brushFromUnits(makeAxis('config.x', ends), 0, 1)!;
    expect(applyBrushes(ends, { 'config.x': whole }).map((r) => r.name)).toEqual(['lo', 'mid', 'hi']);
    // A config string that reads like a non-finite number is still a value; the server's
    // spellings of non-finite summaries are not.
    expect(fieldValue(run('s', { act: 'inf' }), 'config.act')).toBe('inf');
    expect(brushFromUnits(ax, 0.01, 0.1)).toBeNull();
    expect(brushUnits(ax, ['lamb'])).toEqual([1 / 3, 2 / 3]);
    expect(brushUnits(ax, ['nope'])).toBeNull();
    expect(brushUnits(ax, [1, 2])).toBeNull();
    expect(applyBrushes(RUNS, { 'config.optimizer': ['lamb', 'sgd'] }).map((r) => r.name)).toEqual(['b', 'd']);
  });

  test('brushes AND together; a run without the field is outside; no brush: the same array', () => {
    expect(applyBrushes(RUNS, {})).toBe(RUNS);
    expect(applyBrushes(RUNS, undefined)).toBe(RUNS);
    const both = { 'config.optimizer': ['adam'], 'config.amp': ['true'], 'summary.val_loss': [0.4, 1] as [number, number] };
    expect(applyBrushes(RUNS, both).map((r) => r.name)).toEqual(['a', 'c']);
    expect(applyBrushes(RUNS, { 'summary.val_loss': [0, 0.6] }).map((r) => r.name)).toEqual(['a', 'b']);
    expect(applyBrushes(RUNS, { 'config.amp': ['false'] }).map((r) => r.name)).toEqual(['b']);
    expect(inBrush(undefined, ['x'])).toBe(false);
    expect(inBrush('3', [1, 5])).toBe(false);
    expect(inBrush(1, [1, 5])).toBe(true);
    expect(describeBrush([0.001, 0.01])).toBe('0.001 – 0.01');
    expect(describeBrush(['adam', 'sgd'])).toBe('adam | sgd');
    expect(describeBrush([0.0001, 0.00025])).toBe('1e-4 – 2.5e-4');
    expect(fmtTick(1234567)).toBe('1.235e6');
    expect(fmtTick(0)).toBe('0');
  });
});

describe('colour', () => {
  test('numeric: a ramp from low to high, missing grey (-1)', () => {
    const cs = makeColorScale('summary.val_loss', RUNS.slice(0, 3))!;
    expect(cs.kind).toBe('num');
    expect(cs.range).toEqual([0.3, 0.9]);
    expect(cs.bin(RUNS[1])).toBe(0);
    expect(cs.bin(RUNS[2])).toBe(cs.colors.length - 1);
    expect(cs.bin(run('z', {}))).toBe(-1);
    expect(ramp(0)).toBe('#440154');
    expect(ramp(1)).toBe('#fde725');
    expect(makeColorScale('', RUNS)).toBeNull();
  });

  test('categorical: a colour per category and a legend', () => {
    const cs = makeColorScale('config.optimizer', RUNS)!;
    expect(cs.legend!.map((l) => l.label)).toEqual(['adam', 'lamb', 'sgd']);
    expect(cs.bin(RUNS[1])).toBe(2);
    expect(cs.colors[cs.bin(RUNS[0])]).toBe(cs.legend![0].color);
  });

  test('defaults: varying config fields (fewest values first, no seed) then the colour metric', () => {
    const runs = RUNS.map((r, i) => ({ ...r, config: { ...r.config, seed: i } }));
    const fs = fieldsOf(runs);
    expect(defaultColor(fs)).toBe('summary.val_loss');
    expect(defaultAxes(runs, fs, 'summary.val_loss', 3)).toEqual(['config.amp', 'config.model.depth', 'config.batch_size', 'summary.val_loss']);
  });
});

describe('URL', () => {
  test('encode/decode round trip, through the app state', () => {
    const c = {
      pc: { axes: ['config.lr', 'config.optimizer', 'summary.val_loss'], color: 'summary.val_loss', scope: '' as const,
        brushes: { 'config.lr': [0.001, 0.01] as [number, number], 'config.optimizer': ['adam'] } },
      sc: { x: 'config.lr', y: 'summary.val_loss', color: 'config.batch_size', scope: 'visible' as const },
    };
    const enc = encodeCompare(c);
    expect(decodeCompare(enc.pc!, enc.sc!)).toEqual(c);
    const s = decodeState('?p=e/p');
    s.panels = cloneCompare(c);
    const url = encodeState(s);
    expect(url).toContain('pc=');
    expect(decodeState(url).panels).toEqual(c);
    // Closed panels: nothing in the URL.
    expect(encodeCompare({})).toEqual({});
    expect(encodeState(decodeState('?p=e/p'))).toBe('?p=e%2Fp');
  });

  test('an open panel without axes stays open; what does not parse is left out', () => {
    expect(decodeCompare('{"a":[]}', null)).toEqual({ pc: { axes: [], color: '', brushes: {}, scope: '' } });
    expect(decodeCompare('not json', null).pc).toEqual({ axes: [], color: '', brushes: {}, scope: '' });
    const d = decodeCompare(JSON.stringify({ a: ['config.lr', 'bogus', 3, 'config.lr'], c: 7, b: { 'config.lr': [0.1, 0.01], 'config.x': [1, 2], 'summary.y': 'z' } }), '{"x":"nope"}');
    expect(d.pc).toEqual({ axes: ['config.lr'], color: '', brushes: { 'config.lr': [0.01, 0.1] }, scope: '' });
    expect(d.sc).toEqual({ x: '', y: '', color: '', scope: '' });
    expect(decodeCompare(null, null)).toEqual({});
  });

  test('a brush on an axis that is gone is not encoded', () => {
    const enc = encodeCompare({ pc: { axes: ['config.a'], color: '', scope: '', brushes: { 'config.b': [1, 2] } } });
    expect(JSON.parse(enc.pc!)).toEqual({ a: ['config.a'] });
  });
});
