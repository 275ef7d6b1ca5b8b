import { describe, expect, it } from 'vitest';
import { naturalCompare, prefixOf } from './format';
import {
  binsOf, bucketsFor, fractionBelow, columnSpan, distribution, groupHistKeys, heat, heatColour, heatmap, heatmapRows, nearestPoint,
  PERCENTILES, percentiles, rowAt, valueExtent, withSharedEdges, xExtent, type ApiHistogram,
} from './histograms';

const close = (a: (number | null)[], b: number[], eps = 1e-9) => {
  expect(a.length).toBe(b.length);
  a.forEach((v, i) => { expect(v).not.toBeNull(); expect(Math.abs((v as number) - b[i])).toBeLessThan(eps); });
};

describe('bins', () => {
  it('uniform bins from lo/hi, explicit edges as given', () => {
    expect(binsOf({ step: 0, time_ms: 0, lo: 0, hi: 4, counts: [1, 2, 3, 4] })).toEqual({ edges: [0, 1, 2, 3, 4], counts: [1, 2, 3, 4], total: 10 });
    expect(binsOf({ step: 0, time_ms: 0, edges: [-1, 0, 10], counts: [5, 5] })?.edges).toEqual([-1, 0, 10]);
  });
  it('a step that cannot be read is null, never zeros', () => {
    expect(binsOf({ step: 0, time_ms: 0, lo: 0, hi: 1, counts: [1, 'NaN'] })).toBeNull();
    expect(binsOf({ step: 0, time_ms: 0, lo: 0, hi: 1, counts: [1, null] })).toBeNull();
    expect(binsOf({ step: 0, time_ms: 0, lo: 'NaN', hi: 1, counts: [1] })).toBeNull();
    expect(binsOf({ step: 0, time_ms: 0, lo: 2, hi: 1, counts: [1] })).toBeNull();
    expect(binsOf({ step: 0, time_ms: 0, edges: [0, 1], counts: [1, 2] })).toBeNull();
    expect(binsOf({ step: 0, time_ms: 0, lo: 0, hi: 1, counts: [] })).toBeNull();
  });
});

describe('percentiles from bins', () => {
  it('uniform counts: percentiles interpolate linearly across the range', () => {
    const b = binsOf({ step: 0, time_ms: 0, lo: 0, hi: 10, counts: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1] })!;
    close(percentiles(b), PERCENTILES.map((p) => p * 10));
  });
  it('min/max are the edges of the first and last non-empty bins; the median inside its bin', () => {
    const b = binsOf({ step: 0, time_ms: 0, lo: 0, hi: 8, counts: [0, 0, 2, 2, 0, 0, 0, 0] })!;
    const q = percentiles(b, [0, 0.25, 0.5, 0.75, 1]);
    close(q, [2, 2.5, 3, 3.5, 4]);
  });
  it('explicit, unequal edges', () => {
    const b = binsOf({ step: 0, time_ms: 0, edges: [0, 1, 11], counts: [1, 3] })!;
    // median: target 2 -> 1 counted in the first bin, then 1 of 3 into [1, 11]
    close(percentiles(b, [0.5]), [1 + 10 / 3]);
  });
  it('all values equal (the SDK widens to [v-0.5, v+0.5] with one non-empty bin): a narrow band around v', () => {
    // 3 bins over [6.5, 7.5], all 100 values in the middle one
    const b = binsOf({ step: 0, time_ms: 0, lo: 6.5, hi: 7.5, counts: [0, 100, 0] })!;
    const q = percentiles(b) as number[];
    expect(q[4]).toBeCloseTo(7, 9);
    expect(q[0]).toBeCloseTo(6.5 + 1 / 3, 9);
    expect(q[8]).toBeCloseTo(6.5 + 2 / 3, 9);
    for (let i = 1; i < q.length; i++) expect(q[i]).toBeGreaterThanOrEqual(q[i - 1]);
  });
  it('a zero-width range (bins [v, v]) gives v for every percentile', () => {
    const b = binsOf({ step: 0, time_ms: 0, lo: 3, hi: 3, counts: [5] })!;
    expect(percentiles(b)).toEqual(PERCENTILES.map(() => 3));
  });
  it('a histogram that counts nothing (every value was NaN): nulls, not zeros', () => {
    const b = binsOf({ step: 0, time_ms: 0, lo: -0.5, hi: 0.5, counts: [0, 0, 0] })!;
    expect(percentiles(b)).toEqual(PERCENTILES.map(() => null));
  });
  it('the fraction of values below a value (the cursor\'s percentile)', () => {
    const b = binsOf({ step: 0, time_ms: 0, lo: 0, hi: 4, counts: [1, 1, 0, 2] })!;
    expect(fractionBelow(b, -1)).toBe(0);
    expect(fractionBelow(b, 1.5)).toBe(0.375);
    expect(fractionBelow(b, 3)).toBe(0.5);
    expect(fractionBelow(b, 9)).toBe(1);
    expect(fractionBelow(binsOf({ step: 0, time_ms: 0, lo: 0, hi: 1, counts: [0] })!, 0.5)).toBeNull();
  });
  it('percentiles are monotonic and inside the range', () => {
    const b = binsOf({ step: 0, time_ms: 0, lo: -3, hi: 3, counts: [1, 5, 20, 40, 20, 5, 1, 0] })!;
    const q = percentiles(b) as number[];
    for (let i = 1; i < q.length; i++) expect(q[i]).toBeGreaterThanOrEqual(q[i - 1]);
    expect(q[0]).toBe(-3);
    expect(q[8]).toBeCloseTo(-3 + 7 * 0.75, 9);
  });
});

const hist: ApiHistogram = {
  key: 'gradients/w', writer: 'rank_0', count: 30,
  // Out of order on purpose; the middle bucket merged 10 steps; the last counts nothing.
  steps: [
    { step: 10, last_step: 19, merged: 10, exact: false, time_ms: 2, lo: 0, hi: 2, counts: [1, 1] },
    { step: 0, time_ms: 1, lo: 0, hi: 4, counts: [1, 1, 1, 1] },
    { step: 29, time_ms: 3, lo: -0.5, hi: 0.5, counts: [0, 0] },
  ],
};

describe('distribution', () => {
  it('columns sorted by x (the bucket\'s last step), with gaps where nothing was counted', () => {
    const d = distribution(hist);
    expect(d.points.map((p) => p.x)).toEqual([0, 19, 29]);
    expect(d.points.map((p) => p.merged)).toEqual([1, 10, 1]);
    expect(d.points[0].q[4]).toBe(2);
    expect(d.points[1].q[4]).toBe(1);
    expect(d.points[2].q).toEqual(PERCENTILES.map(() => null));
    expect(d.empty).toBe(1);
    expect(d.raw).toBe(false);
    expect(d.approx).toBe(true);
    expect(d.steps).toBe(30);
  });
  it('value and x extents; a single value or step widened', () => {
    const d = distribution(hist);
    expect(valueExtent(d.points)).toEqual([0, 4]);
    expect(valueExtent([])).toBeNull();
    const one = distribution({ key: 'k', writer: 'w', count: 1, steps: [{ step: 5, time_ms: 0, lo: 3, hi: 3, counts: [4] }] });
    expect(valueExtent(one.points)).toEqual([2.85, 3.15]);
    expect(xExtent(one.points, false)).toEqual([4, 6]);
    expect(xExtent(d.points, false)).toEqual([0, 29]);
    expect(xExtent(d.points, true)).toEqual([-9.5, 34]);
    expect(columnSpan(d.points, 1)).toEqual([9.5, 24]);
  });
  it('nearest column to a cursor x', () => {
    const d = distribution(hist);
    expect(nearestPoint(d.points, -5)).toBe(0);
    expect(nearestPoint(d.points, 9)).toBe(0);
    expect(nearestPoint(d.points, 10)).toBe(1);
    expect(nearestPoint(d.points, 25)).toBe(2);
    expect(nearestPoint(d.points, 1000)).toBe(2);
    expect(nearestPoint([], 1)).toBeNull();
  });
});

describe('heatmap', () => {
  it('spreads each column onto a common grid, conserving counts; empty columns are null', () => {
    const d = distribution(hist);
    const h = heatmap(d.points, 4)!;
    expect([h.lo, h.hi, h.rows]).toEqual([0, 4, 4]);
    expect(Array.from(h.cells[0]!)).toEqual([1, 1, 1, 1]);
    // [0,1) and [1,2) of the merged bucket land in rows 0 and 1
    expect(Array.from(h.cells[1]!)).toEqual([1, 1, 0, 0]);
    expect(h.cells[2]).toBeNull();
    expect(h.max).toBe(1);
  });
  it('a bin across grid rows is shared in proportion to the overlap', () => {
    const d = distribution({ key: 'k', writer: 'w', count: 2, steps: [
      { step: 0, time_ms: 0, lo: 0, hi: 3, counts: [3] },
      { step: 1, time_ms: 0, lo: 0, hi: 4, counts: [0, 0, 0, 8] },
    ] });
    const h = heatmap(d.points, 4)!;
    expect(Array.from(h.cells[0]!)).toEqual([1, 1, 1, 0]);
    expect(Array.from(h.cells[1]!)).toEqual([0, 0, 0, 8]);
    expect(h.max).toBe(8);
    const sum = (a: Float64Array) => a.reduce((x, y) => x + y, 0);
    expect(sum(h.cells[0]!)).toBeCloseTo(3, 9);
  });
  it('all values equal: one column, one row lit; bins of zero width count where their value is', () => {
    const d = distribution({ key: 'k', writer: 'w', count: 1, steps: [{ step: 0, time_ms: 0, lo: 3, hi: 3, counts: [7] }] });
    const h = heatmap(d.points, 8)!;
    expect(h.lo).toBeLessThan(3);
    expect(h.hi).toBeGreaterThan(3);
    expect(Array.from(h.cells[0]!).filter((c) => c > 0)).toEqual([7]);
    expect(rowAt(h, 3)).toBe(4);
    expect(rowAt(h, 100)).toBeNull();
  });
  it('rows: one per narrowest bin over the range, so shared bins map one to one; within bounds', () => {
    const d = distribution(hist);
    // bins of width 1 (step 0) and 1 (the merged bucket) over [0, 4]
    expect(heatmapRows(d.points, valueExtent(d.points), 100)).toBe(4);
    const wide = distribution({ key: 'k', writer: 'w', count: 1, steps: [{ step: 0, time_ms: 0, lo: 0, hi: 1, counts: new Array(64).fill(1) }] });
    expect(heatmapRows(wide.points, valueExtent(wide.points), 100)).toBe(64);
    expect(heatmapRows(wide.points, valueExtent(wide.points), 40)).toBe(40);
    // every value in one bin of 64 over [6.5, 7.5]: the range is that bin, one row
    const one = distribution({ key: 'k', writer: 'w', count: 1, steps: [{ step: 0, time_ms: 0, lo: 6.5, hi: 7.5, counts: Array.from({ length: 64 }, (_, i) => (i === 32 ? 100 : 0)) }] });
    expect(heatmapRows(one.points, valueExtent(one.points), 100)).toBe(1);
    const g = heatmap(one.points, 1)!;
    expect(Array.from(g.cells[0]!)).toEqual([100]);
    // moving ranges keep the finest resolution: [0, 1] and [10, 12] in 4 bins each -> 0.25 wide
    const moving = distribution({ key: 'k', writer: 'w', count: 2, steps: [
      { step: 0, time_ms: 0, lo: 0, hi: 1, counts: [1, 1, 1, 1] }, { step: 1, time_ms: 0, lo: 10, hi: 12, counts: [1, 1, 1, 1] }] });
    expect(heatmapRows(moving.points, valueExtent(moving.points), 1000)).toBe(48);
    expect(heatmapRows([], null, 100)).toBe(1);
    expect(heatmap([], 4)).toBeNull();
  });
  it('heat: linear or log, 0 for an empty cell; colours brighten with heat', () => {
    expect(heat(0, 10, false)).toBe(0);
    expect(heat(5, 10, false)).toBe(0.5);
    expect(heat(10, 10, true)).toBe(1);
    expect(heat(1, 1000, true)).toBeCloseTo(Math.log(2) / Math.log(1001), 12);
    expect(heat(1, 1000, true)).toBeGreaterThan(heat(1, 1000, false));
    expect(heat(NaN, 10, false)).toBe(0);
    expect(heatColour(0)).toBe('rgb(68, 1, 84)');
    expect(heatColour(1)).toBe('rgb(253, 231, 37)');
    expect(heatColour(2)).toBe('rgb(253, 231, 37)');
  });
});

describe('keys and buckets', () => {
  it('histogram keys grouped by prefix, in natural order, with their writers', () => {
    const keys = [
      { key: 'parameters/fc2.weight', writer: 'rank_10', type: 'histogram', min_step: 0, max_step: 9 },
      { key: 'loss', writer: 'rank_0', type: 'scalar', min_step: 0, max_step: 9 },
      { key: 'gradients/fc10.weight', writer: 'rank_0', type: 'histogram', min_step: 0, max_step: 9 },
      { key: 'gradients/fc2.weight', writer: 'rank_0', type: 'histogram', min_step: 0, max_step: 9 },
      { key: 'parameters/fc2.weight', writer: 'rank_2', type: 'histogram', min_step: 5, max_step: 20 },
      { key: 'acts', writer: 'rank_0', type: 'histogram', min_step: 0, max_step: 9 },
      { key: 'media', writer: 'rank_0', type: 'image', min_step: 0, max_step: 9 },
    ];
    const g = groupHistKeys(keys, naturalCompare, prefixOf);
    expect(g.map(([s]) => s)).toEqual(['', 'gradients', 'parameters']);
    expect(g[1][1].map((k) => k.key)).toEqual(['gradients/fc2.weight', 'gradients/fc10.weight']);
    expect(g[2][1][0]).toEqual({ key: 'parameters/fc2.weight', writers: ['rank_2', 'rank_10'], range: [0, 20] });
  });
  it('buckets: one per pixel, within the API limits', () => {
    expect(bucketsFor(612.7)).toBe(612);
    expect(bucketsFor(0)).toBe(1);
    expect(bucketsFor(50000)).toBe(10000);
  });
});

describe('withSharedEdges', () => {
  it("gives steps without bins of their own the series' edges, sent once", () => {
    const h: ApiHistogram = {
      key: 'k', writer: 'w', count: 2, edges: [0, 1, 5],
      steps: [{ step: 0, time_ms: 1, counts: [1, 2] }, { step: 1, time_ms: 2, counts: [3, 4] }],
    };
    const out = withSharedEdges(h);
    expect(out.steps.map((s) => binsOf(s)?.edges)).toEqual([[0, 1, 5], [0, 1, 5]]);
    expect(binsOf(out.steps[1])?.total).toBe(7);
    // Steps with their own bins and series without shared edges are left as they are.
    const own: ApiHistogram = { key: 'k', writer: 'w', count: 1, steps: [{ step: 0, time_ms: 1, lo: 0, hi: 2, counts: [1, 1] }] };
    expect(withSharedEdges(own)).toBe(own);
    expect(binsOf(withSharedEdges({ ...own, edges: [9, 9.5, 10] }).steps[0])?.edges).toEqual([0, 1, 2]);
  });
});
