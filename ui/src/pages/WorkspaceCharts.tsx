// The workspace's charts: every metric of the runs the table shows (its filters, in its order),
// less those hidden with the eye, up to MAX_CHART_RUNS of them, and the page says when it charts
// fewer than are visible. 20 colours, then dashes; or one colour per value of a config field.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type SeriesInfo } from '../lib/api';
import { MAX_RUNS_PER_REQUEST, type LineSource } from '../lib/chartdata';
import { configKeyStats, type Run } from '../lib/filters';
import { DASHES, fmtNum, naturalCompare, PALETTE, styleAt, valueAt } from '../lib/format';
import { update } from '../lib/nav';
import type { AppState } from '../lib/url';
import { Empty, ErrorBox, Loading, useTick } from '../components/common';
import { ChartPanel, type LineStyle } from '../components/ChartPanel';
import { ChartToolbar, settingsOf } from '../components/ChartToolbar';
import { Swatch } from '../components/Chart';
import { LIVE_MS } from './Run';

/** The most runs a workspace charts at once (the first ones of the table). */
export const MAX_CHART_RUNS = 100;

/** Metric charts drawn at first (each loads once scrolled into view); "show more" adds as many. */
export const CHARTS_PER_PAGE = 60;

/** The value of a dotted config path, as a string key ('' when absent). */
function configValue(r: Run, path: string): string {
  const v = valueAt(r.config, path);
  return v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/**
 * Line styles of the charted runs: by position (20 colours, then dashed), or with `by` (a config
 * path) one colour per value (sorted naturally) and dashes telling apart the runs of a value.
 */
export function runStyles(runs: Run[], by: string): { styles: Map<string, LineStyle>; legend: { value: string; color: string }[] } {
  const styles = new Map<string, LineStyle>();
  if (!by) {
    runs.forEach((r, i) => styles.set(r.id, styleAt(i)));
    return { styles, legend: [] };
  }
  const values = [...new Set(runs.map((r) => configValue(r, by)))].sort(naturalCompare);
  const index = new Map(values.map((v, i) => [v, i]));
  const within = new Map<string, number>();
  for (const r of runs) {
    const v = configValue(r, by);
    const k = within.get(v) ?? 0;
    within.set(v, k + 1);
    styles.set(r.id, { color: PALETTE[index.get(v)! % PALETTE.length], dash: DASHES[k % DASHES.length] });
  }
  return { styles, legend: values.map((v, i) => ({ value: v, color: PALETTE[i % PALETTE.length] })) };
}

export function WorkspaceCharts({ state, visible, eligible, charted, styles, legend, loaded }: {
  state: AppState;
  /** Every run of the project is loaded: the charts wait for it rather than slow it down. */
  loaded: boolean;
  /** The runs the table shows. */
  visible: Run[];
  /** How many of them are not hidden (charted up to MAX_CHART_RUNS). */
  eligible: number;
  charted: Run[]; styles: Map<string, LineStyle>; legend: { value: string; color: string }[];
}) {
  const ids = charted.map((r) => r.id);
  const byId = new Map(charted.map((r) => [r.id, r]));
  // Live: while a charted run runs, series and lines are re-queried every few seconds; a state
  // change (the project's runs refresh every 4 s) re-queries once more, so the last points show.
  const live = charted.some((r) => r.state === 'running');
  const liveTick = useTick(live, LIVE_MS);
  const stateSig = charted.map((r) => r.state).join(',');
  const lastSig = useRef(stateSig);
  const [stateBump, setStateBump] = useState(0);
  useEffect(() => {
    if (lastSig.current !== stateSig) { lastSig.current = stateSig; setStateBump((b) => b + 1); }
  }, [stateSig]);
  const tick = liveTick + stateBump;

  // The series of the charted runs: one request per 200 runs.
  const [series, setSeries] = useState<Map<string, SeriesInfo[]> | null>(null);
  const [error, setError] = useState<unknown>(null);
  const idsKey = ids.join(',');
  useEffect(() => {
    if (!loaded) return;
    if (!ids.length) { setSeries(new Map()); return; }
    const ctl = new AbortController();
    const parts: string[][] = [];
    for (let i = 0; i < ids.length; i += MAX_RUNS_PER_REQUEST) parts.push(ids.slice(i, i + MAX_RUNS_PER_REQUEST));
    Promise.all(parts.map((p) => api.seriesOfRuns(state.entity, state.project, p, ctl.signal))).then((rs) => {
      const m = new Map<string, SeriesInfo[]>();
      for (const r of rs) for (const x of r.runs) m.set(x.run, x.keys);
      setSeries(m);
      setError(null);
    }, (e) => { if ((e as Error).name !== 'AbortError') setError(e); });
    return () => ctl.abort();
  }, [state.entity, state.project, idsKey, tick, loaded]);

  const keyFilter = state.mq;
  const [chartLimit, setChartLimit] = useState(CHARTS_PER_PAGE);
  const settings = settingsOf(state);
  const charts = useMemo(() => {
    if (!series) return [];
    const m = new Map<string, LineSource[]>();
    for (const id of ids) {
      const ks = series.get(id);
      if (!ks) continue;
      const r = byId.get(id);
      const perKey = new Map<string, { range: [number, number]; writers: number }>();
      for (const k of ks) {
        if (k.key.startsWith('system/')) continue;
        const cur = perKey.get(k.key);
        perKey.set(k.key, cur ? { range: [Math.min(cur.range[0], k.min_step), Math.max(cur.range[1], k.max_step)], writers: cur.writers + 1 }
          : { range: [k.min_step, k.max_step], writers: 1 });
      }
      const runName = r?.name || id;
      for (const [key, info] of perKey) {
        if (!m.has(key)) m.set(key, []);
        m.get(key)!.push({
          entity: state.entity, project: state.project, run: id, key, system: false, originMs: r?.created_ms ?? 0, stepRange: info.range,
          name: (w) => (info.writers > 1 ? `${runName} · ${w}` : runName),
        });
      }
    }
    return [...m.entries()].sort((a, b) => naturalCompare(a[0], b[0]));
  }, [series, idsKey]);
  const shown = charts.filter(([k]) => k.includes(keyFilter));
  // A run's colour; the writers of a shared run told apart by dashes.
  const multiWriter = useMemo(() => {
    const out = new Set<string>();
    for (const [id, ks] of series ?? []) {
      const writers = new Set(ks.filter((k) => !k.key.startsWith('system/')).map((k) => k.writer));
      if (writers.size > 1) out.add(id);
    }
    return out;
  }, [series]);
  const styleOf = useMemo(() => (l: { run: string; writer: string }) => {
    const s = styles.get(l.run) ?? styleAt(0);
    if (!multiWriter.has(l.run)) return s;
    const n = /(\d+)$/.exec(l.writer);
    return { color: s.color, dash: DASHES[(n ? Number(n[1]) : l.writer.length) % DASHES.length] };
  }, [styles, multiWriter]);
  // Colour by: the config keys whose value differs among the charted runs.
  const configKeys = useMemo(() => [...configKeyStats(charted).entries()].filter(([, e]) => e.values.size > 1).map(([k]) => k).sort(), [idsKey]);

  return (
    <section class="selected-charts" aria-label="charts of the visible runs">
      <div class="section-head">
        <h2>Charts {live && <span class="live" title="refreshes every few seconds">● live</span>}</h2>
        <span class="muted small" data-testid="charted-count">
          {charted.length} run{charted.length === 1 ? '' : 's'} charted
          {eligible > charted.length && <> · <strong data-testid="chart-limit">the first {charted.length} of {eligible.toLocaleString()} visible runs</strong> (at most {MAX_CHART_RUNS} are charted: filter the table or hide runs with the eye)</>}
          {state.hide.length > 0 && <> · {state.hide.length} hidden <button type="button" class="link" onClick={() => update({ hide: [] })}>show all</button></>}
        </span>
        <input type="search" placeholder="filter metrics" aria-label="filter metrics" value={keyFilter} onInput={(e) => update({ mq: (e.target as HTMLInputElement).value }, true)} />
        <label class="small">colour by{' '}
          <select aria-label="colour by" value={state.cby} onChange={(e) => update({ cby: (e.target as HTMLSelectElement).value })}>
            <option value="">run</option>
            {[...new Set([...configKeys, ...(state.cby ? [state.cby] : [])])].map((k) => <option key={k} value={k}>config: {k}</option>)}
          </select>
        </label>
        <ChartToolbar state={state} />
      </div>
      {legend.length > 0 && (
        <div class="legend-runs" data-testid="colour-legend">
          <span class="muted small">{state.cby}:</span>
          {legend.map((l) => <span key={l.value} class="legend-item static" data-value={l.value}><Swatch color={l.color} />{l.value === '' ? '(none)' : fmtNum(l.value)}</span>)}
        </div>
      )}
      {!charted.length ? <Empty>{visible.length ? 'Every visible run is hidden from the charts: click an eye to show one.' : 'No run to chart.'}</Empty>
        : error && !series ? <ErrorBox error={error} /> : !series ? <Loading what="metrics" />
          : !shown.length ? <Empty>The charted runs have no metrics{keyFilter ? ' matching this filter' : ''}.</Empty> : (
            <>
              {shown.length > chartLimit && (
                <p class="notice" role="status" data-testid="metric-limit">
                  The first {chartLimit} of {shown.length.toLocaleString()} metrics are charted (filter the metrics to find one).{' '}
                  <button type="button" class="small" onClick={() => setChartLimit(chartLimit + CHARTS_PER_PAGE)}>
                    Show {Math.min(CHARTS_PER_PAGE, shown.length - chartLimit)} more
                  </button>
                </p>
              )}
              <div class="grid">
                {shown.slice(0, chartLimit).map(([k, sources]) => (
                  <ChartPanel key={k} id={k} title={k} sources={sources} settings={{ ...settings, agg: false }} syncKey="ws" tick={tick}
                    chart={state.charts[k]} fullscreen={state.full === k} style={styleOf} />
                ))}
              </div>
            </>
          )}
    </section>
  );
}
