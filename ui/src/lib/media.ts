// Pure helpers of the media views (the run page's Media tab, the workspace's image comparison):
// steps of media rows, the step shown for a chosen one, the sets per writer at a step.
import type { MediaRow, SeriesInfo } from './api';
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
