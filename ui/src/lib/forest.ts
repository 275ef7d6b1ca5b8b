// A small random-forest regressor over binned features, and its permutation importance, for the
// workspace's parameter importance panel (docs/ui.md, "Parameter importance"). Deterministic: a
// seeded RNG (mulberry32) draws the bootstrap samples, the candidate features of each split and
// the permutations, so the same runs give the same numbers on every machine.
// Pure functions, no DOM: unit-tested in forest.test.ts.

/** mulberry32: a small, fast, seeded PRNG; returns floats in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fisher-Yates shuffle in place. */
export function shuffle<T extends { length: number; [i: number]: any }>(a: T, rand: () => number): T {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const t = a[i]; a[i] = a[j]; a[j] = t;
  }
  return a;
}

/** The most bins a feature is cut into (bin 0 is "missing"). */
export const MAX_BINS = 32;

/**
 * A numeric column (NaN = missing) to bin codes: 0 for missing, 1.. in value order. Up to
 * MAX_BINS-1 distinct values get a bin each; more are cut at quantiles.
 */
export function binColumn(values: ArrayLike<number>): Uint8Array {
  const n = values.length;
  let m = 0;
  const finite = new Float64Array(n);
  for (let i = 0; i < n; i++) if (Number.isFinite(values[i])) finite[m++] = values[i];
  const sorted = finite.subarray(0, m).sort();
  const distinct: number[] = [];
  for (const v of sorted) if (!distinct.length || distinct[distinct.length - 1] !== v) distinct.push(v);
  // Cut points: a value v goes to bin 1 + (number of cuts <= v).
  let cuts: number[];
  if (distinct.length <= MAX_BINS - 1) cuts = distinct.slice(1);
  else {
    cuts = [];
    const parts = MAX_BINS - 1;
    for (let q = 1; q < parts; q++) {
      const c = sorted[Math.floor((q * m) / parts)];
      if (c > sorted[0] && (!cuts.length || c > cuts[cuts.length - 1])) cuts.push(c);
    }
  }
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) { out[i] = 0; continue; }
    let lo = 0, hi = cuts.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (cuts[mid] <= v) lo = mid + 1; else hi = mid; }
    out[i] = 1 + lo;
  }
  return out;
}

/** A tree as flat arrays: node i splits on feature[i] (bin <= thr[i] goes left) or is a leaf
 * (feature[i] = -1) predicting value[i]. */
export interface Tree { feature: Int16Array; thr: Uint8Array; left: Int32Array; right: Int32Array; value: Float64Array }

export interface ForestOptions {
  trees?: number;
  maxDepth?: number;
  minLeaf?: number;
  /** Features tried at each split (default: a third of them, at least 1). */
  mtry?: number;
  /** Rows drawn (with replacement) for each tree: min(n, this). */
  maxSamples?: number;
  seed?: number;
}

export interface Forest { trees: Tree[]; /** Rows each tree did not see (out of bag), sorted. */ oob: Int32Array[] }

/** Trains a regression forest on binned columns `X` (one Uint8Array per feature) and target `y`. */
export function trainForest(X: Uint8Array[], y: ArrayLike<number>, o: ForestOptions = {}): Forest {
  const n = y.length, p = X.length;
  const nTrees = o.trees ?? 60, maxDepth = o.maxDepth ?? 8, minLeaf = o.minLeaf ?? 2;
  const mtry = Math.max(1, Math.min(p, o.mtry ?? Math.ceil(p / 3)));
  const m = Math.min(n, o.maxSamples ?? 1500);
  const rand = rng(o.seed ?? 1);
  const trees: Tree[] = [], oob: Int32Array[] = [];
  const seen = new Uint8Array(n);
  for (let t = 0; t < nTrees; t++) {
    seen.fill(0);
    const rows = new Int32Array(m);
    for (let i = 0; i < m; i++) { const r = Math.floor(rand() * n); rows[i] = r; seen[r] = 1; }
    const out: number[] = [];
    for (let i = 0; i < n; i++) if (!seen[i]) out.push(i);
    oob.push(Int32Array.from(out));
    trees.push(growTree(X, y, rows, { maxDepth, minLeaf, mtry }, rand));
  }
  return { trees, oob };
}

function growTree(X: Uint8Array[], y: ArrayLike<number>, rows: Int32Array, o: { maxDepth: number; minLeaf: number; mtry: number }, rand: () => number): Tree {
  const feature: number[] = [], thr: number[] = [], left: number[] = [], right: number[] = [], value: number[] = [];
  const p = X.length;
  const feats = Int32Array.from({ length: p }, (_, i) => i);
  const sum = new Float64Array(MAX_BINS), cnt = new Float64Array(MAX_BINS);
  // Depth-first on index ranges of `rows` (partitioned in place).
  const build = (lo: number, hi: number, depth: number): number => {
    const id = feature.length;
    feature.push(-1); thr.push(0); left.push(-1); right.push(-1);
    let s = 0, ss = 0;
    for (let i = lo; i < hi; i++) { const v = y[rows[i]]; s += v; ss += v * v; }
    const count = hi - lo;
    value.push(s / count);
    const sse = ss - (s * s) / count;
    if (depth >= o.maxDepth || count < 2 * o.minLeaf || sse <= 1e-12 * Math.max(1, ss)) return id;
    // mtry features drawn without replacement (a partial shuffle).
    let bestGain = 0, bestF = -1, bestT = 0;
    for (let k = 0; k < o.mtry; k++) {
      const j = k + Math.floor(rand() * (p - k));
      const f = feats[j]; feats[j] = feats[k]; feats[k] = f;
      const col = X[f];
      sum.fill(0); cnt.fill(0);
      for (let i = lo; i < hi; i++) { const b = col[rows[i]]; sum[b] += y[rows[i]]; cnt[b] += 1; }
      let ls = 0, lc = 0;
      for (let b = 0; b < MAX_BINS - 1; b++) {
        ls += sum[b]; lc += cnt[b];
        if (cnt[b] === 0 || lc < o.minLeaf) continue;
        const rc = count - lc;
        if (rc < o.minLeaf) break;
        const rs = s - ls;
        // SSE reduction of the split: sum_l^2/n_l + sum_r^2/n_r - sum^2/n.
        const gain = (ls * ls) / lc + (rs * rs) / rc - (s * s) / count;
        if (gain > bestGain + 1e-12) { bestGain = gain; bestF = f; bestT = b; }
      }
    }
    if (bestF < 0) return id;
    // Partition rows[lo, hi) by the split.
    const col = X[bestF];
    let i = lo, j = hi - 1;
    while (i <= j) {
      if (col[rows[i]] <= bestT) i++;
      else { const t = rows[i]; rows[i] = rows[j]; rows[j] = t; j--; }
    }
    feature[id] = bestF; thr[id] = bestT;
    left[id] = build(lo, i, depth + 1);
    right[id] = build(i, hi, depth + 1);
    return id;
  };
  build(0, rows.length, 0);
  return {
    feature: Int16Array.from(feature), thr: Uint8Array.from(thr), left: Int32Array.from(left), right: Int32Array.from(right),
    value: Float64Array.from(value),
  };
}

/** One tree's prediction for row `r`, reading feature `swap` from `alt` instead of X. */
function predictTree(t: Tree, X: Uint8Array[], r: number, swap = -1, alt?: Uint8Array): number {
  let node = 0;
  for (;;) {
    const f = t.feature[node];
    if (f < 0) return t.value[node];
    const b = f === swap ? alt![r] : X[f][r];
    node = b <= t.thr[node] ? t.left[node] : t.right[node];
  }
}

/** The forest's prediction for each row (the mean of its trees). */
export function predict(forest: Forest, X: Uint8Array[], n: number): Float64Array {
  const out = new Float64Array(n);
  for (const t of forest.trees) for (let r = 0; r < n; r++) out[r] += predictTree(t, X, r);
  for (let r = 0; r < n; r++) out[r] /= forest.trees.length;
  return out;
}

export interface PermutationOptions {
  /** Permutations per feature (their mean is taken). */
  repeats?: number;
  /** Rows the error is measured on: a seeded sample of at most this many. */
  maxRows?: number;
  seed?: number;
}

export interface PermutationResult {
  /** Out-of-bag R^2 of the forest (1 - MSE / variance of y over the evaluated rows). */
  r2: number;
  /** Per feature: the increase of the out-of-bag MSE when its values are shuffled, as a
   * fraction of the variance of y (the R^2 lost); about 0 for a feature the model does not use. */
  importance: number[];
  /** Per feature: the standard deviation of that over the repeats. */
  std: number[];
}

/**
 * Permutation importance on out-of-bag predictions (Breiman 2001): each row is predicted by the
 * trees that did not train on it, with one feature's values shuffled among the evaluated rows;
 * the error grows by as much as the model relied on that feature, linear or not.
 */
export function permutationImportance(forest: Forest, X: Uint8Array[], y: ArrayLike<number>, o: PermutationOptions = {}): PermutationResult {
  const n = y.length, p = X.length;
  const rand = rng((o.seed ?? 1) ^ 0x9e3779b9);
  // Rows to evaluate: every row, or a sample of them.
  let evalRows = Int32Array.from({ length: n }, (_, i) => i);
  const maxRows = o.maxRows ?? 2000;
  if (n > maxRows) evalRows = shuffle(evalRows, rand).slice(0, maxRows).sort();
  const pos = new Int32Array(n).fill(-1);
  evalRows.forEach((r, k) => { pos[r] = k; });
  // Per tree, its out-of-bag rows among the evaluated ones.
  const treeRows = forest.oob.map((rows) => rows.filter((r) => pos[r] >= 0));
  const votes = new Float64Array(evalRows.length);
  for (const rows of treeRows) for (const r of rows) votes[pos[r]] += 1;
  const used: number[] = [];
  evalRows.forEach((r, k) => { if (votes[k] > 0) used.push(k); });
  let mean = 0;
  for (const k of used) mean += y[evalRows[k]];
  mean /= Math.max(1, used.length);
  let variance = 0;
  for (const k of used) variance += (y[evalRows[k]] - mean) ** 2;
  variance /= Math.max(1, used.length);
  // Each tree's own prediction of each of its rows, and per feature (0..31) the rows whose path
  // splits on it: shuffling a feature changes only those, so only they are walked again (a
  // feature past 31 re-walks every row).
  const basePred: Float64Array[] = [];
  const touched: Int32Array[][] = Array.from({ length: Math.min(p, 32) }, () => []);
  const baseSum = new Float64Array(evalRows.length);
  forest.trees.forEach((t, i) => {
    const rows = treeRows[i];
    const pr = new Float64Array(rows.length);
    const lists: number[][] = Array.from({ length: Math.min(p, 32) }, () => []);
    for (let k = 0; k < rows.length; k++) {
      let node = 0, mask = 0;
      for (;;) {
        const f = t.feature[node];
        if (f < 0) break;
        if (f < 32 && !(mask & (1 << f))) { mask |= 1 << f; lists[f].push(k); }
        node = X[f][rows[k]] <= t.thr[node] ? t.left[node] : t.right[node];
      }
      pr[k] = t.value[node];
      baseSum[pos[rows[k]]] += pr[k];
    }
    basePred.push(pr);
    lists.forEach((l, f) => touched[f].push(Int32Array.from(l)));
  });
  const all = treeRows.map((rows) => Int32Array.from({ length: rows.length }, (_, k) => k));
  const mse = (swap: number, alt?: Uint8Array) => {
    const pred = Float64Array.from(baseSum);
    if (swap >= 0) {
      forest.trees.forEach((t, i) => {
        const rows = treeRows[i], own = basePred[i];
        for (const k of swap < 32 ? touched[swap][i] : all[i]) pred[pos[rows[k]]] += predictTree(t, X, rows[k], swap, alt) - own[k];
      });
    }
    let e = 0;
    for (const k of used) { const d = pred[k] / votes[k] - y[evalRows[k]]; e += d * d; }
    return e / Math.max(1, used.length);
  };
  const base = mse(-1);
  const repeats = o.repeats ?? 3;
  const importance: number[] = [], std: number[] = [];
  const alt = new Uint8Array(n);
  const vals = new Uint8Array(evalRows.length);
  for (let f = 0; f < p; f++) {
    const xs: number[] = [];
    for (let rep = 0; rep < repeats; rep++) {
      evalRows.forEach((r, k) => { vals[k] = X[f][r]; });
      shuffle(vals, rand);
      evalRows.forEach((r, k) => { alt[r] = vals[k]; });
      xs.push(variance > 0 ? (mse(f, alt) - base) / variance : 0);
    }
    const m = xs.reduce((a, b) => a + b, 0) / xs.length;
    importance.push(m);
    std.push(Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / xs.length));
  }
  return { r2: variance > 0 ? 1 - base / variance : 0, importance, std };
}
