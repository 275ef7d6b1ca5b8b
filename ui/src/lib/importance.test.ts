import { describe, expect, test } from 'vitest';
import { rng } from './forest';
import { configFields, metricValue, MIN_RUNS, numericSummaryKeys, paramImportance, type ImportanceInput } from './importance';

function runs(n: number, make: (r: () => number, i: number) => ImportanceInput, seed = 11): ImportanceInput[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => make(r, i));
}
const row = (res: ReturnType<typeof paramImportance>, key: string) => res.rows.find((x) => x.key === key)!;

describe('paramImportance', () => {
  test('y = (x1 - 0.5)^2 + noise, x2 irrelevant: correlation of x1 ~ 0, importance of x1 >> x2', () => {
    const data = runs(300, (r) => {
      const x1 = r(), x2 = r();
      return { config: { x1, x2 }, summary: { loss: (x1 - 0.5) ** 2 + 0.01 * (r() - 0.5) } };
    });
    const res = paramImportance(data, 'loss');
    expect(res.runs).toBe(300);
    expect(res.rows.map((x) => x.key)).toEqual(['x1', 'x2']);
    expect(Math.abs(row(res, 'x1').corr!)).toBeLessThan(0.15);
    expect(row(res, 'x1').importance).toBeGreaterThan(0.5);
    expect(row(res, 'x1').importance).toBeGreaterThan(10 * Math.abs(row(res, 'x2').importance));
    expect(res.r2).toBeGreaterThan(0.6);
  });

  test('a seed (a different number per run) that does not matter scores ~0, however many values it has', () => {
    const data = runs(400, (r, i) => {
      const lr = r();
      return { config: { lr, seed: i * 7919 % 400 }, summary: { loss: Math.abs(lr - 0.3) + 0.05 * r() } };
    });
    const res = paramImportance(data, 'loss');
    expect(res.rows[0].key).toBe('lr');
    expect(Math.abs(row(res, 'seed').importance)).toBeLessThan(0.03);
    expect(row(res, 'lr').importance).toBeGreaterThan(0.5);
  });

  test('a linear case: correlation and importance agree on the order', () => {
    const data = runs(300, (r) => {
      const a = r(), b = r(), c = r();
      return { config: { a, b, c }, summary: { acc: 3 * a + 1 * b + 0.05 * (r() - 0.5) } };
    });
    const res = paramImportance(data, 'acc');
    expect(res.rows.map((x) => x.key)).toEqual(['a', 'b', 'c']);
    expect(row(res, 'a').corr!).toBeGreaterThan(0.85);
    expect(row(res, 'b').corr!).toBeGreaterThan(0.15);
    expect(Math.abs(row(res, 'c').corr!)).toBeLessThan(0.15);
    const byCorr = [...res.rows].sort((p, q) => Math.abs(q.corr!) - Math.abs(p.corr!)).map((x) => x.key);
    expect(byCorr).toEqual(['a', 'b', 'c']);
  });

  test('categories (eta, unsigned) and booleans (0/1, signed); nested keys flattened', () => {
    const names = ['adam', 'sgd', 'lion'];
    const data = runs(200, (r, i) => {
      const opt = names[i % 3];
      const aug = i % 2 === 0;
      return { config: { optim: { name: opt }, aug, noise: r() }, summary: { loss: (opt === 'sgd' ? 1 : 0) - (aug ? 0.3 : 0) + 0.05 * r() } };
    });
    const res = paramImportance(data, 'loss');
    const opt = row(res, 'optim.name'), aug = row(res, 'aug');
    expect(opt.kind).toBe('category');
    expect(opt.corrKind).toBe('eta');
    expect(opt.corr!).toBeGreaterThan(0.8);
    expect(aug.kind).toBe('boolean');
    expect(aug.corr!).toBeLessThan(-0.2);
    expect(res.rows[0].key).toBe('optim.name');
    expect(row(res, 'noise').importance).toBeLessThan(aug.importance);
  });

  test('missing values: runs without the metric are left out; a field some runs lack still counts', () => {
    const data = runs(120, (r, i) => {
      const x = r();
      const config: Record<string, unknown> = { x, seed: i };
      if (i % 4 === 0) delete config.x;
      return { config, summary: i % 10 === 0 ? {} : { loss: 'x' in config ? x : 2 } };
    });
    const res = paramImportance(data, 'loss');
    expect(res.runs).toBe(108);
    const x = row(res, 'x');
    // Pairs: runs with both x and the metric.
    expect(x.n).toBe(data.filter((d, i) => i % 10 !== 0 && i % 4 !== 0).length);
    expect(res.rows[0].key).toBe('x');
  });

  test('constant and identifier-like fields are skipped; too few runs say so', () => {
    const data = runs(80, (r, i) => ({ config: { model: 'resnet', run_name: `name-${i}`, lr: r() }, summary: { loss: r() } }));
    const res = paramImportance(data, 'loss');
    expect(res.skipped).toEqual([{ key: 'model', why: 'constant' }, { key: 'run_name', why: 'identifier' }]);
    expect(res.rows.map((x) => x.key)).toEqual(['lr']);
    const few = paramImportance(data.slice(0, MIN_RUNS - 1), 'loss');
    expect(few.rows).toEqual([]);
    expect(few.message).toMatch(/at least 8/);
    const none = paramImportance(data.map((d) => ({ ...d, config: { model: 'x' } })), 'loss');
    expect(none.message).toMatch(/no config field varies/);
  });
});

describe('helpers', () => {
  test('metricValue: dotted paths and keys with dots; non-numbers are NaN', () => {
    expect(metricValue({ val: { acc: 0.5 } }, 'val.acc')).toBe(0.5);
    expect(metricValue({ 'val.acc': 0.7 }, 'val.acc')).toBe(0.7);
    expect(metricValue({ loss: 'NaN' }, 'loss')).toBeNaN();
    expect(metricValue(null, 'loss')).toBeNaN();
  });
  test('numericSummaryKeys and configFields', () => {
    expect(numericSummaryKeys([{ a: 1, b: 'x', c: { d: 2 } }, { e: 3 }])).toEqual(['a', 'c.d', 'e']);
    const f = configFields([{ a: 1, b: true, c: 'x', d: [1, 2] }, { a: 2, c: 3 }]);
    expect(f.map((x) => [x.key, x.kind])).toEqual([['a', 'number'], ['b', 'boolean'], ['c', 'category'], ['d', 'category']]);
    expect(f[1].num[1]).toBeNaN();
    expect(f[2].cat).toEqual(['x', '3']);
    expect(f[3].cat).toEqual(['[1,2]', null]);
  });
});
