import { describe, expect, test } from 'vitest';
import { correlationRatio, pearson } from './stats';

describe('pearson', () => {
  test('perfect, inverse and no linear relation', () => {
    expect(pearson([1, 2, 3, 4], [2, 4, 6, 8]).r).toBeCloseTo(1, 12);
    expect(pearson([1, 2, 3, 4], [8, 6, 4, 2]).r).toBeCloseTo(-1, 12);
    // A parabola symmetric around the mean of x: r = 0 although y depends on x.
    expect(pearson([-2, -1, 0, 1, 2], [4, 1, 0, 1, 4]).r).toBeCloseTo(0, 12);
  });
  test('missing values: pairs with NaN on either side are left out', () => {
    const r = pearson([1, 2, NaN, 3, 4, 5], [1, 2, 100, 3, NaN, 5]);
    expect(r.n).toBe(4);
    expect(r.r).toBeCloseTo(1, 12);
  });
  test('constant side or too few pairs: null', () => {
    expect(pearson([1, 1, 1, 1], [1, 2, 3, 4]).r).toBeNull();
    expect(pearson([1, 2], [1, 2]).r).toBeNull();
  });
});

describe('correlationRatio', () => {
  test('categories that fully determine y: 1; that do not matter: 0', () => {
    expect(correlationRatio(['a', 'a', 'b', 'b', 'c', 'c'], [1, 1, 5, 5, 3, 3]).r).toBeCloseTo(1, 12);
    expect(correlationRatio(['a', 'b', 'a', 'b'], [1, 1, 2, 2]).r).toBeCloseTo(0, 12);
  });
  test('a non-monotonic category effect is caught (Pearson on codes would not be)', () => {
    // a -> low, b -> high, c -> low: the means differ, eta is large.
    const cats = ['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c'];
    const y = [0, 1, 0, 0.1, 0.9, 0.05, 0, 1.1, 0];
    expect(correlationRatio(cats, y).r!).toBeGreaterThan(0.95);
    expect(Math.abs(pearson([0, 1, 2, 0, 1, 2, 0, 1, 2], y).r!)).toBeLessThan(0.1);
  });
  test('missing categories are left out; one category: null', () => {
    const r = correlationRatio(['a', null, 'b', 'a', 'b'], [1, 99, 2, 1, 2]);
    expect(r.n).toBe(4);
    expect(r.r).toBeCloseTo(1, 12);
    expect(correlationRatio(['a', 'a', 'a'], [1, 2, 3]).r).toBeNull();
  });
});
