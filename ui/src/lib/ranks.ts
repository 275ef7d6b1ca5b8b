// Rank insight data (docs/api.md "Rank aggregation"): the server's cross-rank buckets turned into
// chart bands (min..max band with the mean line, the median line, one member's own line), the
// member under the cursor that holds the min/max/outlier, and the heatmap's colour scale.
import type { RankAggregate, RankBucket, RankMember, Stragglers } from './api';
import { emptyBand, num, type Band } from './series';

/** A member's name as shown: the label, prefixed by the run's name when members span runs. */
export function memberName(m: RankMember, multiRun: boolean, runName?: (run: string) => string): string {
  return multiRun ? `${runName?.(m.run) ?? m.run} · ${m.writer}` : m.writer;
}

/** A stable id for a member (for URLs and data attributes). */
export function memberId(m: RankMember, multiRun: boolean): string {
  return multiRun ? `${m.run}/${m.writer}` : m.writer;
}

export function spansRuns(members: RankMember[]): boolean {
  return new Set(members.map((m) => m.run)).size > 1;
}

/** x of a bucket on the step axis: its last step (as the history charts do). */
function xOf(b: RankBucket): number {
  return b.step_max;
}

export interface RankBands {
  /** The min..max band across members, with the mean as its line. */
  mean: Band;
  /** The median across members (no band of its own). */
  median: Band;
}

/** Buckets -> the band + mean and the median line. A bucket without numbers is a gap. */
export function rankBands(agg: RankAggregate): RankBands {
  const mean = emptyBand();
  const median = emptyBand();
  const buckets = [...agg.buckets].sort((a, b) => xOf(a) - xOf(b));
  for (const b of buckets) {
    const x = xOf(b);
    const lo = num(b.min as number), hi = num(b.max as number), m = num(b.mean as number), md = num(b.median as number);
    for (const band of [mean, median]) {
      band.x.push(x);
      band.stepMin.push(b.step_min);
      band.stepMax.push(b.step_max);
      band.points += b.count;
    }
    mean.line.push(m);
    mean.min.push(lo !== null && hi !== null ? lo : m);
    mean.max.push(lo !== null && hi !== null ? hi : m);
    median.line.push(md);
    median.min.push(md);
    median.max.push(md);
  }
  median.points = 0;
  return { mean, median };
}

/** Member `i`'s own line (its mean in each bucket, from `per_member=1`); null where it has none. */
export function memberBand(agg: RankAggregate, i: number): Band {
  const out = emptyBand();
  out.raw = agg.exact;
  for (const b of [...agg.buckets].sort((a, c) => xOf(a) - xOf(c))) {
    const v = num((b.values?.[i] ?? null) as number);
    out.x.push(xOf(b));
    out.line.push(v);
    out.min.push(v);
    out.max.push(v);
    out.stepMin.push(b.step_min);
    out.stepMax.push(b.step_max);
  }
  return out;
}

export interface BucketInfo {
  bucket: RankBucket;
  minMember: number | null;
  maxMember: number | null;
  outlier: { member: number; z: number | null } | null;
}

/** The bucket drawn at x (the one whose x is nearest at or after it), with who holds what. */
export function bucketAt(agg: RankAggregate, x: number): BucketInfo | null {
  if (!agg.buckets.length) return null;
  const sorted = [...agg.buckets].sort((a, b) => xOf(a) - xOf(b));
  let best = sorted[0];
  let bestD = Infinity;
  for (const b of sorted) {
    const d = x >= b.step_min && x <= b.step_max ? 0 : Math.abs(xOf(b) - x);
    if (d < bestD) { best = b; bestD = d; }
  }
  return {
    bucket: best,
    minMember: best.min_member ?? null,
    maxMember: best.max_member ?? null,
    outlier: best.outlier ? { member: best.outlier.member, z: num(best.outlier.z as number) } : null,
  };
}

/** Lower/upper ends of a heatmap's colour scale: the 5th/95th percentile of its cells (so one
 * extreme cell does not wash out the rest); null with no data. */
export function heatRange(rows: (number | null)[][]): [number, number] | null {
  const vals: number[] = [];
  for (const r of rows) for (const v of r) if (v !== null && Number.isFinite(v)) vals.push(v);
  if (!vals.length) return null;
  vals.sort((a, b) => a - b);
  const q = (p: number) => vals[Math.min(vals.length - 1, Math.max(0, Math.round(p * (vals.length - 1))))];
  const lo = q(0.05), hi = q(0.95);
  return lo === hi ? [lo, lo + (Math.abs(lo) * 0.1 || 1)] : [lo, hi];
}

/** A cell's colour: t = 0 good (green) .. 1 bad (red), through yellow. `higherIsBad`: step time;
 * GPU utilisation is the other way round. */
export function heatColor(v: number | null, range: [number, number] | null, higherIsBad: boolean): string {
  if (v === null || !Number.isFinite(v) || !range) return 'transparent';
  let t = (v - range[0]) / (range[1] - range[0]);
  t = Math.max(0, Math.min(1, t));
  if (!higherIsBad) t = 1 - t;
  // hue 130 (green) -> 0 (red)
  return `hsl(${Math.round(130 * (1 - t))}, 70%, ${Math.round(45 + 10 * (1 - Math.abs(t - 0.5) * 2))}%)`;
}

/** Indexes of flagged members, each with its reasons (the straggler list). */
export function flagged(s: Stragglers): { index: number; reasons: string[] }[] {
  const set = new Set(s.stragglers);
  return s.members.map((m, index) => ({ index, reasons: m.reasons ?? [], on: set.has(index) || m.flagged }))
    .filter((x) => x.on).map(({ index, reasons }) => ({ index, reasons }));
}
