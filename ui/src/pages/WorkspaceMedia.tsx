// The workspace's image comparison: one image key across the charted runs (the table's visible
// runs less those hidden with the eye, the first MAX_COMPARE_RUNS of them), a column per run in
// the table's order with the run's chart colour. The key is one of the union of the runs' image
// keys; a step slider runs over the union of their steps, and each run (each writer of a shared
// run) shows its set at its last step at or before the chosen one. Closed until opened: nothing
// is fetched for a workspace that does not look at images.
import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, type MediaRow, type SeriesInfo } from '../lib/api';
import type { Run } from '../lib/filters';
import { keysOfType, setsAtOrBefore, stepsOf } from '../lib/media';
import { linkTo, type AppState } from '../lib/url';
import { Empty, ErrorBox, Link, Loading, useLoad } from '../components/common';
import { Swatch } from '../components/Chart';
import type { LineStyle } from '../components/ChartPanel';
import { BlobItem, StepSlider } from '../components/media';
import { TruncatedNotice } from './Media';

/** The most runs compared at once (the first of the charted runs). */
export const MAX_COMPARE_RUNS = 12;

export function WorkspaceMedia({ state, charted, styles }: { state: AppState; charted: Run[]; styles: Map<string, LineStyle> }) {
  const [open, setOpen] = useState(false);
  const runs = charted.slice(0, MAX_COMPARE_RUNS);
  return (
    <section class="ws-media" aria-label="image comparison" data-testid="ws-media">
      <div class="section-head">
        <h2>Images</h2>
        <button type="button" class="small" aria-expanded={open} data-testid="ws-media-toggle" onClick={() => setOpen(!open)}>
          {open ? 'Close the comparison' : 'Compare images'}
        </button>
        <span class="muted small">one image key across the charted runs
          {charted.length > runs.length && <> · <strong data-testid="ws-media-limit">the first {runs.length} of {charted.length}</strong></>}
        </span>
      </div>
      {open && (!runs.length ? <Empty>No run to compare: every visible run is hidden from the charts.</Empty>
        : <Comparison state={state} runs={runs} styles={styles} />)}
    </section>
  );
}

function Comparison({ state, runs, styles }: { state: AppState; runs: Run[]; styles: Map<string, LineStyle> }) {
  const { entity, project } = state;
  const idsKey = runs.map((r) => r.id).join(',');
  // Each run's image keys (GET .../keys per run: the project-wide series route lists scalars only).
  const keys = useLoad(async (signal) => {
    const lists = await Promise.all(runs.map((r) => api.mediaKeys(entity, project, r.id, signal)));
    return new Map<string, SeriesInfo[]>(runs.map((r, i) => [r.id, lists[i].filter((k) => k.type === 'image')]));
  }, [entity, project, idsKey]);
  const names = useMemo(() => keysOfType(keys.data?.values() ?? [], 'image'), [keys.data]);
  const [key, setKey] = useState('');
  const chosen = key && names.includes(key) ? key : names[0] ?? '';
  if (keys.error && !keys.data) return <ErrorBox error={keys.error} retry={keys.reload} />;
  if (!keys.data) return <Loading what="image keys" />;
  if (!names.length) return <Empty>None of these runs has logged images (<code>run.log({'{'}"samples": [cohort.Image(a), …]{'}'})</code>).</Empty>;
  const picker = (
    <label>image key{' '}
      <select aria-label="image key" data-testid="cmp-key" value={chosen} onChange={(e) => setKey((e.target as HTMLSelectElement).value)}>
        {names.map((k) => <option key={k} value={k}>{k}</option>)}
      </select>
    </label>
  );
  return (
    <div class="cmp" data-testid="cmp">
      <KeyView state={state} runs={runs} styles={styles} mediaKey={chosen} keysByRun={keys.data} picker={picker} />
    </div>
  );
}

function KeyView({ state, runs, styles, mediaKey, keysByRun, picker }: {
  state: AppState; runs: Run[]; styles: Map<string, LineStyle>; mediaKey: string; keysByRun: Map<string, SeriesInfo[]>; picker: JSX.Element;
}) {
  const { entity, project } = state;
  const having = runs.filter((r) => keysByRun.get(r.id)?.some((k) => k.key === mediaKey));
  const rows = useLoad(async (signal) => {
    const got = await Promise.all(having.map((r) => api.media(entity, project, r.id, mediaKey, signal)));
    const cut = having.filter((_, i) => got[i].truncated);
    return { byRun: new Map<string, MediaRow[]>(having.map((r, i) => [r.id, got[i].media.filter((m) => m.type === 'image')])), cut };
  }, [entity, project, mediaKey, having.map((r) => r.id).join(',')]);
  const steps = useMemo(() => stepsOf([...(rows.data?.byRun.values() ?? [])].flat()), [rows.data]);
  const [stepIdx, setStepIdx] = useState<number | null>(null);
  useEffect(() => { setStepIdx(null); }, [mediaKey]);
  if (rows.error && !rows.data) return <>{picker}<ErrorBox error={rows.error} retry={rows.reload} /></>;
  if (!rows.data) return <>{picker}<Loading what={mediaKey} /></>;
  if (!steps.length) return <>{picker}<Empty>No rows yet.</Empty></>;
  const idx = stepIdx === null || stepIdx >= steps.length ? steps.length - 1 : stepIdx;
  const step = steps[idx];
  return (
    <>
      <div class="media-controls">
        {picker}
        <StepSlider steps={steps} idx={idx} onIdx={setStepIdx} testid="cmp" />
      </div>
      {rows.data.cut.map((r) => <TruncatedNotice key={r.id} mediaKey={mediaKey} run={r.name || r.id} rows={rows.data!.byRun.get(r.id)?.length ?? 0} />)}
      <div class="cmp-runs" data-testid="cmp-runs" data-key={mediaKey}>
        {runs.map((r) => {
          const style = styles.get(r.id);
          const mine = rows.data!.byRun.get(r.id);
          const sets = mine ? setsAtOrBefore(mine, step) : [];
          return (
            <div class="cmp-run" key={r.id} data-run={r.id} style={style ? { borderTopColor: style.color } : undefined}>
              <h3 class="cmp-run-name">
                {style && <Swatch color={style.color} dash={style.dash} />}
                <Link href={linkTo(state, { run: r.id, tab: 'media' })} title={`${r.name || r.id}: its Media tab`}>{r.name || r.id}</Link>
              </h3>
              {!mine ? <p class="muted small" data-testid="cmp-missing">This run has no image key “{mediaKey}”.</p>
                : sets.map((w) => (
                  <div class="cmp-writer media-writer" key={w.writer} data-writer={w.writer}>
                    {sets.length > 1 && <h4 class="cmp-writer-name">{w.writer}</h4>}
                    {w.step === null ? <p class="muted small" data-testid="cmp-none-yet">nothing at or before step {step} (first: {stepsOf(mine.filter((m) => m.writer === w.writer))[0]})</p> : (
                      <>
                        <div class="muted small">step <span data-testid="cmp-shown-step">{w.step}</span>{w.step !== step && <span title="its last step at or before the chosen one"> (≤ {step})</span>}</div>
                        <div class="media-grid">{w.set.map((m) => <BlobItem key={m.sha256 + m.index} m={m} />)}</div>
                      </>
                    )}
                  </div>
                ))}
            </div>
          );
        })}
      </div>
    </>
  );
}
