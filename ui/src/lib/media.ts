// Pure helpers of the media views (the run page's Media tab, the workspace's image comparison):
// steps of media rows, the step shown for a chosen one, the sets per writer at a step, a table's
// media cells as rows, a table cell's sort key and the sort of a table page's rows.
import { MEDIA_TYPES, type MediaRow, type SeriesInfo } from './api';
import { compareCodePoints, sortClass } from './filters';
import { naturalCompare } from './format';

/** The distinct steps of `rows`, ascending. */
export function stepsOf(rows: readonly { step: number }[]): number[] {
  return [...new Set(rows.map((m) => m.step))].sort((a, b) => a - b);
}

/** The last of `steps` (ascending) at or before `step`; null when every step is later (or none). */
export function stepAtOrBefore(steps: readonly number[], step: number): number | null {
  let lo = 0, hi = steps.length; // first index whose step is > `step`
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid] <= step) lo = mid + 1; else hi = mid;
  }
  return lo === 0 ? null : steps[lo - 1];
}

/** The writers of `rows`, in natural order (rank_2 before rank_10). */
export function writersOf(rows: readonly { writer: string }[]): string[] {
  return [...new Set(rows.map((m) => m.writer))].sort(naturalCompare);
}

/** The set a writer logged at exactly `step`, by index. */
export function setAt(rows: readonly MediaRow[], writer: string, step: number): MediaRow[] {
  return rows.filter((m) => m.writer === writer && m.step === step).sort((a, b) => a.index - b.index);
}

/** What one run shows at a chosen step: per writer, its last step at or before it (null: none
 * yet) and that step's set. Each writer has its own steps (the ranks of a shared run may log a
 * key at different steps). */
export interface WriterSet { writer: string; step: number | null; set: MediaRow[] }
export function setsAtOrBefore(rows: readonly MediaRow[], step: number): WriterSet[] {
  return writersOf(rows).map((writer) => {
    const at = stepAtOrBefore(stepsOf(rows.filter((m) => m.writer === writer)), step);
    return { writer, step: at, set: at === null ? [] : setAt(rows, writer, at) };
  });
}

/** The keys of `type` over several runs' key lists (GET .../keys), each once, in natural order. */
export function keysOfType(keysByRun: Iterable<readonly SeriesInfo[]>, type: string): string[] {
  const out = new Set<string>();
  for (const ks of keysByRun) for (const k of ks) if (k.type === type) out.add(k.key);
  return [...out].sort(naturalCompare);
}

/** A media cell of a table page (docs/formats.md "Tables": `{"_type": "image", "sha256",
 * "mime", ..., "url", "uploaded"}`, the url given by the server) as a media row of the table's
 * key, step and writer; null for any other cell. */
export function mediaCell(v: unknown, table: MediaRow): MediaRow | null {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
  const c = v as Record<string, unknown>;
  const type = c._type;
  if (typeof type !== 'string' || type === 'table' || !(MEDIA_TYPES as string[]).includes(type)) return null;
  if (typeof c.url !== 'string' || typeof c.sha256 !== 'string' || typeof c.mime !== 'string') return null;
  const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : 0);
  return {
    key: table.key, writer: table.writer, step: table.step, index: table.index, time_ms: table.time_ms,
    type: type as MediaRow['type'], mime: c.mime, sha256: c.sha256, size: num(c.size),
    caption: typeof c.caption === 'string' ? c.caption : '', uploaded: c.uploaded === true, url: c.url,
    width: num(c.width), height: num(c.height), duration_ms: num(c.duration_ms),
  };
}

/** What a table column sorts a cell by: numbers and strings as they are, a media cell by its
 * caption, another object by its JSON; null for null. */
export function cellSortKey(v: unknown): number | string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number' || typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  const c = v as Record<string, unknown>;
  if (typeof c._type === 'string' && typeof c.caption === 'string') return c.caption;
  return JSON.stringify(v);
}

/** The rows of a table page sorted by column `col`, as the runs table sorts (filters.ts
 * sortRuns): numbers (the strings "Infinity" and "-Infinity" the API sends for non-finite ones
 * among them), then "NaN", then other strings (by code point), then nulls, whatever the
 * direction; `desc` reverses the order within a class, equal cells keep their order. The tables
 * route does not sort: this sorts the page shown, not the table. */
export function sortTableRows(rows: readonly unknown[][], col: number, desc: boolean): unknown[][] {
  const dir = desc ? -1 : 1;
  const dec = rows.map((row, i) => ({ row, i, ...sortClass(cellSortKey(row[col])) }));
  dec.sort((a, b) => {
    if (a.cls !== b.cls) return a.cls - b.cls;
    let c = 0;
    if (a.cls === 0) c = a.num < b.num ? -1 : a.num > b.num ? 1 : 0;
    else if (a.cls === 2) c = compareCodePoints(a.str, b.str);
    return c !== 0 ? c * dir : a.i - b.i;
  });
  return dec.map((d) => d.row);
}
