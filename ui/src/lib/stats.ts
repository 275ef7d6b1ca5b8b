// Correlation of a field with a metric, for the parameter importance panel: Pearson on numbers
// (booleans as 0/1, the point-biserial correlation), and for categories the correlation ratio
// (eta: the share of the metric's spread that the category means explain, square-rooted; in
// [0, 1], no sign). Missing values: the pairs where either side is missing are left out.
// Pure functions: unit-tested in stats.test.ts.

/** Pearson's r over the pairs where both are finite numbers; null when fewer than 3 pairs or
 * either side is constant. Returns the pairs used too. */
export function pearson(x: ArrayLike<number>, y: ArrayLike<number>): { r: number | null; n: number } {
  let n = 0, sx = 0, sy = 0;
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i]) || !Number.isFinite(y[i])) continue;
    n++; sx += x[i]; sy += y[i];
  }
  if (n < 3) return { r: null, n };
  const mx = sx / n, my = sy / n;
  let cxy = 0, cxx = 0, cyy = 0;
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i]) || !Number.isFinite(y[i])) continue;
    const dx = x[i] - mx, dy = y[i] - my;
    cxy += dx * dy; cxx += dx * dx; cyy += dy * dy;
  }
  if (cxx <= 0 || cyy <= 0) return { r: null, n };
  return { r: Math.max(-1, Math.min(1, cxy / Math.sqrt(cxx * cyy))), n };
}

/** The correlation ratio eta of categories (null = missing) with y: sqrt(between-group sum of
 * squares / total sum of squares); null when fewer than 3 pairs, one category, or y constant. */
export function correlationRatio(cats: ArrayLike<string | null>, y: ArrayLike<number>): { r: number | null; n: number } {
  const groups = new Map<string, { s: number; c: number }>();
  let n = 0, s = 0;
  for (let i = 0; i < y.length; i++) {
    const c = cats[i];
    if (c === null || !Number.isFinite(y[i])) continue;
    n++; s += y[i];
    const g = groups.get(c);
    if (g) { g.s += y[i]; g.c++; } else groups.set(c, { s: y[i], c: 1 });
  }
  if (n < 3 || groups.size < 2) return { r: null, n };
  const m = s / n;
  let total = 0;
  for (let i = 0; i < y.length; i++) if (cats[i] !== null && Number.isFinite(y[i])) total += (y[i] - m) ** 2;
  if (total <= 0) return { r: null, n };
  let between = 0;
  for (const g of groups.values()) between += g.c * (g.s / g.c - m) ** 2;
  return { r: Math.min(1, Math.sqrt(between / total)), n };
}
