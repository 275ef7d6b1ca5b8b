// Group page: the runs of one experiment side by side, and every metric of every process in one
// chart (one line per process), with the min/max band + mean across processes on demand.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, type SeriesInfo } from '../lib/api';
import type { LineSource } from '../lib/chartdata';
import { runtimeOf, type Run } from '../lib/filters';
import { colorFor, flatten, fmtDuration, fmtNum, prefixOf } from '../lib/format';
import { linkTo, type AppState } from '../lib/url';
import { Empty, ErrorBox, Link, Loading, StateBadge, useLoad, useTick } from '../components/common';
import { ChartPanel } from '../components/ChartPanel';
import { ChartToolbar, settingsOf } from '../components/ChartToolbar';
import { arrangeSystemKeys, LIVE_MS } from './Run';
import { RanksView } from './Ranks';

export function GroupPage({ state }: { state: AppState }) {
  const { entity, project, group } = state;
  const [running, setRunning] = useState(true);
  const tick = useTick(true, running ? LIVE_MS : 15000);
  const runs = useLoad(async (signal) => {
    const out: Run[] = [];
    let cursor: string | undefined;
    do {
      const page = await api.runsPage(entity, project, { filters: [{ field: 'group', op: '==', value: group }], sort: 'created', limit: 1000, cursor }, signal);
      out.push(...page.runs);
      cursor = page.next_cursor ?? undefined;
    } while (cursor && out.length < 5000);
    // Side by side in name order (ranks in order: rank2 before rank10), not start order.
    return out.sort((a, b) => (a.name || a.id).localeCompare(b.name || b.id, undefined, { numeric: true }));
  }, [entity, project, group, tick]);
  useEffect(() => { if (runs.data) setRunning(runs.data.some((r) => r.state === 'running')); }, [runs.data]);
  const ids = (runs.data ?? []).map((r) => r.id).join(',');
  const keys = useLoad(async (signal) => {
    const rs = runs.data ?? [];
    return Promise.all(rs.slice(0, 64).map((r) => api.keys(entity, project, r.id, signal).then((k) => [r, k] as const)));
  }, [ids, running ? tick : 0]);
  const [q, setQ] = useState('');
  const [ranksOpen, setRanksOpen] = useState(!!(state.rkey || state.rank));

  // System series (GPU temperature/utilisation/memory/power per device, CPU, memory, ...): one
  // chart per key across the group, one line per run and label; x is time.
  const system = useMemo(() => {
    const m = new Map<string, LineSource[]>();
    for (const [r, ks] of keys.data ?? []) {
      const labels = new Map<string, Set<string>>();
      for (const k of ks as SeriesInfo[]) {
        if (!k.key.startsWith('system/')) continue;
        const key = k.key.slice(7);
        if (!labels.has(key)) labels.set(key, new Set());
        labels.get(key)!.add(k.writer);
      }
      const name = r.name || r.id;
      const multi = new Set([...labels.values()].flatMap((x) => [...x])).size > 1;
      for (const key of labels.keys()) {
        if (!m.has(key)) m.set(key, []);
        m.get(key)!.push({ entity, project, run: r.id, key, system: true, originMs: r.created_ms, name: (w) => (multi ? `${name} · ${w}` : name) });
      }
    }
    return { sources: m, sections: arrangeSystemKeys([...m.keys()]) };
  }, [keys.data]);

  const charts = useMemo(() => {
    const m = new Map<string, LineSource[]>();
    for (const [r, ks] of keys.data ?? []) {
      const per = new Map<string, { writers: Set<string>; range: [number, number] }>();
      for (const k of ks as SeriesInfo[]) {
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
      return pa === pb ? a[0].localeCompare(b[0], undefined, { numeric: true }) : pa.localeCompare(pb);
    });
  }, [keys.data]);

  if (runs.error && !runs.data) return <div class="page"><ErrorBox error={runs.error} retry={runs.reload} /></div>;
  if (!runs.data) return <div class="page"><Loading what="group" /></div>;
  const rs = runs.data;
  const runIdx = new Map(rs.map((r, i) => [r.id, i]));
  const settings = settingsOf(state);
  const shown = charts.filter(([k]) => k.includes(q));
  return (
    <div class="page group-page">
      <h1>Group {group} <span class="muted small">{rs.length} run{rs.length === 1 ? '' : 's'}</span>{running && <span class="live"> ● live</span>}</h1>
      {!rs.length ? <Empty>No run in this group.</Empty> : (
        <div class="cards" data-testid="group-runs">
          {rs.map((r, i) => <RunCard key={r.id} r={r} state={state} color={colorFor('', i)} />)}
        </div>
      )}
      {rs.length > 0 && (
        <>
          <div class="section-head sticky">
            <h2>Metrics</h2>
            <input type="search" placeholder="filter metrics" aria-label="filter metrics" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
            <ChartToolbar state={state} aggregate={rs.length > 1} />
          </div>
          {keys.error ? <ErrorBox error={keys.error} /> : !keys.data ? <Loading what="metrics" /> : !shown.length ? <Empty>No metrics logged in this group{q ? ' match this filter' : ''}.</Empty> : (
            <div class="grid">
              {shown.map(([key, sources]) => (
                <ChartPanel key={key} title={key} sources={sources} settings={settings} tick={running ? tick : 0} syncKey={`group-${group}`}
                  aggLabel={`mean of ${sources.length} processes`} color={(l) => colorFor('', runIdx.get(l.run) ?? 0)} />
              ))}
            </div>
          )}
          {keys.data && charts.length > 0 && (
            <details class="chart-section" data-section="Ranks" open={ranksOpen}
              onToggle={(e) => setRanksOpen((e.currentTarget as HTMLDetailsElement).open)}>
              <summary><h2>Ranks <span class="muted small">one metric across every process: band, median, outliers, stragglers</span></h2></summary>
              {ranksOpen && <RanksView scope={{ entity, project, group }} state={state} tick={running ? tick : 0} keys={charts.map(([k]) => k)}
                runName={(id) => { const r = rs.find((x) => x.id === id); return r?.name || id; }} />}
            </details>
          )}
          {system.sections.length > 0 && (
            <div data-testid="group-system">
              <div class="section-head"><h2>System</h2><span class="muted small">per run and label; x axis: time</span></div>
              {system.sections.map((sec) => (
                <details open key={sec.section} class="chart-section" data-section={sec.section}>
                  <summary><h2>{sec.section}</h2></summary>
                  <div class="grid">
                    {sec.charts.map((c) => (
                      <ChartPanel key={c.key} title={c.title} sources={system.sources.get(c.key)!} height={180}
                        settings={{ ...settings, xMode: settings.xMode === 'step' ? 'rel' : settings.xMode }}
                        tick={running ? tick : 0} syncKey={`group-sys-${group}`}
                        aggLabel={`mean of ${system.sources.get(c.key)!.length} runs`} color={(l) => colorFor('', runIdx.get(l.run) ?? 0)} />
                    ))}
                  </div>
                </details>
              ))}
            </div>
          )}
        </>
      )}
    </div>
  );
}

function RunCard({ r, state, color }: { r: Run; state: AppState; color: string }) {
  const summary = flatten(r.summary ?? {}).filter(([, v]) => typeof v !== 'object').slice(0, 6);
  return (
    <article class="card run-card" data-run={r.id} data-name={r.name}>
      <header>
        <span class="swatch" style={{ background: color }} />
        <Link href={linkTo(state, { run: r.id, group: '' })} class="run-link">{r.name || r.id}</Link>
        <StateBadge state={r.state} />
      </header>
      <dl class="facts small">
        <div><dt>job type</dt><dd>{r.job_type || '—'}</dd></div>
        <div><dt>host</dt><dd>{r.host || '—'}</dd></div>
        <div><dt>writers</dt><dd>{r.writer_count}</dd></div>
        <div><dt>runtime</dt><dd>{fmtDuration(runtimeOf(r))}</dd></div>
        <div><dt>exit code</dt><dd>{r.exit_code ?? '—'}</dd></div>
        {summary.map(([k, v]) => <div key={k}><dt>{k}</dt><dd class="mono">{fmtNum(v)}</dd></div>)}
      </dl>
    </article>
  );
}
