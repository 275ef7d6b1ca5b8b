import { describe, expect, it } from 'vitest';
import type { RankAggregate, Stragglers } from './api';
import { bucketAt, flagged, heatColor, heatRange, memberBand, memberId, memberName, rankBands, spansRuns } from './ranks';

const agg: RankAggregate = {
  key: 'loss',
  members: [{ run: 'r1', writer: 'rank_0', host: 'n0' }, { run: 'r1', writer: 'rank_1', host: 'n1' }, { run: 'r1', writer: 'rank_2', host: 'n1' }],
  bucket_width: 10,
  exact: false,
  // Out of order on purpose: bands come out sorted by step.
  buckets: [
    { step_min: 10, step_max: 19, time_min: 0, time_max: 0, count: 30, members: 3, min: 1, max: 9, mean: 4, median: 3, spread: 8, min_member: 0, max_member: 2, outlier: { member: 2, z: 6.5 }, values: [1.5, 3, 8] },
    { step_min: 0, step_max: 9, time_min: 0, time_max: 0, count: 30, members: 3, min: 2, max: 'NaN', mean: 3, median: 'NaN', spread: null, min_member: 1, max_member: 0, outlier: null, values: [null, 2.5, 3] },
  ],
};

describe('rank bands', () => {
  it('band min..max with the mean line, median line, sorted by step, NaN as gaps', () => {
    const { mean, median } = rankBands(agg);
    expect(mean.x).toEqual([9, 19]);
    expect(mean.line).toEqual([3, 4]);
    // A bucket whose max is not a number: no made-up band, the line value stands in.
    expect(mean.min).toEqual([3, 1]);
    expect(mean.max).toEqual([3, 9]);
    expect(mean.raw).toBe(false);
    expect(mean.points).toBe(60);
    expect(median.line).toEqual([null, 3]);
  });
  it("a member's own line from per-member values", () => {
    expect(memberBand(agg, 0).line).toEqual([null, 1.5]);
    expect(memberBand(agg, 2).line).toEqual([3, 8]);
  });
  it('finds the bucket under the cursor and who holds min, max and the outlier', () => {
    const b = bucketAt(agg, 14)!;
    expect(b.bucket.step_min).toBe(10);
    expect([b.minMember, b.maxMember]).toEqual([0, 2]);
    expect(b.outlier).toEqual({ member: 2, z: 6.5 });
    expect(bucketAt(agg, 3)!.outlier).toBeNull();
    expect(bucketAt(agg, 1000)!.bucket.step_max).toBe(19);
    expect(bucketAt({ ...agg, buckets: [] }, 3)).toBeNull();
  });
  it('names members by label, with the run when they span runs', () => {
    const multi = [...agg.members, { run: 'r2', writer: 'rank_0', host: '' }];
    expect(spansRuns(agg.members)).toBe(false);
    expect(spansRuns(multi)).toBe(true);
    expect(memberName(agg.members[1], false)).toBe('rank_1');
    expect(memberName(multi[3], true, (r) => (r === 'r2' ? 'ddp-rank3' : r))).toBe('ddp-rank3 · rank_0');
    expect(memberId(multi[3], true)).toBe('r2/rank_0');
    expect(memberId(multi[3], false)).toBe('rank_0');
  });
});

describe('heatmap', () => {
  it('colour scale from the 5th..95th percentile, ignoring empty cells', () => {
    const rows = [[...Array(19).keys()].map((i) => i + 1), [null, 1000]];
    const r = heatRange(rows)!;
    expect(r[0]).toBe(2);
    expect(r[1]).toBe(19); // the one extreme cell (1000) does not set the scale
    expect(heatRange([[null]])).toBeNull();
    expect(heatRange([[5, 5]])).toEqual([5, 5.5]);
  });
  it('green for good, red for bad; GPU utilisation inverted; no data transparent', () => {
    expect(heatColor(0, [0, 10], true)).toMatch(/^hsl\(130,/);
    expect(heatColor(10, [0, 10], true)).toMatch(/^hsl\(0,/);
    expect(heatColor(100, [0, 100], false)).toMatch(/^hsl\(130,/);
    expect(heatColor(50, [0, 10], true)).toMatch(/^hsl\(0,/); // clamped
    expect(heatColor(null, [0, 10], true)).toBe('transparent');
  });
  it('lists flagged members with their reasons', () => {
    const s = {
      members: [{ reasons: [], flagged: false }, { reasons: ['step_time: 151 ms/step'], flagged: true }],
      stragglers: [1],
    } as unknown as Stragglers;
    expect(flagged(s)).toEqual([{ index: 1, reasons: ['step_time: 151 ms/step'] }]);
  });
});
