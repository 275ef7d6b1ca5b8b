// Formatting helpers, the colour palette and line dashes. Pure functions.

import type { XMode } from './series';

/** 20 colours, distinguishable on light and dark backgrounds; past 20 lines, dashes tell apart. */
export const PALETTE = [
  '#2f7de1', '#e8590c', '#2b9348', '#c2255c', '#7048e8', '#0c8599', '#e67700', '#5c940d',
  '#d6336c', '#1971c2', '#862e9c', '#a61e4d', '#087f5b', '#364fc7', '#b35c00', '#495057',
  '#f03e3e', '#15aabf', '#94d82d', '#be4bdb',
];

/** Dash patterns (canvas setLineDash), cycled once every palette colour has been used. */
export const DASHES: number[][] = [[], [6, 3], [2, 3], [10, 3, 2, 3], [1, 5]];

/** Colour and dash of the i-th line: 20 colours, then the same colours dashed. */
export function styleAt(i: number): { color: string; dash: number[] } {
  const n = Math.max(0, Math.floor(i));
  return { color: PALETTE[n % PALETTE.length], dash: DASHES[Math.floor(n / PALETTE.length) % DASHES.length] };
}

/** A stable colour for a label: rank_N gets palette[N], others a hash. */
export function colorFor(label: string, index?: number): string {
  if (index !== undefined) return PALETTE[index % PALETTE.length];
  const m = /(\d+)$/.exec(label);
  if (m) return PALETTE[Number(m[1]) % PALETTE.length];
  let h = 0;
  for (let i = 0; i < label.length; i++) h = (h * 31 + label.charCodeAt(i)) | 0;
  return PALETTE[Math.abs(h) % PALETTE.length];
}

export function withAlpha(hex: string, a: number): string {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${a})`;
}

export function fmtDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  // Negative on a relative-time axis: points timed before the run's start (clock skew).
  if (ms < 0) return '-' + fmtDuration(-ms);
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function fmtTime(ms: number | null | undefined): string {
  if (!ms) return '—';
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtAgo(ms: number | null | undefined, now = Date.now()): string {
  if (!ms) return '—';
  const d = now - ms;
  if (d < 0) return 'just now';
  return `${fmtDuration(d)} ago`;
}

/** Numbers for tables and legends: short but exact enough. */
export function fmtNum(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
    return String(Number(v.toPrecision(5)));
  }
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return JSON.stringify(v);
}

/** The value at a flattened key (`optim.lr`) of a JSON document: the key itself when the
 * document has it (a key with a dot in it), else the path its dots name through nested objects;
 * undefined when absent. `path` (key.split('.')) can be given by loops that reuse it. */
export function valueAt(doc: Record<string, unknown> | null | undefined, key: string, path: string[] = key.split('.')): unknown {
  if (!doc) return undefined;
  const direct = doc[key];
  if (direct !== undefined || path.length === 1) return direct;
  let cur: unknown = doc;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return cur;
}

/** Flattens nested objects to dotted keys for config/summary tables. */
export function flatten(obj: unknown, prefix = '', out: [string, unknown][] = []): [string, unknown][] {
  if (obj && typeof obj === 'object' && !Array.isArray(obj)) {
    const entries = Object.entries(obj as Record<string, unknown>);
    if (!entries.length && prefix) out.push([prefix, {}]);
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) {
    out.push([prefix, obj]);
  }
  return out;
}

/** The section a metric key belongs to: the part before its first '/'. */
export function prefixOf(key: string): string {
  const i = key.indexOf('/');
  return i > 0 ? key.slice(0, i) : '';
}

/** A byte count for people: 512 B, 1.5 kB, 12.3 MB (powers of 1000). */
export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  if (n < 1000) return `${n} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let v = n / 1000, i = 0;
  while (v >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

// One collator for every comparison: String.localeCompare with options builds one per call.
const collator = new Intl.Collator(undefined, { numeric: true });

/** Natural order for labels and keys: rank_2 before rank_10. */
export function naturalCompare(a: string, b: string): number {
  return collator.compare(a, b);
}

const SI = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']] as const;

/** Decimals that write multiples of `incr` exactly: 0.25 -> 2, 0.2 -> 1, 5 -> 0. */
function decimalsFor(incr: number): number {
  if (!(incr > 0) || !Number.isFinite(incr)) return 0;
  for (let d = 0; d < 12; d++) {
    const scaled = incr * 10 ** d;
    if (Math.abs(scaled - Math.round(scaled)) < 1e-6 * Math.max(1, scaled)) return d;
  }
  return 12;
}

/**
 * An axis tick: short (6e-4, 3.2G, 0.25, 1,500) and exact enough that ticks `incr` apart stay
 * distinct. Small magnitudes use a mantissa and exponent, large ones an SI suffix.
 */
export function fmtTick(v: number, incr: number): string {
  if (!Number.isFinite(v)) return '';
  if (v === 0 || Math.abs(v) < Math.abs(incr) * 1e-9) return '0';
  const a = Math.abs(v);
  const step = Math.abs(incr) > 0 ? Math.abs(incr) : a;
  if (a >= 1e4) {
    for (const [unit, suffix] of SI) {
      if (a >= unit) {
        const d = decimalsFor(step / unit);
        return trimZeros((v / unit).toFixed(Math.min(d, 3))) + suffix;
      }
    }
  }
  if (a < 1e-3) {
    const e = Math.floor(Math.log10(a));
    const d = Math.max(0, Math.min(6, decimalsFor(step / Math.pow(10, e))));
    return `${trimZeros((v / Math.pow(10, e)).toFixed(d))}e${e}`;
  }
  const d = decimalsFor(step);
  return trimZeros(v.toFixed(Math.min(d, 10)));
}

function trimZeros(s: string): string {
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

/** A tick of the relative-time axis (seconds since the run's start), precise to `incr`. */
export function fmtRelTick(sec: number, incr: number): string {
  if (!Number.isFinite(sec)) return '';
  const neg = sec < 0;
  let s = Math.abs(sec);
  let out: string;
  if (incr < 1) {
    out = `${trimZeros(s.toFixed(Math.min(3, decimalsFor(incr))))}s`;
  } else if (s < 60) {
    out = `${Math.round(s)}s`;
  } else if (s < 3600) {
    s = Math.round(s);
    const m = Math.floor(s / 60), r = s % 60;
    out = incr >= 60 && r === 0 ? `${m}m` : `${m}m ${String(r).padStart(2, '0')}s`;
  } else {
    const m = Math.round(s / 60);
    const h = Math.floor(m / 60), r = m % 60;
    out = incr >= 3600 && r === 0 ? `${h}h` : `${h}h ${String(r).padStart(2, '0')}m`;
  }
  return neg ? '-' + out : out;
}

/** A relative time (seconds since the run's start) in full, for a tooltip: the axis' units with
 * every second, "2h 01m 05s", "1m 05s"; under a minute to the millisecond ("7.25s"). */
export function fmtRelTime(sec: number): string {
  if (!Number.isFinite(sec)) return '';
  if (sec < 0) return '-' + fmtRelTime(-sec);
  if (sec < 60) return `${trimZeros(sec.toFixed(3))}s`;
  const s = Math.round(sec);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
  const p = (n: number) => String(n).padStart(2, '0');
  return h > 0 ? `${h}h ${p(m)}m ${p(r)}s` : `${m}m ${p(r)}s`;
}

/** A chart's x value under the cursor (the tooltip): `step 1,200`, a relative time in full
 * (fmtRelTime), a wall time as date and time (fmtTime, local). With `near` (the cursor's x), a
 * wall time of the same day drops its date: a line's nearest point next to the cursor's. */
export function fmtTooltipX(x: number, mode: XMode, near?: number): string {
  if (mode === 'step') return `step ${fmtNum(Math.round(x))}`;
  if (mode === 'rel') return fmtRelTime(x);
  const t = fmtTime(x * 1000);
  return near !== undefined && fmtTime(near * 1000).slice(0, 10) === t.slice(0, 10) ? t.slice(11) : t;
}

/** The signal of an exit code that follows the shell's 128 + N convention, e.g. 137 -> SIGKILL. */
export function signalOfExit(code: number | null | undefined): string | null {
  if (code === null || code === undefined || code <= 128 || code > 128 + 64) return null;
  const names: Record<number, string> = {
    1: 'SIGHUP', 2: 'SIGINT', 3: 'SIGQUIT', 4: 'SIGILL', 6: 'SIGABRT', 7: 'SIGBUS', 8: 'SIGFPE', 9: 'SIGKILL',
    10: 'SIGUSR1', 11: 'SIGSEGV', 12: 'SIGUSR2', 13: 'SIGPIPE', 14: 'SIGALRM', 15: 'SIGTERM',
  };
  const n = code - 128;
  return names[n] ?? `signal ${n}`;
}
