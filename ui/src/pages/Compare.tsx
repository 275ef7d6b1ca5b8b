// Run diff: two or more runs side by side (`?p=…&cmp=a,b,c`). Their config and summary in aligned
// rows (nested keys flattened with dots), the rows whose values differ highlighted, "only
// differences" hiding the rest (kept in the URL: `cd`), and the runs' curves overlaid for the
// metrics chosen (`ck`; the first few by default), each run in its own colour.
import { useMemo, useState } from 'preact/hooks';
import { api, type RunDetail, type SeriesInfo } from '../lib/api';
import type { LineSource } from '../lib/chartdata';
import { fmtTime, naturalCompare, styleAt } from '../lib/format';
import { update } from '../lib/nav';
import { diffCellTexts, diffCount, diffRows, fullText, visibleRows, type DiffRow } from '../lib/rundiff';
import { linkTo, type AppState } from '../lib/url';
import { Empty, ErrorBox, Link, Loading, StateBadge, useLoad } from '../components/common';
import { ChartPanel } from '../components/ChartPanel';
import { ChartToolbar, settingsOf } from '../components/ChartToolbar';
import { Swatch } from '../components/Chart';

/** Curves shown when the URL names none: the first metrics in natural order. */
const DEFAULT_CURVES = 4;

/** Metric chips shown before "+N more" (besides the chosen ones). */
export const CHIPS_SHOWN = 12;

/**
 * The metric chips to show, in `keys`' order: those matching `filter` (over every key), cut to
 * the first `limit` unless `all`, plus every chosen one wherever it is; `more`: the matching
 * ones past the cut (left out unless `all`).
 */
export function visibleChips(keys: string[], chosen: string[], filter: string, all: boolean, limit = CHIPS_SHOWN): { shown: string[]; more: number } {
  const picked = new Set(chosen);
  const shown: string[] = [];
  let matching = 0, more = 0;
  for (const k of keys) {
    const match = k.includes(filter);
    if (match) matching++;
    const past = match && matching > limit && !picked.has(k);
    if (past) more++;
    if (picked.has(k) || (match && (all || !past))) shown.push(k);
  }
  return { shown, more };
}

type Loaded = { id: string; run: RunDetail | null; error: unknown };

export function ComparePage({ state }: { state: AppState }) {
  const { entity, project, cmp } = state;
  const runs = useLoad((signal) => Promise.all(cmp.map((id) => api.run(entity, project, id, signal)
    .then((run): Loaded => ({ id, run, error: null }), (error): Loaded => {
      if ((error as Error).name === 'AbortError') throw error;
      return { id, run: null, error };
    }))), [entity, project, cmp.join(',')]);
  const series = useLoad((signal) => api.seriesOfRuns(entity, project, cmp, signal), [entity, project, cmp.join(',')]);

  const ok = (runs.data ?? []).filter((r) => r.run) as { id: string; run: RunDetail }[];
  const config = useMemo(() => diffRows(ok.map((r) => r.run.config)), [runs.data]);
  const summary = useMemo(() => diffRows(ok.map((r) => r.run.summary)), [runs.data]);
  const wsLink = linkTo(state, { run: '', group: '', project });

  return (
    <div class="page compare" data-testid="compare-page">
      <div class="section-head">
        <h1>Compare {cmp.length} runs</h1>
        <Link href={wsLink}>back to the workspace</Link>
      </div>
      {cmp.length < 2 && <p class="notice">Pick at least two runs to compare (select them in the workspace's runs table).</p>}
      {runs.error ? <ErrorBox error={runs.error} retry={runs.reload} /> : null}
      {(runs.data ?? []).filter((r) => r.error).map((r) => <ErrorBox key={r.id} error={r.error} />)}
      {!runs.data ? <Loading what="runs" /> : !ok.length ? <Empty>None of these runs could be loaded.</Empty> : (
        <>
          <RunsLegend state={state} runs={ok.map((r) => r.run)} />
          <div class="toolbar compare-bar">
            <label><input type="checkbox" data-testid="only-diff" checked={state.cdiff}
              onChange={(e) => update({ cdiff: (e.target as HTMLInputElement).checked }, true)} /> only differences</label>
            <span class="muted small" data-testid="diff-count">
              {diffCount(config).differ} of {config.length} config and {diffCount(summary).differ} of {summary.length} summary values differ
            </span>
          </div>
          <DiffTable title="Config" testid="diff-config" rows={visibleRows(config, state.cdiff)} runs={ok.map((r) => r.run)} total={config.length} />
          <DiffTable title="Summary" testid="diff-summary" rows={visibleRows(summary, state.cdiff)} runs={ok.map((r) => r.run)} total={summary.length} />
          <Curves state={state} runs={ok.map((r) => r.run)} series={series.data?.runs ?? null} error={series.error} />
        </>
      )}
    </div>
  );
}

function RunsLegend({ state, runs }: { state: AppState; runs: RunDetail[] }) {
  return (
    <div class="legend-runs compare-runs" data-testid="compare-runs">
      {runs.map((r, i) => (
        <span key={r.id} class="legend-item static" data-run={r.id}>
          <Swatch color={styleAt(i).color} dash={styleAt(i).dash} />
          <Link href={linkTo(state, { run: r.id, group: '' })}>{r.name || r.id}</Link>
          <StateBadge state={r.state} />
          <span class="muted small">{fmtTime(r.created_ms)}</span>
        </span>
      ))}
    </div>
  );
}

function DiffTable({ title, testid, rows, runs, total }: { title: string; testid: string; rows: DiffRow[]; runs: RunDetail[]; total: number }) {
  return (
    <section class="diff-section" aria-label={title}>
      <h2>{title}</h2>
      {!total ? <div class="muted small">None of these runs has a {title.toLowerCase()}.</div>
        : !rows.length ? <div class="muted small" data-testid={`${testid}-same`}>Every {title.toLowerCase()} value is the same in these runs.</div> : (
          <div class="diff-scroll">
            <table class="table diff" data-testid={testid}>
              <thead>
                <tr>
                  <th>key</th>
                  {runs.map((r, i) => <th key={r.id} data-run={r.id}><Swatch color={styleAt(i).color} dash={styleAt(i).dash} /> {r.name || r.id}</th>)}
                </tr>
              </thead>
              <tbody>
                {rows.map((row) => (
                  <tr key={row.key} data-key={row.key} class={row.differs ? 'differs' : ''} data-differs={row.differs ? '1' : '0'}>
                    <th scope="row" class="mono">{row.key}{row.differs && <span class="sr-only"> (differs)</span>}</th>
                    {diffCellTexts(row).map((text, i) => (
                      <td key={i} class={`mono${row.values[i] === undefined ? ' missing' : ''}`}
                        title={row.values[i] === undefined ? 'not set in this run' : fullText(row.values[i])}>
                        {text}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
    </section>
  );
}

function Curves({ state, runs, series, error }: { state: AppState; runs: RunDetail[]; series: { run: string; keys: SeriesInfo[] }[] | null; error: unknown }) {
  const [filter, setFilter] = useState('');
  const [allChips, setAllChips] = useState(false);
  const index = new Map(runs.map((r, i) => [r.id, i]));
  // key -> one source per run that has it (its writers in one line each).
  const byKey = useMemo(() => {
    const m = new Map<string, LineSource[]>();
    for (const { run, keys } of series ?? []) {
      const r = runs.find((x) => x.id === run);
      if (!r) continue;
      const per = new Map<string, { range: [number, number]; writers: number }>();
      for (const k of keys) {
        if (k.key.startsWith('system/') || (k.type ?? 'scalar') !== 'scalar') continue;
        const cur = per.get(k.key);
        per.set(k.key, cur ? { range: [Math.min(cur.range[0], k.min_step), Math.max(cur.range[1], k.max_step)], writers: cur.writers + 1 }
          : { range: [k.min_step, k.max_step], writers: 1 });
      }
      const name = r.name || r.id;
      for (const [key, info] of per) {
        if (!m.has(key)) m.set(key, []);
        m.get(key)!.push({
          entity: state.entity, project: state.project, run: r.id, key, system: false, originMs: r.created_ms, stepRange: info.range,
          name: (w) => (info.writers > 1 ? `${name} · ${w}` : name),
        });
      }
    }
    for (const ss of m.values()) ss.sort((a, b) => (index.get(a.run) ?? 0) - (index.get(b.run) ?? 0));
    return m;
  }, [series, runs]);
  const keys = useMemo(() => [...byKey.keys()].sort(naturalCompare), [byKey]);
  const chosen = state.ckeys.length ? state.ckeys.filter((k) => byKey.has(k)) : keys.slice(0, DEFAULT_CURVES);
  const toggle = (k: string) => {
    // The last curve stays (an empty list in the URL means the default ones).
    const next = chosen.includes(k) ? chosen.filter((x) => x !== k) : [...chosen, k];
    if (next.length) update({ ckeys: next });
  };
  const style = useMemo(() => (l: { run: string }) => styleAt(index.get(l.run) ?? 0), [runs]);
  const chips = visibleChips(keys, chosen, filter, allChips);
  const settings = settingsOf(state);
  return (
    <section class="selected-charts" aria-label="curves of the compared runs">
      <div class="section-head">
        <h2>Curves</h2>
        <ChartToolbar state={state} />
      </div>
      {error ? <ErrorBox error={error} /> : !series ? <Loading what="metrics" /> : !keys.length ? <Empty>These runs logged no metrics.</Empty> : (
        <>
          <div class="curve-keys" role="group" aria-label="metrics to overlay">
            {keys.length > 12 && <input type="search" placeholder="filter metrics" aria-label="filter metrics" value={filter}
              onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />}
            {chips.shown.map((k) => (
              <button key={k} type="button" class={`small chip${chosen.includes(k) ? ' on' : ''}`} aria-pressed={chosen.includes(k)} data-key={k}
                disabled={chosen.length === 1 && chosen[0] === k}
                title={`${byKey.get(k)!.length} of ${runs.length} runs logged it`} onClick={() => toggle(k)}>{k}</button>
            ))}
            {chips.more > 0 && (
              <button type="button" class="link small" data-testid="more-chips" aria-expanded={allChips} onClick={() => setAllChips(!allChips)}>
                {allChips ? 'fewer' : `+${chips.more.toLocaleString()} more`}
              </button>
            )}
          </div>
          {!chosen.length ? <Empty>Pick a metric above to overlay its curves.</Empty> : (
            <div class="grid">
              {chosen.map((k) => (
                <ChartPanel key={k} id={k} title={k} sources={byKey.get(k)!} settings={{ ...settings, agg: false }} syncKey="cmp"
                  chart={state.charts[k]} fullscreen={state.full === k} style={style} />
              ))}
            </div>
          )}
        </>
      )}
    </section>
  );
}

/** The workspace's bar for the runs picked in the table: how many, Compare (2 or more), Clear. */
export function CompareBar({ state, picked, onClear }: { state: AppState; picked: string[]; onClear: () => void }) {
  if (!picked.length) return null;
  return (
    <div class="compare-pick" data-testid="compare-bar">
      <span>{picked.length} run{picked.length === 1 ? '' : 's'} selected</span>
      {picked.length >= 2
        ? <Link class="button small primary" href={linkTo(state, { cmp: picked, cdiff: false, ckeys: [], charts: {}, full: '' })} data-testid="compare-link">Compare</Link>
        : <span class="muted small">select another run to compare</span>}
      <button type="button" class="small" onClick={onClear}>Clear selection</button>
    </div>
  );
}
