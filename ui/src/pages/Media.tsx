// Run page, Media tab: the run's media keys (images, audio, video, html, tables); for the chosen
// key a step slider over the steps it was logged at and a checkbox per writer (shared runs), then
// the step's set per writer: images in a grid (full size on click), audio and video players, HTML
// in a sandboxed frame (it never runs in the UI's origin: no scripts, an opaque origin), tables
// with paging and sorting. Bytes are fetched with the browser's key (api.blobAt) into object URLs
// (components/media.tsx, shared with the workspace's image comparison). The key, the step and the
// hidden writers are in the URL (`mk`, `mstep`, `mhide`): a reload or a shared link shows the same.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, type MediaRow, type RunDetail, type SeriesInfo } from '../lib/api';
import { fmtNum, naturalCompare } from '../lib/format';
import { mediaCell, setAt, sortTableRows, stepsOf, writersOf } from '../lib/media';
import { update } from '../lib/nav';
import type { AppState } from '../lib/url';
import { Empty, ErrorBox, Loading, useLoad } from '../components/common';
import { BlobItem, StepSlider } from '../components/media';

const TABLE_PAGE = 50;

/** A table cell that is a number: a JSON number, or the strings the API writes for non-finite
 * ones (docs/api.md). */
function isNumberCell(v: unknown): boolean {
  return typeof v === 'number' || v === 'NaN' || v === 'Infinity' || v === '-Infinity';
}

/** The text of a plain table cell (not media, not null) and its tooltip: a number short, as
 * everywhere in the UI (0.6, not 0.6000000000000001), with its full value in the tooltip. */
export function tableCellText(v: unknown): { text: string; title?: string } {
  if (typeof v === 'number') {
    const text = fmtNum(v);
    const full = String(v);
    return text === full ? { text } : { text, title: full };
  }
  if (v !== null && typeof v === 'object') return { text: JSON.stringify(v) };
  return { text: String(v) };
}

/** Per column of the rows shown: numeric (right-aligned, its nulls too) when each of its cells
 * that is not null is a number, and one is. */
export function numericColumns(rows: readonly unknown[][], columns: number): boolean[] {
  const out: boolean[] = [];
  for (let j = 0; j < columns; j++) {
    let numbers = 0, others = 0;
    for (const row of rows) {
      const v = row[j];
      if (v === null || v === undefined) continue;
      if (isNumberCell(v)) numbers++; else others++;
    }
    out.push(numbers > 0 && others === 0);
  }
  return out;
}

/** The slider's index of the step in the URL (`mstep`): null (none) the last; a step not logged
 * (a hand-edited link, another writer's) the latest one before it, else the first. */
export function stepIndexOf(steps: readonly number[], step: number | null): number {
  if (!steps.length) return 0;
  if (step === null) return steps.length - 1;
  let idx = 0;
  for (let i = 0; i < steps.length && steps[i] <= step; i++) idx = i;
  return idx;
}

/** The URL's `mstep` for the slider at `idx`: the last step is none (the latest is followed as
 * steps arrive). */
export function stepParamOf(steps: readonly number[], idx: number): number | null {
  return idx >= steps.length - 1 ? null : steps[idx];
}

export function MediaTab({ r, state, tick }: { r: RunDetail; state: AppState; tick: number }) {
  const keys = useLoad((signal) => api.mediaKeys(r.entity, r.project, r.id, signal), [r.entity, r.project, r.id], 0, [tick]);
  const byKey = useMemo(() => {
    const m = new Map<string, SeriesInfo[]>();
    for (const k of keys.data ?? []) m.set(k.key, [...(m.get(k.key) ?? []), k]);
    return m;
  }, [keys.data]);
  const names = [...byKey.keys()].sort(naturalCompare);
  const key = state.mkey;
  const chosen = key && byKey.has(key) ? key : names[0] ?? '';
  if (keys.error && !keys.data) return <ErrorBox error={keys.error} retry={keys.reload} />;
  if (!keys.data) return <Loading what="media" />;
  if (!names.length) {
    return <Empty>This run has logged no media (<code>run.log({'{'}"samples": [cohort.Image(a), …]{'}'})</code>).</Empty>;
  }
  return (
    <div class="media-tab" data-testid="media-tab">
      <nav class="media-keys" aria-label="media keys">
        {names.map((k) => (
          <button key={k} type="button" class={k === chosen ? 'media-key active' : 'media-key'} data-key={k}
            aria-pressed={k === chosen} onClick={() => { if (k !== chosen) update({ mkey: k, mstep: null, mhide: [] }); }}>
            {k} <span class="muted small">{byKey.get(k)![0].type}</span>
          </button>
        ))}
      </nav>
      {chosen && <MediaKey r={r} state={state} mediaKey={chosen} tick={tick} />}
    </div>
  );
}

function MediaKey({ r, state, mediaKey, tick }: { r: RunDetail; state: AppState; mediaKey: string; tick: number }) {
  const rows = useLoad((signal) => api.media(r.entity, r.project, r.id, mediaKey, signal), [r.entity, r.project, r.id, mediaKey], 0, [tick]);
  const all = rows.data?.media ?? [];
  const steps = useMemo(() => stepsOf(all), [rows.data]);
  const writers = useMemo(() => writersOf(all), [rows.data]);
  const hidden = new Set(state.mhide);
  if (rows.error && !rows.data) return <ErrorBox error={rows.error} retry={rows.reload} />;
  if (!rows.data) return <Loading what={mediaKey} />;
  const cut = rows.data.truncated ? <TruncatedNotice mediaKey={mediaKey} rows={all.length} /> : null;
  if (!steps.length) return <>{cut}<Empty>No rows yet.</Empty></>;
  const idx = stepIndexOf(steps, state.mstep);
  const step = steps[idx];
  const shown = writers.filter((w) => !hidden.has(w));
  return (
    <section class="media-key-view" data-testid="media-key" data-key={mediaKey}>
      {cut}
      <div class="media-controls">
        {/* Dragging replaces the history entry: Back leaves the tab, not each step passed. */}
        <StepSlider steps={steps} idx={idx} onIdx={(i) => update({ mstep: stepParamOf(steps, i) }, true)} testid="media" />
        {writers.length > 1 && (
          <fieldset class="media-writers" data-testid="media-writers"><legend class="muted small">writers</legend>
            {writers.map((w) => (
              <label key={w}><input type="checkbox" checked={!hidden.has(w)} data-writer={w} onChange={() => {
                const next = new Set(hidden);
                if (next.has(w)) next.delete(w); else next.add(w);
                update({ mhide: [...next].sort(naturalCompare) });
              }} /> {w}</label>
            ))}
          </fieldset>
        )}
      </div>
      {shown.map((w) => {
        const set = setAt(all, w, step);
        return (
          <div class="media-writer" key={w} data-writer={w}>
            {writers.length > 1 && <h3>{w}</h3>}
            {!set.length ? <p class="muted small">nothing at this step</p> : (
              <div class={set[0].type === 'image' ? 'media-grid' : 'media-list'}>
                {set.map((m) => <MediaItem key={m.sha256 + m.index} r={r} m={m} />)}
              </div>
            )}
          </div>
        );
      })}
    </section>
  );
}

/** Said when the server cut a media list at its row limit (rows come in writer, step order). */
export function TruncatedNotice({ mediaKey, rows, run }: { mediaKey: string; rows: number; run?: string }) {
  return (
    <p class="notice" role="status" data-testid="media-truncated">
      The list of “{mediaKey}”{run ? ` of ${run}` : ''} was cut at the server's row limit: {rows.toLocaleString()} media rows are shown; later steps and writers are missing.
    </p>
  );
}

function MediaItem({ r, m }: { r: RunDetail; m: MediaRow }) {
  return m.type === 'table' ? <TableView r={r} m={m} /> : <BlobItem m={m} />;
}

function TableView({ r, m }: { r: RunDetail; m: MediaRow }) {
  const [offset, setOffset] = useState(0);
  const [sort, setSort] = useState<{ col: number; desc: boolean } | null>(null);
  useEffect(() => { setOffset(0); }, [m.sha256]);
  const page = useLoad((signal) => m.uploaded ? api.table(r.entity, r.project, r.id, m.key, m.step, m.writer, offset, TABLE_PAGE, signal) : Promise.resolve(null),
    [r.entity, r.project, r.id, m.key, m.step, m.writer, m.sha256, offset, m.uploaded]);
  if (!m.uploaded) return <p class="muted small">uploading…</p>;
  if (page.error && !page.data) return <ErrorBox error={page.error} retry={page.reload} />;
  if (!page.data) return <Loading what="table" />;
  const t = page.data;
  // The tables route does not sort: a sort orders the rows of the page shown.
  const rows = sort ? sortTableRows(t.data, sort.col, sort.desc) : t.data;
  const paged = t.nrows > t.data.length;
  const numeric = numericColumns(rows, t.columns.length);
  const cell = (v: unknown, j: number) => {
    const align = numeric[j] || typeof v === 'number' ? 'num' : '';
    if (v === null) return <td key={j} class={align}><span class="muted">null</span></td>;
    const media = mediaCell(v, m);
    if (media) return <td key={j} class={align}><BlobItem m={media} compact /></td>;
    const { text, title } = tableCellText(v);
    return <td key={j} class={align} title={title}>{text}</td>;
  };
  return (
    <div class="media-table" data-testid="media-table">
      {m.caption ? <p>{m.caption}</p> : null}
      <table class="table">
        <thead><tr>{t.columns.map((c, i) => (
          <th key={c} scope="col" aria-sort={sort?.col === i ? (sort.desc ? 'descending' : 'ascending') : 'none'}>
            <button type="button" class="link" title={paged ? `sort the rows of this page by ${c}` : `sort by ${c}`}
              onClick={() => setSort({ col: i, desc: sort?.col === i ? !sort.desc : false })}>{c}</button>
          </th>
        ))}</tr></thead>
        <tbody>{rows.map((row, i) => <tr key={i}>{row.map((v, j) => cell(v, j))}</tr>)}</tbody>
      </table>
      <div class="pager muted small">
        rows {t.nrows ? t.offset + 1 : 0}–{t.offset + t.data.length} of <span data-testid="media-table-rows">{t.nrows}</span>
        {sort && paged ? <span data-testid="media-table-sorted">, sorted within this page</span> : null}
        {' '}<button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - TABLE_PAGE))}>previous</button>
        {' '}<button type="button" disabled={offset + TABLE_PAGE >= t.nrows} onClick={() => setOffset(offset + TABLE_PAGE)}>next</button>
      </div>
    </div>
  );
}
