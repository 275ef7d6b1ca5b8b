import { describe, expect, test } from 'vitest';
import { diffCellTexts, diffCount, diffRows, fullText, valueId, visibleRows } from './rundiff';

describe('diffRows', () => {
  test('nested keys are flattened with dots and aligned across runs', () => {
    const rows = diffRows([
      { lr: 0.1, opt: { name: 'adam', betas: [0.9, 0.999] }, model: 'resnet' },
      { lr: 0.01, opt: { name: 'adam', betas: [0.9, 0.999] }, model: 'resnet' },
    ]);
    expect(rows.map((r) => r.key)).toEqual(['lr', 'model', 'opt.betas', 'opt.name']);
    const by = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(by.lr.differs).toBe(true);
    expect(by.lr.values).toEqual([0.1, 0.01]);
    expect(by['opt.name'].differs).toBe(false);
    expect(by['opt.betas'].differs).toBe(false);
    expect(by.model.differs).toBe(false);
  });

  test('a nested key that differs deep down is highlighted, its siblings not', () => {
    const rows = diffRows([
      { opt: { sched: { warmup: 100, kind: 'cos' } } },
      { opt: { sched: { warmup: 500, kind: 'cos' } } },
      { opt: { sched: { warmup: 100, kind: 'cos' } } },
    ]);
    const by = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(by['opt.sched.warmup'].differs).toBe(true);
    expect(by['opt.sched.kind'].differs).toBe(false);
  });

  test('missing values: a key one run lacks differs, and is undefined in its column', () => {
    const rows = diffRows([{ a: 1, b: 2 }, { a: 1 }, null]);
    const by = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(by.a.values).toEqual([1, 1, undefined]);
    expect(by.a.differs).toBe(true);
    expect(by.b.values).toEqual([2, undefined, undefined]);
    expect(by.b.differs).toBe(true);
    // null is a value, not a missing key.
    const nul = diffRows([{ a: null }, {}]);
    expect(nul[0].differs).toBe(true);
    expect(diffRows([{ a: null }, { a: null }])[0].differs).toBe(false);
  });

  test('equal values in other spellings are equal: key order of objects, 1 and 1.0; types are not', () => {
    expect(valueId({ x: 1, y: 2 })).toBe(valueId({ y: 2, x: 1.0 }));
    expect(valueId(1)).not.toBe(valueId('1'));
    expect(valueId(true)).not.toBe(valueId(1));
    expect(valueId(NaN)).not.toBe(valueId(null));
    expect(diffRows([{ a: [1, { b: 2, c: 3 }] }, { a: [1, { c: 3, b: 2 }] }])[0].differs).toBe(false);
    expect(diffRows([{ a: [1, 2] }, { a: [2, 1] }])[0].differs).toBe(true);
  });

  test('natural key order; only differences; counts', () => {
    const rows = diffRows([{ l10: 1, l9: 1, l1: 1 }, { l10: 2, l9: 1, l1: 1 }]);
    expect(rows.map((r) => r.key)).toEqual(['l1', 'l9', 'l10']);
    expect(visibleRows(rows, true).map((r) => r.key)).toEqual(['l10']);
    expect(visibleRows(rows, false)).toHaveLength(3);
    expect(diffCount(rows)).toEqual({ differ: 1, total: 3 });
  });

  test('one run: nothing differs', () => {
    expect(diffRows([{ a: 1, b: { c: 2 } }]).every((r) => !r.differs)).toBe(true);
  });
});

describe('diffCellTexts', () => {
  test('values that differ past 5 significant digits are written in full, so the row shows how it differs', () => {
    const [loss, lr, model] = diffRows([{ lr: 0.123456, model: 'a', loss: 2.5 }, { lr: 0.123459, model: 'b', loss: 2.5 }]);
    expect(diffCellTexts(lr)).toEqual(['0.123456', '0.123459']);
    expect(diffCellTexts(model)).toEqual(['a', 'b']);
    expect(diffCellTexts(loss)).toEqual(['2.5', '2.5']);
  });
  test('short texts stay when they already tell the values apart; a missing value is a dash', () => {
    const [lr] = diffRows([{ lr: 0.1234567 }, { lr: 0.2 }, {}]);
    expect(diffCellTexts(lr)).toEqual(['0.12346', '0.2', '—']);
    const [big] = diffRows([{ n: 12345678.5 }, { n: 12345679.5 }]);
    expect(diffCellTexts(big)).toEqual(['12345678.5', '12345679.5']);
    expect(fullText({ a: 1 })).toBe('{"a":1}');
  });
});
