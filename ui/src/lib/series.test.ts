import { describe, expect, it } from 'vitest';
import {
  aggregateBands, bucketsToBand, bucketWidth, infinitiesOf, joinBands, loneCells, nearestIndex, num, pointsToBand, showDots, smooth,
  stepRangeForX, tooltipPoint, yExtent, type ApiBucket,
} from './series';

const b = (s0: number, s1: number, count: number, min: any, max: any, mean: any, last: any, t0 = s0 * 1000, t1 = s1 * 1000): ApiBucket =>
  ({ step_min: s0, step_max: s1, time_min: t0, time_max: t1, count, min, max, mean, first: min, last });

describe('bucket -> band', () => {
  it('keeps exact min/max as the band and mean or last as the line', () => {
    const buckets = [b(0, 9, 10, 1, 5, 2.5, 4), b(10, 19, 10, 0.5, 3, 1, 2)];
    const mean = bucketsToBand(buckets, 'step', 'mean');
    expect(mean.x).toEqual([9, 19]);
    expect(mean.min).toEqual([1, 0.5]);
    expect(mean.max).toEqual([5, 3]);
    expect(mean.line).toEqual([2.5, 1]);
    expect(mean.raw).toBe(false);
    expect(mean.points).toBe(20);
    expect(bucketsToBand(buckets, 'step', 'last').line).toEqual([4, 2]);
  });
  it('marks single-point buckets as raw', () => {
    const band = bucketsToBand([b(0, 0, 1, 3, 3, 3, 3), b(1, 1, 1, 4, 4, 4, 4)], 'step');
    expect(band.raw).toBe(true);
    expect(band.line).toEqual([3, 4]);
  });
  it('turns NaN/Infinity and all-NaN buckets into gaps, never into numbers', () => {
    const band = bucketsToBand([b(0, 0, 1, 'NaN', 'NaN', 'NaN', 'NaN'), b(1, 1, 1, 2, 2, 2, 2), b(2, 2, 1, 'Infinity', 'Infinity', 'Infinity', 'Infinity')], 'step');
    expect(band.line).toEqual([null, 2, null]);
    expect(band.min).toEqual([null, 2, null]);
    expect(band.inf).toBe(1);
    // The server's bucket without a finite value: null statistics, its NaN count.
    const nanBucket = { ...b(10, 19, 10, null, null, null, 'NaN'), nan_count: 10 };
    const half = { ...b(20, 29, 10, 1, 3, 2, 3), nan_count: 4 };
    const g = bucketsToBand([b(0, 9, 10, 1, 5, 2, 3), nanBucket, half], 'step', 'last');
    expect(g.line).toEqual([3, null, 3]);
    expect(g.min).toEqual([1, null, 1]);
    expect(g.nan).toBe(14);
    expect(num('NaN')).toBeNull();
    expect(num(Infinity)).toBeNull();
    expect(num(0)).toBe(0);
  });
  it('uses time for the time axes, relative to an origin, and sorts by x', () => {
    const buckets = [b(0, 0, 1, 1, 1, 1, 1, 5000, 5000), b(1, 1, 1, 2, 2, 2, 2, 3000, 3000)];
    const rel = bucketsToBand(buckets, 'rel', 'mean', 1000);
    expect(rel.x).toEqual([2, 4]);
    expect(rel.line).toEqual([2, 1]);
    expect(bucketsToBand(buckets, 'wall').x).toEqual([3, 5]);
  });
  it('raw points become a band with no width', () => {
    const band = pointsToBand([[0, 0, 1], [1, 10, 'NaN'], [2, 20, 3]], 'step');
    expect(band.x).toEqual([0, 1, 2]);
    expect(band.min).toEqual([1, null, 3]);
    expect(band.raw).toBe(true);
  });
});

describe('smoothing', () => {
  it('is the identity at weight 0 and debiased EMA otherwise', () => {
    expect(smooth([1, 2, 3], 0)).toEqual([1, 2, 3]);
    const s = smooth([1, 1, 1, 1], 0.9);
    for (const v of s) expect(v).toBeCloseTo(1, 10); // debiasing: a constant stays constant
    const t = smooth([0, 10], 0.5) as number[];
    expect(t[0]).toBe(0);
    expect(t[1]).toBeCloseTo(10 * 0.5 / 0.75, 10);
  });
  it('keeps gaps as gaps without resetting', () => {
    const s = smooth([2, null, 2], 0.5);
    expect(s[1]).toBeNull();
    expect(s[2]).toBeCloseTo(2, 10);
  });
});

describe('join and aggregate', () => {
  it('aligns bands on the union of x: undefined where a line has no point, null at its gaps', () => {
    const a = pointsToBand([[0, 0, 1], [2, 0, 3], [3, 0, 'NaN']], 'step');
    const c = pointsToBand([[1, 0, 5], [2, 0, 6], [3, 0, 7]], 'step');
    const j = joinBands([a, c]);
    expect(j.x).toEqual([0, 1, 2, 3]);
    expect(j.line[0]).toEqual([1, undefined, 3, null]);
    expect(j.line[1]).toEqual([undefined, 5, 6, 7]);
  });
  it("finds each line's nearest point, whatever its step grid", () => {
    const a = pointsToBand([[0, 0, 1], [10, 0, 2], [20, 0, 3]], 'step');
    expect(nearestIndex(a, 4)).toBe(0);
    expect(nearestIndex(a, 6)).toBe(1);
    expect(nearestIndex(a, 99)).toBe(2);
    expect(nearestIndex(a, -5)).toBe(0);
  });
  it("tells the tooltip when the cursor is past a line's range (its nearest point is not its value there)", () => {
    const a = pointsToBand([[0, 0, 1], [10, 0, 2], [20, 0, 3]], 'step');
    expect(tooltipPoint(a, 12)).toEqual({ i: 1, beyond: false });
    expect(tooltipPoint(a, 24)).toEqual({ i: 2, beyond: false });  // within half a spacing of the last point
    expect(tooltipPoint(a, 500)).toEqual({ i: 2, beyond: true });   // the line ended at step 20
    expect(tooltipPoint(a, -6)).toEqual({ i: 0, beyond: true });    // it starts at step 0
    const one = pointsToBand([[7, 0, 1]], 'step');
    expect(tooltipPoint(one, 7)).toEqual({ i: 0, beyond: false });
    expect(tooltipPoint(one, 300)).toEqual({ i: 0, beyond: true });
  });
  it('aggregates min of mins, max of maxes and the mean of process means per bin', () => {
    const p1 = bucketsToBand([b(0, 9, 10, 0, 4, 2, 2), b(10, 19, 10, 1, 5, 3, 3)], 'step');
    const p2 = bucketsToBand([b(0, 9, 10, -1, 1, 0, 0), b(10, 19, 10, 2, 9, 5, 5)], 'step');
    const w = bucketWidth(0, 19, 2);
    expect(w).toBe(10);
    const agg = aggregateBands([p1, p2], 0, 20, 2);
    expect(agg.min).toEqual([-1, 1]);
    expect(agg.max).toEqual([4, 9]);
    expect(agg.line).toEqual([1, 4]);
    expect(agg.x).toEqual([9, 19]);
    expect(agg.raw).toBe(false);
  });
  it('maps a visible time range back to the steps that hold it', () => {
    const band = bucketsToBand([b(0, 9, 10, 0, 1, 0, 0), b(10, 19, 10, 0, 1, 0, 0), b(20, 29, 10, 0, 1, 0, 0)], 'wall');
    // x (s) = 9, 19, 29: the view 10..18 lies inside the second bucket.
    expect(stepRangeForX(band, 10, 18)).toEqual([10, 19]);
    expect(stepRangeForX(band, 0, 100)).toEqual([0, 29]);
  });
  it('scales y on the band, within the visible x range', () => {
    const a = bucketsToBand([b(0, 9, 10, -5, 50, 1, 1), b(10, 19, 10, 0, 2, 1, 1)], 'step');
    const j = joinBands([a]);
    expect(yExtent(j, [true], 0, 100, false)).toEqual([-5, 50]);
    expect(yExtent(j, [true], 10, 100, false)).toEqual([0, 2]);
    expect(yExtent(j, [true], 0, 100, true)).toEqual([1, 50]); // non-positive band edges fall back to the line
    expect(yExtent(j, [false], 0, 100, false)).toBeNull();
  });
});

describe('points that share one x (one timestamp on a time axis)', () => {
  // A writer that logged 100 steps with one timestamp: 100 raw points, one x on the time axes.
  const sameTime = pointsToBand(Array.from({ length: 100 }, (_, s) => [s, 5000, s / 100] as [number, number, number]), 'rel', 1000);
  it('are one cell of the join, with their min and max, counted as one distinct x', () => {
    expect(sameTime.x.length).toBe(100);
    expect(sameTime.raw).toBe(true);
    const j = joinBands([sameTime]);
    expect(j.x).toEqual([4]);
    expect(j.distinct).toEqual([1]);
    expect(j.merged).toEqual([[0]]);
    expect(j.min[0]).toEqual([0]);
    expect(j.max[0]).toEqual([0.99]);
    expect(j.line[0]).toEqual([0.99]);
    // Not merged on the step axis: 100 distinct x, nothing merged.
    const steps = joinBands([pointsToBand(Array.from({ length: 100 }, (_, s) => [s, 5000, s] as [number, number, number]), 'step')]);
    expect(steps.distinct).toEqual([100]);
    expect(steps.merged).toEqual([[]]);
  });
  it('get a dot: decided from the distinct x after the join, not from the points before it', () => {
    const j = joinBands([sameTime]);
    // 100 points on a 400 px plot were too dense for dots; one distinct x is not.
    expect(sameTime.x.length <= 400 / 6).toBe(false);
    expect(showDots(sameTime.raw, j.distinct[0], 400)).toBe(true);
    // A line of one x always gets its dot, raw or not (it has no segment to show it).
    expect(showDots(false, 1, 400)).toBe(true);
    // Dense raw points: no dots; sparse ones: dots; bands: none; nothing: none.
    expect(showDots(true, 100, 400)).toBe(false);
    expect(showDots(true, 50, 400)).toBe(true);
    expect(showDots(false, 50, 400)).toBe(false);
    expect(showDots(true, 0, 400)).toBe(false);
    // Two writers, each with its points at one time (another each): 2 distinct x per line.
    const w0 = pointsToBand([[0, 1000, 1], [1, 1000, 2], [2, 2000, 3]], 'wall');
    const w1 = pointsToBand([[0, 1500, 5], [1, 1500, 6]], 'wall');
    const both = joinBands([w0, w1]);
    expect(both.x).toEqual([1, 1.5, 2]);
    expect(both.distinct).toEqual([2, 1]);
    expect(both.merged).toEqual([[0], [1]]);
    expect(both.min[0]).toEqual([1, undefined, 3]);
    expect(both.max[0]).toEqual([2, undefined, 3]);
  });
  it('keep a dot where no segment shows a value: merged cells and values alone between gaps', () => {
    // Cells: 1 (merged), gap, 3 alone, undefined (another line), 4, 5; then a lone value at the end after a gap.
    const line = [1, null, 3, undefined, null, 4, 5, null, 7];
    expect(loneCells(line, [0])).toEqual([0, 2, 8]);
    // Another line's x between two values does not make them alone.
    expect(loneCells([1, undefined, 2], [])).toEqual([]);
    expect(loneCells([undefined, 2, undefined], [])).toEqual([1]);
    expect(loneCells([null, null], [0])).toEqual([]);
  });
});

describe('infinite values', () => {
  it('are counted exactly in raw points and in buckets that hold nothing else', () => {
    // Raw: two +Inf points, one -Inf: 3, exactly.
    const raw = pointsToBand([[0, 0, 'Infinity'], [1, 0, 2], [2, 0, 'Infinity'], [3, 0, '-Infinity']], 'step');
    expect([raw.inf, raw.infExact, raw.infBuckets]).toEqual([3, true, 3]);
    // A bucket of NaN and +Inf only: null statistics, its non-NaN points are the infinities.
    expect(infinitiesOf({ ...b(0, 9, 10, null, null, null, 'Infinity'), nan_count: 4 })).toEqual({ atLeast: 6, exact: true });
    // Only NaN: none.
    expect(infinitiesOf({ ...b(0, 9, 10, null, null, null, 'NaN'), nan_count: 10 })).toEqual({ atLeast: 0, exact: true });
    // Finite values only: none.
    expect(infinitiesOf(b(0, 9, 10, 1, 2, 1.5, 2))).toEqual({ atLeast: 0, exact: true });
  });
  it('are a lower bound in a bucket that mixes them with numbers: the badge says so', () => {
    // Two +Inf among finite values: the bucket shows one infinite max, not how many.
    const mixed = b(0, 9, 10, 1, 'Infinity', null, 2);
    expect(infinitiesOf(mixed)).toEqual({ atLeast: 1, exact: false });
    // Both signs: at least two; exactly two when the bucket holds two points.
    expect(infinitiesOf(b(0, 9, 10, '-Infinity', 'Infinity', null, 2))).toEqual({ atLeast: 2, exact: false });
    expect(infinitiesOf(b(0, 1, 2, '-Infinity', 'Infinity', null, 2))).toEqual({ atLeast: 2, exact: true });
    const band = bucketsToBand([mixed, b(10, 19, 10, 0, 1, 0.5, 1), { ...b(20, 29, 10, null, null, null, 'Infinity'), nan_count: 8 }], 'step');
    expect([band.inf, band.infExact, band.infBuckets]).toEqual([3, false, 2]);
    const agg = aggregateBands([band, raw()], 0, 30, 3);
    expect([agg.inf, agg.infExact, agg.infBuckets]).toEqual([4, false, 3]);
    function raw() { return pointsToBand([[0, 0, 'Infinity']], 'step'); }
  });
});
