import { describe, expect, test } from 'vitest';
import { binColumn, MAX_BINS, permutationImportance, predict, rng, trainForest } from './forest';

describe('rng', () => {
  test('seeded: the same sequence for the same seed, another for another', () => {
    const a = rng(42), b = rng(42), c = rng(43);
    const xs = Array.from({ length: 5 }, a), ys = Array.from({ length: 5 }, b), zs = Array.from({ length: 5 }, c);
    expect(xs).toEqual(ys);
    expect(xs).not.toEqual(zs);
    for (const x of xs) { expect(x).toBeGreaterThanOrEqual(0); expect(x).toBeLessThan(1); }
  });
});

describe('binColumn', () => {
  test('few distinct values: one bin each in value order; missing is bin 0', () => {
    expect([...binColumn([3, 1, 2, NaN, 1, 3])]).toEqual([3, 1, 2, 0, 1, 3]);
  });
  test('many values: quantile bins, monotonic, within MAX_BINS', () => {
    const r = rng(1);
    const xs = Array.from({ length: 1000 }, () => r() * 100);
    const b = binColumn(xs);
    const order = xs.map((x, i) => [x, b[i]]).sort((p, q) => p[0] - q[0]);
    for (let i = 1; i < order.length; i++) expect(order[i][1]).toBeGreaterThanOrEqual(order[i - 1][1]);
    expect(Math.max(...b)).toBeLessThanOrEqual(MAX_BINS - 1);
    expect(Math.min(...b)).toBe(1);
    expect(new Set(b).size).toBeGreaterThan(20);
  });
});

function dataset(n: number, f: (x1: number, x2: number) => number, noise: number, seed = 7) {
  const r = rng(seed);
  const x1 = Array.from({ length: n }, r), x2 = Array.from({ length: n }, r);
  const y = x1.map((a, i) => f(a, x2[i]) + noise * (r() - 0.5));
  return { x1, x2, y, X: [binColumn(x1), binColumn(x2)] };
}

describe('trainForest + permutationImportance', () => {
  test('fits a non-linear function: out-of-bag R^2 high, x1 matters, x2 does not', () => {
    const d = dataset(400, (a) => (a - 0.5) ** 2, 0.02);
    const forest = trainForest(d.X, d.y, { seed: 3 });
    const res = permutationImportance(forest, d.X, d.y, { seed: 3 });
    expect(res.r2).toBeGreaterThan(0.7);
    expect(res.importance[0]).toBeGreaterThan(0.5);
    expect(Math.abs(res.importance[1])).toBeLessThan(0.05);
    expect(res.importance[0]).toBeGreaterThan(10 * Math.abs(res.importance[1]));
  });
  test('deterministic: the same seed gives the same numbers', () => {
    const d = dataset(200, (a, b) => a + b, 0.1);
    const a = permutationImportance(trainForest(d.X, d.y, { seed: 5 }), d.X, d.y, { seed: 5 });
    const b = permutationImportance(trainForest(d.X, d.y, { seed: 5 }), d.X, d.y, { seed: 5 });
    expect(a).toEqual(b);
  });
  test('predictions follow a step function', () => {
    const d = dataset(300, (a) => (a < 0.5 ? 0 : 10), 0);
    const forest = trainForest(d.X, d.y, { seed: 1 });
    const p = predict(forest, d.X, d.y.length);
    let err = 0;
    for (let i = 0; i < p.length; i++) err += Math.abs(p[i] - d.y[i]);
    expect(err / p.length).toBeLessThan(0.5);
  });
  test('a constant target: importance 0, no NaN', () => {
    const d = dataset(50, () => 1, 0);
    const res = permutationImportance(trainForest(d.X, d.y), d.X, d.y);
    expect(res.importance).toEqual([0, 0]);
    expect(res.r2).toBe(0);
  });
});
