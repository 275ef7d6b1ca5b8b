// The histograms scenario of seed_sdk.py `hist` written through the HTTP API instead of the SDK
// (COHORT_UI_SEED=http, for a machine without the Python extension built): histograms are
// ingested in binary batches only (docs/formats.md "Batch v4"), so this encodes them as the
// client library does -- header "CBAT", version 4, CRC-32C of the payload; a key table, no
// history/system/console rows, the histogram rows, no media rows -- and posts them with
// `Cohort-Batch-Seq`.
// The scalar `loss` goes in the same batches. Same keys, writers, steps and values as the SDK seed.
import { api } from './harness.mjs';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

function crc32c(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

class Out {
  constructor() { this.bytes = []; }
  u8(v) { this.bytes.push(v & 0xff); }
  varint(v) {
    let n = BigInt(v);
    do {
      let b = Number(n & 0x7fn);
      n >>= 7n;
      if (n > 0n) b |= 0x80;
      this.bytes.push(b);
    } while (n > 0n);
  }
  zigzag(v) { const n = BigInt(v); this.varint(n >= 0n ? n << 1n : ((-n) << 1n) - 1n); }
  f64(v) { const b = new Uint8Array(8); new DataView(b.buffer).setFloat64(0, v, true); this.bytes.push(...b); }
  str(s) { const b = new TextEncoder().encode(s); this.varint(b.length); this.bytes.push(...b); }
}

/** A batch v4 of history rows ({step, time, values: {key: number}}) and histogram rows ({step,
 * time, key, lo, hi | edges, counts}). */
export function encodeBatch(history, rows) {
  const keys = [...new Set([...history.flatMap((h) => Object.keys(h.values)), ...rows.map((r) => r.key)])];
  const p = new Out();
  p.varint(keys.length);
  for (const k of keys) p.str(k);
  p.varint(history.length);
  let prev = 0;
  for (const h of history) {
    const ks = Object.keys(h.values);
    p.u8(1); // a step follows; the key list too
    p.varint(h.step);
    p.zigzag(h.time - prev);
    prev = h.time;
    p.varint(ks.length);
    for (const k of ks) p.varint(keys.indexOf(k));
    for (const k of ks) p.f64(h.values[k]);
  }
  p.varint(0); // system rows
  p.varint(0); // console lines
  p.varint(rows.length);
  let prevTime = 0;
  for (const r of rows) {
    p.u8(1 | (r.edges ? 2 : 0));
    p.varint(r.step);
    p.zigzag(r.time - prevTime);
    prevTime = r.time;
    p.varint(keys.indexOf(r.key));
    p.varint(r.counts.length);
    if (r.edges) for (const e of r.edges) p.f64(e); else { p.f64(r.lo); p.f64(r.hi); }
    for (const c of r.counts) p.f64(c);
  }
  p.varint(0); // media rows
  const payload = Uint8Array.from(p.bytes);
  const out = new Uint8Array(12 + payload.length);
  out.set([0x43, 0x42, 0x41, 0x54, 4, 0, 0, 0], 0); // "CBAT", version 4, flags, reserved
  new DataView(out.buffer).setUint32(8, crc32c(payload), true);
  out.set(payload, 12);
  return out;
}

// ---- the scenario (seed_sdk.py hist) ------------------------------------------------------------

const EDGES = Array.from({ length: 49 }, (_, i) => -3 + (6 * i) / 48);

function erf(x) {
  // Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): the expected counts round the same as math.erf's
  // except at exact .5 boundaries, which these centres do not hit in practice.
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return x >= 0 ? y : -y;
}

function normalCounts(mu, sigma, n = 1000) {
  const cdf = EDGES.map((e) => 0.5 * (1 + erf((e - mu) / (sigma * Math.SQRT2))));
  return EDGES.slice(0, -1).map((_, i) => Math.round(n * (cdf[i + 1] - cdf[i])));
}

/** numpy-style histogram of values in `bins` uniform bins over their range (widened by 0.5 when
 * every value is equal; NaN left out), as cohort.Histogram(values) computes it. */
function histogramOf(values, bins) {
  const finite = values.filter(Number.isFinite);
  let lo = finite.length ? Math.min(...finite) : -0.5, hi = finite.length ? Math.max(...finite) : 0.5;
  if (!(lo < hi)) { lo -= 0.5; hi += 0.5; }
  const counts = new Array(bins).fill(0);
  const w = (hi - lo) / bins;
  for (const v of finite) counts[Math.min(Math.floor((v - lo) / w), bins - 1)] += 1;
  return { lo, hi, counts };
}

/** A small deterministic generator (the values differ from Python's random; the tests do not
 * depend on them). */
function rng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
}

/** Seeds the run "hist-shared" through the HTTP API; resolves to its id. */
export async function seedHistogramsWithHttp(server, entity, project, { steps = 10000 } = {}) {
  const base = `/api/v1/runs/${encodeURIComponent(entity)}/${encodeURIComponent(project)}`;
  const id = `hist${Date.now().toString(36)}`;
  await api(server, 'POST', base, { id, name: 'hist-shared', job_type: 'train', resume: 'allow' });
  const t0 = Date.now() - 60000;
  for (const rank of [0, 1]) {
    const label = `rank_${rank}`;
    await api(server, 'POST', `${base}/${id}/writers`, {
      label, primary: rank === 0, update_finish_state: rank === 0, host: 'node0', pid: 4000 + rank, gpu_ids: [],
    });
    const n = rank === 0 ? steps : 200;
    const rnd = rng(7 + rank);
    const gauss = (mu, sd) => mu + sd * Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
    let seq = 0;
    const rows = [], history = [];
    const flush = async () => {
      if (!rows.length && !history.length) return;
      const body = encodeBatch(history.splice(0), rows.splice(0));
      const resp = await fetch(`${server.url}${base}/${id}/writers/${label}/batches`, {
        method: 'POST', body,
        headers: { Authorization: `Bearer ${server.key}`, 'Content-Type': 'application/vnd.cohort.batch', 'Cohort-Batch-Seq': String(++seq) },
      });
      if (!resp.ok) throw new Error(`binary batch: ${resp.status} ${await resp.text()}`);
    };
    for (let step = 0; step < n; step++) {
      const time = t0 + step * 5;
      const mu = rank === 0 ? -1 + (2 * step) / (steps - 1) : 2.0;
      history.push({ step, time, values: { loss: 1 / (1 + step) + 0.01 * rank } });
      rows.push({ step, time, key: 'gradients/fc1.weight', edges: EDGES, counts: normalCounts(mu, 0.5) });
      if (rank === 0 && step < 50) rows.push({ step, time, key: 'parameters/fc1.weight', ...histogramOf(Array.from({ length: 200 }, () => gauss(0.1 * step, 1)), 32) });
      if (rank === 0 && step < 20) rows.push({ step, time, key: 'parameters/const', ...histogramOf(new Array(100).fill(7.0), 64) });
      if (rank === 0 && step === 5) rows.push({ step, time, key: 'parameters/single', ...histogramOf([0.5, 1.5, 1.5, 2.5], 3) });
      if (rank === 0 && step < 30) {
        const nan = step >= 10 && step < 20;
        rows.push({ step, time, key: 'gradients/nan', ...histogramOf(nan ? new Array(50).fill(NaN) : Array.from({ length: 50 }, () => rnd() * 2 - 1), 16) });
      }
      if (rows.length >= 2000) await flush();
    }
    await flush();
  }
  for (const rank of [1, 0]) await api(server, 'POST', `${base}/${id}/writers/rank_${rank}/finish`, { exit_code: 0 });
  return id;
}
