// Formatting helpers and the colour palette. Pure functions.

export const PALETTE = [
  '#2f7de1', '#e8590c', '#2b9348', '#c2255c', '#7048e8', '#0c8599', '#e67700', '#5c940d',
  '#d6336c', '#1971c2', '#862e9c', '#a61e4d', '#087f5b', '#364fc7', '#b35c00', '#495057',
];

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
