// The workspace's parameter importance panel: for one metric (a summary field) over the runs the
// filters select, each config field's correlation with it and its permutation importance in a
// small random forest (lib/importance.ts; docs/ui.md "Parameter importance"), as a table sorted by
// importance with bars. Computed in a worker when the metric or the runs' values change.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Run } from '../lib/filters';
import { fmtNum } from '../lib/format';
import { metricValue, numericSummaryKeys, paramImportance, type ImportanceInput, type ImportanceResult } from '../lib/importance';
import { update } from '../lib/nav';
import type { AppState } from '../lib/url';
import { ErrorBox } from '../components/common';

type Done = { result: ImportanceResult; ms: number; sig: string };

let worker: Worker | null | undefined;
let nextId = 0;
function compute(runs: ImportanceInput[], metric: string): Promise<{ result: ImportanceResult; ms: number }> {
  if (worker === undefined) {
    try { worker = new Worker(new URL('../lib/importance.worker.ts', import.meta.url), { type: 'module' }); } catch { worker = null; }
  }
  if (!worker) {
    const t0 = performance.now();
    const result = paramImportance(runs, metric);
    return Promise.resolve({ result, ms: performance.now() - t0 });
  }
  const w = worker;
  const id = ++nextId;
  return new Promise((resolve, reject) => {
    const on = (e: MessageEvent) => {
      if (e.data?.id !== id) return;
      w.removeEventListener('message', on);
      if (e.data.error) reject(new Error(e.data.error)); else resolve(e.data);
    };
    w.addEventListener('message', on);
    w.postMessage({ id, metric, runs });
  });
}

export function ParamImportance({ state, runs, all }: {
  state: AppState;
  /** The runs the filters select (what is ranked). */
  runs: Run[];
  /** Every run of the project (the metrics offered: not recomputed on each filter change). */
  all: Run[];
}) {
  const metric = state.imp;
  // Any run's summary may gain a key (a new array of runs comes with each change).
  const keys = useMemo(() => numericSummaryKeys(all.map((r) => r.summary)), [all]);
  // What the result depends on: the runs (ids, in any order) and their metric values. A refresh
  // that changes neither computes nothing.
  const sig = useMemo(() => (metric ? `${metric}|${runs.length}|${runs.map((r) => `${r.id}:${r.updated_ms}`).join(',')}` : ''), [metric, runs]);
  const [done, setDone] = useState<Done | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const latest = useRef('');
  useEffect(() => {
    latest.current = sig;
    // No metric, or back to the runs of the result shown (before a pending computation started).
    if (!metric || done?.sig === sig) { setBusy(false); return; }
    setBusy(true);
    // A new metric computes at once; new runs for the same metric (typing in the search box, a
    // live run's summary) wait until they settle for 250 ms, so the worker is not queued with
    // results nobody will see.
    const wait = done?.result.metric === metric ? 250 : 0;
    const timer = setTimeout(() => {
      // In id order: the same runs give the same numbers whatever the table's sort.
      const input: ImportanceInput[] = [...runs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .map((r) => ({ config: r.config, summary: { [metric]: metricValue(r.summary, metric) } }));
      compute(input, metric).then(({ result, ms }) => {
        if (latest.current !== sig) return;
        (window as any).__cohortImportanceMs = ms;
        setDone({ result, ms, sig });
        setError(null);
        setBusy(false);
      }, (e) => { if (latest.current === sig) { setError(e); setBusy(false); } });
    }, wait);
    return () => clearTimeout(timer);
  }, [sig]);

  const res = metric && done?.result.metric === metric ? done.result : null;
  const maxImp = Math.max(1e-9, ...(res?.rows.map((r) => r.importance) ?? [0]));
  return (
    <section class="importance" aria-label="parameter importance" data-testid="importance" aria-busy={busy}>
      <div class="section-head">
        <h2>Parameter importance</h2>
        <label class="small">metric{' '}
          <select aria-label="importance metric" value={metric} onChange={(e) => update({ imp: (e.target as HTMLSelectElement).value })}>
            <option value="">(pick a summary metric)</option>
            {[...new Set([...keys, ...(metric ? [metric] : [])])].map((k) => <option key={k} value={k}>{k}</option>)}
          </select>
        </label>
        {metric && (
          <span class="muted small" data-testid="importance-meta">
            {busy ? 'computing…' : res ? <>{res.runs.toLocaleString()} of {runs.length.toLocaleString()} filtered runs have {metric}
              {res.rows.length > 0 && <> · the config explains {Math.round(Math.max(0, res.r2) * 100)}% of it (out-of-bag R²)</>}
              {done && <> · {Math.round(done.ms)} ms</>}</> : null}
          </span>
        )}
      </div>
      {!metric ? <div class="muted small">Which config fields matter for a metric: pick one to rank the fields of the runs the filters select.</div>
        : error ? <ErrorBox error={error} />
          : res?.message ? <div class="muted small" data-testid="importance-message">{res.message}.</div>
            : res && (
              <>
                <table class="table importance-table" data-testid="importance-table">
                  <thead>
                    <tr>
                      <th>config field</th>
                      <th class="num" title="runs with both the field and the metric">runs</th>
                      <th title="Pearson r for numbers and booleans (true = 1); for categories the correlation ratio η (0..1, no sign)">correlation</th>
                      <th title="permutation importance in a random forest: the share of the metric's variance lost when the field's values are shuffled (catches non-linear effects)">importance</th>
                    </tr>
                  </thead>
                  <tbody>
                    {res.rows.map((r) => (
                      <tr key={r.key} data-key={r.key} data-importance={r.importance}>
                        <th scope="row" class="mono">{r.key} <span class="muted small">{r.kind === 'number' ? '' : r.kind}</span></th>
                        <td class="num">{r.n}</td>
                        <td class="bar-cell" title={r.corr === null ? 'not defined (constant, or fewer than 3 runs)' : undefined}>
                          {r.corr === null ? <span class="muted">—</span> : (
                            <div class="bar-wrap">
                              <span class="bar-track centred">
                                <span class={`bar ${r.corrKind === 'eta' ? 'eta' : r.corr < 0 ? 'neg' : 'pos'}`}
                                  style={{ width: `${Math.abs(r.corr) * 50}%`, marginLeft: `${r.corr < 0 ? 50 - Math.abs(r.corr) * 50 : 50}%` }} />
                              </span>
                              <span class="bar-val">{r.corrKind === 'eta' ? `η ${r.corr.toFixed(2)}` : r.corr.toFixed(2)}</span>
                            </div>
                          )}
                        </td>
                        <td class="bar-cell">
                          <div class="bar-wrap">
                            <span class="bar-track"><span class="bar imp" style={{ width: `${Math.max(0, r.importance) / maxImp * 100}%` }} /></span>
                            <span class="bar-val">{fmtNum(Number(Math.max(0, r.importance).toPrecision(2)))}</span>
                          </div>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                {res.skipped.length > 0 && (
                  <div class="muted small">Left out: {res.skipped.map((s) => `${s.key} (${s.why === 'constant' ? 'the same in every run' : 'a different text per run'})`).join(', ')}.</div>
                )}
              </>
            )}
    </section>
  );
}
