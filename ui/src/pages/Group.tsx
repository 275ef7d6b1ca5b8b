// Group page: the runs of one experiment side by side, and every metric of every process in one
// chart (one line per process), with the min/max band + mean across processes on demand; the
// Ranks section; the system metrics of every run on a time axis (with their own toolbar).
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { api } from '../lib/api';
import { MAX_RUNS_PER_REQUEST, type LineSource } from '../lib/chartdata';
import { runtimeOf, type Run } from '../lib/filters';
import { flatten, fmtDuration, fmtNum, naturalCompare, prefixOf, signalOfExit, styleAt } from '../lib/format';
import { linkTo, type AppState } from '../lib/url';
import { update } from '../lib/nav';
import { Empty, ErrorBox, Link, Loading, StateBadge, useLoad, useTick } from '../components/common';
import { ChartPanel } from '../components/ChartPanel';
import { ChartToolbar, settingsOf } from '../components/ChartToolbar';
import { Swatch } from '../components/Chart';
import { LIVE_MS } from './Run';
import { RanksView } from './Ranks';
import { SystemCharts } from './SystemCharts';

/** The most runs of one group the page loads (cards, charts, system metrics); it says when a group has more. */
export const MAX_GROUP_RUNS = 5000;

export function GroupPage({ state }: { state: AppState }) {
  const { entity, project, group } = state;
  const [running, setRunning] = useState(true);
  const tick = useTick(true, running ? LIVE_MS : 15000);
  const runs = useLoad(async (signal) => {
    const out: Run[] = [];
    let cursor: string | undefined;
    let total = 0;
    do {
      const page = await api.runsPage(entity, project, { filters: [{ field: 'group', op: '==', value: group }], sort: 'created', limit: 1000, cursor }, signal);
      out.push(...page.runs);
      total = Math.max(total, page.total);
      cursor = page.next_cursor ?? undefined;
    } while (cursor && out.length < MAX_GROUP_RUNS);
    // Side by side in name order (ranks in order: rank2 before rank10), not start order.
    return { runs: out.sort((a, b) => naturalCompare(a.name || a.id, b.name || b.id)), total: Math.max(total, out.length) };
  }, [entity, project, group], 0, [tick]);
  const loaded = runs.data?.runs;
  useEffect(() => { if (loaded) setRunning(loaded.some((r) => r.state === 'running')); }, [loaded]);
  const ids = (loaded ?? []).map((r) => r.id).join(',');
  // The series of every run: one request per MAX_RUNS_PER_REQUEST runs (the server's cap).
  const keys = useLoad(async (signal) => {
    const rs = loaded ?? [];
    if (!rs.length) return null;  // the runs are loading (a group without runs shows no metrics)
    const parts: Run[][] = [];
    for (let i = 0; i < rs.length; i += MAX_RUNS_PER_REQUEST) parts.push(rs.slice(i, i + MAX_RUNS_PER_REQUEST));
    const answers = await Promise.all(parts.map((p) => api.seriesOfRuns(entity, project, p.map((r) => r.id), signal)));
    const by = new Map(answers.flatMap((a) => a.runs).map((x) => [x.run, x.keys]));
    return rs.map((r) => [r, by.get(r.id) ?? []] as const);
  }, [entity, project, group], 0, [ids, running ? tick : 0]);
  const q = state.mq;
  const [ranksOpen, setRanksOpen] = useState(!!(state.rkey || state.rank));

  const charts = useMemo(() => {
    const m = new Map<string, LineSource[]>();
    for (const [r, ks] of keys.data ?? []) {
      const per = new Map<string, { writers: Set<string>; range: [number, number] }>();
      for (const k of ks) {
        if (k.key.startsWith('system/')) continue;
        const cur = per.get(k.key);
        if (cur) { cur.writers.add(k.writer); cur.range = [Math.min(cur.range[0], k.min_step), Math.max(cur.range[1], k.max_step)]; }
        else per.set(k.key, { writers: new Set([k.writer]), range: [k.min_step, k.max_step] });
      }
      for (const [key, info] of per) {
        if (!m.has(key)) m.set(key, []);
        const multi = info.writers.size > 1;
        const name = r.name || r.id;
        m.get(key)!.push({ entity, project, run: r.id, key, system: false, originMs: r.created_ms, stepRange: info.range, name: (w) => (multi ? `${name} · ${w}` : name) });
      }
    }
    return [...m.entries()].sort((a, b) => {
      const pa = prefixOf(a[0]), pb = prefixOf(b[0]);
      return pa === pb ? naturalCompare(a[0], b[0]) : pa.localeCompare(pb);
    });
  }, [keys.data]);
  const systemRuns = useMemo(() => (keys.data ?? [])
    .map(([r, ks]) => ({ run: r, keys: ks.filter((k) => k.key.startsWith('system/')), labels: [...new Set(ks.map((k) => k.writer))] }))
    .filter((x) => x.keys.length), [keys.data]);

  // Line styles by run (stable functions: a chart redraws only when its data changes).
  const runIdx = useMemo(() => new Map((loaded ?? []).map((r, i) => [r.id, i])), [ids]);
  const runStyle = useCallback((l: { run: string }) => styleAt(runIdx.get(l.run) ?? 0), [runIdx]);
  const deviceStyle = useCallback((l: { run: string; key: string }) => ({ color: runStyle(l).color, dash: dashOfDevice(l.key) }), [runStyle]);

  if (runs.error && !runs.data) return <div class="page"><ErrorBox error={runs.error} retry={runs.reload} /></div>;
  if (!runs.data) return <div class="page"><Loading what="group" /></div>;
  const rs = runs.data.runs;
  const total = runs.data.total;
  const settings = settingsOf(state);
  const shown = charts.filter(([k]) => k.includes(q));
  return (
    <div class="page group-page">
      <h1>Group {group} <span class="muted small" data-testid="group-count">{total.toLocaleString()} run{total === 1 ? '' : 's'}</span>{running && <span class="live"> ● live</span>}</h1>
      {total > rs.length && (
        <p class="notice" role="status" data-testid="group-limit">
          Showing the first {rs.length.toLocaleString()} of {total.toLocaleString()} runs of this group (the page loads at most {MAX_GROUP_RUNS.toLocaleString()}): their cards, charts and system metrics.
        </p>
      )}
      {!rs.length ? <Empty>No run in this group.</Empty> : (
        <div class="cards" data-testid="group-runs">
          {rs.map((r, i) => <RunCard key={r.id} r={r} state={state} index={i} />)}
        </div>
      )}
      {rs.length > 0 && (
        <>
          {/* The toolbar sticks within its section only: it never covers the sections below. */}
          <section class="group-metrics" aria-label="metrics">
            <div class="section-head sticky">
              <h2>Metrics</h2>
              <input type="search" placeholder="filter metrics" aria-label="filter metrics" value={state.mq} onInput={(e) => update({ mq: (e.target as HTMLInputElement).value }, true)} />
              <ChartToolbar state={state} aggregate={rs.length > 1} />
            </div>
            {keys.error ? <ErrorBox error={keys.error} /> : !keys.data ? <Loading what="metrics" /> : !shown.length ? <Empty>No metrics logged in this group{q ? ' match this filter' : ''}.</Empty> : (
              <div class="grid">
                {shown.map(([key, sources]) => (
                  <ChartPanel key={key} id={key} title={key} sources={sources} settings={settings} tick={running ? tick : 0} syncKey={`group-${group}`}
                    chart={state.charts[key]} fullscreen={state.full === key}
                    aggLabel={`mean of ${sources.length} processes`} style={runStyle} />
                ))}
              </div>
            )}
          </section>
          {keys.data && charts.length > 0 && (
            <details class="chart-section" data-section="Ranks" open={ranksOpen}
              onToggle={(e) => setRanksOpen((e.currentTarget as HTMLDetailsElement).open)}>
              <summary><h2>Ranks <span class="muted small">one metric across every process: band, median, outliers, stragglers</span></h2></summary>
              {ranksOpen && <RanksView scope={{ entity, project, group }} state={state} tick={running ? tick : 0} keys={charts.map(([k]) => k)}
                runName={(id) => { const r = rs.find((x) => x.id === id); return r?.name || id; }}
                runState={(id) => rs.find((x) => x.id === id)?.state} />}
            </details>
          )}
          {systemRuns.length > 0 && (
            <section class="group-system" data-testid="group-system" aria-label="system metrics">
              <div class="section-head sticky">
                <h2>System</h2>
                <span class="muted small">per run, label and device</span>
                <ChartToolbar state={state} timeOnly label="system chart options" />
              </div>
              <SystemCharts runs={systemRuns} state={state} tick={running ? tick : 0} syncKey={`group-sys-${group}`}
                style={deviceStyle} />
            </section>
          )}
        </>
      )}
    </div>
  );
}

/** Devices of one run told apart by dashes: GPU 0 solid, GPU 1 dashed, ... */
function dashOfDevice(key: string): number[] {
  const m = /^gpu\.(\d+)\./.exec(key);
  const n = m ? Number(m[1]) : 0;
  return [[], [6, 3], [2, 3], [10, 3, 2, 3]][n % 4];
}

/** Main metrics (loss, accuracy, ...) first, then the rest in natural order. */
function summaryRows(summary: Record<string, unknown>): [string, unknown][] {
  const main = /(^|[/_.-])(loss|acc|accuracy|f1|auc|score|reward|perplexity|error)($|[/_.-])/i;
  return flatten(summary ?? {}).filter(([, v]) => typeof v !== 'object')
    .sort((a, b) => Number(main.test(b[0])) - Number(main.test(a[0])) || naturalCompare(a[0], b[0]));
}

function RunCard({ r, state, index }: { r: Run; state: AppState; index: number }) {
  const summary = summaryRows(r.summary).slice(0, 6);
  const s = styleAt(index);
  const sig = signalOfExit(r.exit_code);
  return (
    <article class="card run-card" data-run={r.id} data-name={r.name}>
      <header>
        <Swatch color={s.color} dash={s.dash} />
        <Link href={linkTo(state, { run: r.id, group: '' })} class="run-link">{r.name || r.id}</Link>
        <StateBadge state={r.state} />
      </header>
      <dl class="facts small">
        <div><dt>job type</dt><dd>{r.job_type || '—'}</dd></div>
        <div><dt>host</dt><dd>{r.host || '—'}</dd></div>
        <div><dt>writers</dt><dd>{r.writer_count}</dd></div>
        <div><dt>runtime</dt><dd>{fmtDuration(runtimeOf(r))}</dd></div>
        <div><dt>exit code</dt><dd>{r.exit_code ?? '—'}{sig ? ` (${sig})` : ''}</dd></div>
        {summary.map(([k, v]) => <div key={k} data-key={k}><dt>{k}</dt><dd class="mono">{fmtNum(v)}</dd></div>)}
      </dl>
    </article>
  );
}
