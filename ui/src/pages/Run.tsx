// Run page: overview (state, exit code, writers, config, summary), charts of every metric key
// grouped by prefix (one line per writer), system metrics per device and per label, logs.
// A running run refreshes every few seconds without a reload.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type RunDetail, type RunFile, type SeriesInfo } from '../lib/api';
import type { LineSource } from '../lib/chartdata';
import { runtimeOf } from '../lib/filters';
import { flatten, fmtAgo, fmtBytes, fmtDuration, fmtNum, fmtTime, prefixOf } from '../lib/format';
import { update } from '../lib/nav';
import { linkTo, TABS, type AppState, type Tab } from '../lib/url';
import { Empty, ErrorBox, Link, Loading, StateBadge, useLoad, useTick } from '../components/common';
import { ChartPanel } from '../components/ChartPanel';
import { ChartToolbar, settingsOf } from '../components/ChartToolbar';
import { LogsTab } from './Logs';
import { RanksView } from './Ranks';

export const LIVE_MS = 2500;

export function RunPage({ state }: { state: AppState }) {
  const { entity, project, run: runId } = state;
  // Poll every few seconds while anything runs; a finished run is checked rarely (it may resume).
  const [running, setRunning] = useState(true);
  const tick = useTick(true, running ? LIVE_MS : 15000);
  const run = useLoad((signal) => api.run(entity, project, runId, signal), [entity, project, runId, tick]);
  const r = run.data;
  useEffect(() => {
    if (r) setRunning(r.state === 'running' || r.writers?.some((w) => w.state === 'running'));
  }, [r]);
  const keys = useLoad((signal) => api.keys(entity, project, runId, signal), [entity, project, runId, tick]);

  if (run.error && !r) return <div class="page"><ErrorBox error={run.error} retry={run.reload} /></div>;
  if (!r) return <div class="page"><Loading what="run" /></div>;

  const counts = countKeys(keys.data ?? []);
  return (
    <div class="page run-page" data-run-state={r.state}>
      <RunHeader r={r} state={state} live={running} />
      {run.error ? <ErrorBox error={run.error} /> : null}
      <Tabs state={state} counts={counts} />
      <div role="tabpanel" id={`panel-${state.tab}`} aria-labelledby={`tab-${state.tab}`} class="tabpanel">
        {state.tab === 'overview' && <Overview r={r} />}
        {state.tab === 'charts' && <ChartsTab r={r} state={state} keys={keys.data} error={keys.error} tick={running ? tick : 0} />}
        {state.tab === 'system' && <SystemTab r={r} state={state} keys={keys.data} error={keys.error} tick={running ? tick : 0} />}
        {state.tab === 'logs' && <LogsTab r={r} state={state} tick={running ? tick : 0} />}
        {state.tab === 'ranks' && (keys.error && !keys.data ? <ErrorBox error={keys.error} /> : !keys.data ? <Loading what="metrics" /> : (
          <RanksView scope={{ entity, project, run: runId }} state={state} tick={running ? tick : 0}
            keys={[...new Set(keys.data.filter((k) => !k.key.startsWith('system/')).map((k) => k.key))].sort()} />
        ))}
      </div>
    </div>
  );
}

function countKeys(keys: SeriesInfo[]) {
  const user = new Set<string>(), sys = new Set<string>();
  for (const k of keys) (k.key.startsWith('system/') ? sys : user).add(k.key);
  return { charts: user.size, system: sys.size };
}

function RunHeader({ r, state, live }: { r: RunDetail; state: AppState; live: boolean }) {
  return (
    <header class="run-head">
      <h1>{r.name || r.id} <StateBadge state={r.state} /> {live && <span class="live" title="refreshes every few seconds">● live</span>}</h1>
      <dl class="facts">
        <div><dt>id</dt><dd class="mono">{r.id}</dd></div>
        {r.group && <div><dt>group</dt><dd><Link href={linkTo(state, { group: r.group, run: '' })}>{r.group}</Link></dd></div>}
        {r.job_type && <div><dt>job type</dt><dd>{r.job_type}</dd></div>}
        <div><dt>host</dt><dd>{r.host || '—'}</dd></div>
        <div><dt>created</dt><dd title={fmtTime(r.created_ms)}>{fmtAgo(r.created_ms)}</dd></div>
        <div><dt>runtime</dt><dd>{fmtDuration(runtimeOf(r))}</dd></div>
        <div><dt>exit code</dt><dd data-testid="exit-code">{r.exit_code ?? '—'}</dd></div>
        <div><dt>writers</dt><dd>{r.writer_count}</dd></div>
        {r.tags?.length ? <div><dt>tags</dt><dd>{r.tags.map((t) => <span class="chip" key={t}>{t}</span>)}</dd></div> : null}
      </dl>
    </header>
  );
}

function Tabs({ state, counts }: { state: AppState; counts: { charts: number; system: number } }) {
  const refs = useRef<(HTMLButtonElement | null)[]>([]);
  const label: Record<Tab, string> = { overview: 'Overview', charts: `Charts (${counts.charts})`, system: `System (${counts.system})`, logs: 'Logs', ranks: 'Ranks' };
  const onKey = (e: KeyboardEvent, i: number) => {
    let j = -1;
    if (e.key === 'ArrowRight') j = (i + 1) % TABS.length;
    else if (e.key === 'ArrowLeft') j = (i + TABS.length - 1) % TABS.length;
    else if (e.key === 'Home') j = 0;
    else if (e.key === 'End') j = TABS.length - 1;
    if (j < 0) return;
    e.preventDefault();
    update({ tab: TABS[j] });
    refs.current[j]?.focus();
  };
  return (
    <div class="tabs" role="tablist" aria-label="run sections">
      {TABS.map((t, i) => (
        <button key={t} type="button" role="tab" id={`tab-${t}`} ref={(el) => { refs.current[i] = el; }}
          aria-selected={state.tab === t} aria-controls={`panel-${t}`} tabIndex={state.tab === t ? 0 : -1}
          class={state.tab === t ? 'tab active' : 'tab'} onClick={() => update({ tab: t })} onKeyDown={(e) => onKey(e as KeyboardEvent, i)}>
          {label[t]}
        </button>
      ))}
    </div>
  );
}

// ---- overview ------------------------------------------------------------------------------

function Overview({ r }: { r: RunDetail }) {
  const now = Date.now();
  return (
    <div class="overview">
      <section>
        <h2>Writers</h2>
        {!r.writers?.length ? <Empty>No writer has joined this run.</Empty> : (
          <table class="table writers" data-testid="writers">
            <thead><tr><th>Label</th><th>Role</th><th>Host</th><th class="num">PID</th><th>GPUs</th><th>State</th><th class="num">Exit code</th><th>Last heartbeat</th></tr></thead>
            <tbody>
              {r.writers.map((w) => (
                <tr key={w.label} data-writer={w.label} data-state={w.state}>
                  <td class="mono">{w.label}</td>
                  <td>{w.primary ? 'primary' : 'worker'}{w.update_finish_state && !w.primary ? ' (updates state)' : ''}</td>
                  <td>{w.host || '—'}</td>
                  <td class="num">{w.pid || '—'}</td>
                  <td>{w.gpu_ids?.length ? w.gpu_ids.join(', ') : '—'}</td>
                  <td><StateBadge state={w.state} />{w.state !== 'running' && w.finished_ms ? <span class="muted small"> {fmtTime(w.finished_ms).slice(11)}</span> : null}</td>
                  <td class="num">{w.exit_code ?? '—'}</td>
                  <td title={fmtTime(w.heartbeat_ms)}>{fmtAgo(w.heartbeat_ms, now)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <div class="two-col">
        <KeyValues title="Config" obj={r.config} />
        <KeyValues title="Summary" obj={r.summary} />
      </div>
      <Files r={r} />
      {r.notes ? <section><h2>Notes</h2><p class="notes">{r.notes}</p></section> : null}
    </div>
  );
}

/** The run's uploaded files (W&B clients upload config.yaml, requirements.txt, ...). */
function Files({ r }: { r: RunDetail }) {
  const files = useLoad((signal) => api.files(r.entity, r.project, r.id, signal), [r.entity, r.project, r.id], r.state === 'running' ? 5000 : 0);
  const [err, setErr] = useState<unknown>(null);
  const download = async (e: MouseEvent, f: RunFile) => {
    // A plain link would go without the browser's key: fetch the bytes, then save them.
    e.preventDefault();
    setErr(null);
    try {
      const blob = await api.fileBlob(r.entity, r.project, r.id, f.name);
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = f.name.split('/').pop() || f.name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (x) { setErr(x); }
  };
  const list = files.data;
  return (
    <section data-testid="files">
      <h2>Files {list?.length ? <span class="muted small">{list.length}</span> : null}</h2>
      {err ? <ErrorBox error={err} /> : null}
      {files.error && !list ? <ErrorBox error={files.error} retry={files.reload} /> : !list ? <Loading what="files" /> : !list.length ? <Empty>No files uploaded for this run.</Empty> : (
        <table class="table files">
          <thead><tr><th>Name</th><th class="num">Size</th><th>Type</th><th>Updated</th></tr></thead>
          <tbody>
            {list.map((f) => (
              <tr key={f.name} data-file={f.name}>
                <td class="mono"><a href={f.url} download={f.name} onClick={(e) => download(e as MouseEvent, f)}>{f.name}</a></td>
                <td class="num" data-size={f.size}>{fmtBytes(f.size)}</td>
                <td class="muted">{f.content_type || '—'}</td>
                <td title={fmtTime(f.updated_ms)}>{fmtTime(f.updated_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function KeyValues({ title, obj }: { title: string; obj: Record<string, unknown> }) {
  const [q, setQ] = useState('');
  const rows = flatten(obj ?? {});
  const shown = rows.filter(([k]) => k.toLowerCase().includes(q.toLowerCase()));
  return (
    <section class="kv" data-testid={`kv-${title.toLowerCase()}`}>
      <div class="section-head">
        <h2>{title}</h2>
        {rows.length > 8 && <input type="search" placeholder="filter" aria-label={`filter ${title}`} value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />}
      </div>
      {!rows.length ? <Empty>No {title.toLowerCase()}.</Empty> : (
        <table class="table kv-table">
          <tbody>{shown.map(([k, v]) => <tr key={k}><th scope="row" class="mono">{k}</th><td class="mono">{fmtNum(v)}</td></tr>)}</tbody>
        </table>
      )}
    </section>
  );
}

// ---- charts ------------------------------------------------------------------------------

function ChartsTab({ r, state, keys, error, tick }: { r: RunDetail; state: AppState; keys: SeriesInfo[] | null; error: unknown; tick: number }) {
  const [q, setQ] = useState('');
  const sections = useMemo(() => {
    const per = new Map<string, { writers: string[]; range: [number, number] }>();
    for (const k of keys ?? []) {
      if (k.key.startsWith('system/')) continue;
      const cur = per.get(k.key);
      if (cur) { cur.writers.push(k.writer); cur.range = [Math.min(cur.range[0], k.min_step), Math.max(cur.range[1], k.max_step)]; }
      else per.set(k.key, { writers: [k.writer], range: [k.min_step, k.max_step] });
    }
    const bySection = new Map<string, [string, { writers: string[]; range: [number, number] }][]>();
    for (const e of [...per.entries()].sort((a, b) => a[0].localeCompare(b[0], undefined, { numeric: true }))) {
      const p = prefixOf(e[0]);
      if (!bySection.has(p)) bySection.set(p, []);
      bySection.get(p)!.push(e);
    }
    return [...bySection.entries()].sort((a, b) => (a[0] === '' ? -1 : b[0] === '' ? 1 : a[0].localeCompare(b[0])));
  }, [keys]);
  if (error && !keys) return <ErrorBox error={error} />;
  if (!keys) return <Loading what="metrics" />;
  if (!sections.length) return <Empty>This run has logged no metrics yet{r.state === 'running' ? ' (the page refreshes by itself)' : ''}.</Empty>;
  const multi = (r.writers?.length ?? 0) > 1;
  const settings = settingsOf(state);
  return (
    <div>
      <div class="section-head sticky">
        <input type="search" placeholder="filter metrics" aria-label="filter metrics" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
        <ChartToolbar state={state} aggregate={multi} aggLabel="min/max band + mean across writers" />
      </div>
      {sections.map(([section, items]) => {
        const shown = items.filter(([k]) => k.includes(q));
        if (!shown.length) return null;
        return (
          <details open key={section} class="chart-section">
            <summary><h2>{section || 'Charts'} <span class="muted small">{shown.length}</span></h2></summary>
            <div class="grid">
              {shown.map(([key, info]) => (
                <ChartPanel key={key} title={key} settings={settings} tick={tick} syncKey={`run-${r.id}`}
                  aggLabel={`mean of ${info.writers.length} writers`}
                  sources={[{ entity: r.entity, project: r.project, run: r.id, key, system: false, originMs: r.created_ms, stepRange: info.range, name: (w) => w } as LineSource]} />
              ))}
            </div>
          </details>
        );
      })}
    </div>
  );
}

// ---- system --------------------------------------------------------------------------------

const GPU_METRICS: [string, string][] = [
  ['temp', 'temperature (°C)'], ['gpu', 'utilisation (%)'], ['memory_allocated', 'memory allocated (%)'],
  ['memory', 'memory (%)'], ['power_watts', 'power (W)'], ['power_percent', 'power (%)'],
];
const SYSTEM_TITLES: Record<string, string> = {
  cpu: 'CPU (%)', memory: 'memory (%)', 'network.sent_mb': 'network sent (MB)', 'network.recv_mb': 'network received (MB)',
  'proc.memory.rss_mb': 'process RSS (MB)', disk: 'disk (%)',
};

export interface SysChart { section: string; key: string; title: string; order: number }

/** System keys (without "system/") arranged in sections: one per GPU, CPU & memory, network, disk, other. */
export function arrangeSystemKeys(keys: string[]): { section: string; charts: SysChart[] }[] {
  const charts: SysChart[] = [];
  for (const key of keys) {
    const g = /^gpu\.(\d+)\.(.+)$/.exec(key);
    if (g) {
      const i = GPU_METRICS.findIndex(([m]) => m === g[2]);
      charts.push({ section: `GPU ${g[1]}`, key, title: `GPU ${g[1]} ${i >= 0 ? GPU_METRICS[i][1] : g[2]}`, order: Number(g[1]) * 100 + (i >= 0 ? i : 50) });
      continue;
    }
    const section = key.startsWith('network') ? 'Network' : key.startsWith('disk') ? 'Disk' : /^(cpu|memory|proc)/.test(key) ? 'CPU & memory' : 'Other';
    const base = { 'CPU & memory': 10000, Network: 20000, Disk: 30000, Other: 40000 }[section]!;
    charts.push({ section, key, title: SYSTEM_TITLES[key] ?? key, order: base + (key === 'cpu' ? 0 : key === 'memory' ? 1 : 2) });
  }
  charts.sort((a, b) => a.order - b.order || a.key.localeCompare(b.key, undefined, { numeric: true }));
  const out: { section: string; charts: SysChart[] }[] = [];
  for (const c of charts) {
    if (!out.length || out[out.length - 1].section !== c.section) out.push({ section: c.section, charts: [] });
    out[out.length - 1].charts.push(c);
  }
  return out;
}

function SystemTab({ r, state, keys, error, tick }: { r: RunDetail; state: AppState; keys: SeriesInfo[] | null; error: unknown; tick: number }) {
  const { sections, labels } = useMemo(() => {
    const names = new Set<string>();
    const ls = new Set<string>();
    for (const k of keys ?? []) {
      if (!k.key.startsWith('system/')) continue;
      names.add(k.key.slice(7));
      ls.add(k.writer);
    }
    return { sections: arrangeSystemKeys([...names]), labels: [...ls].sort((a, b) => a.localeCompare(b, undefined, { numeric: true })) };
  }, [keys]);
  const [only, setOnly] = useState<string[]>([]);
  if (error && !keys) return <ErrorBox error={error} />;
  if (!keys) return <Loading what="system metrics" />;
  if (!sections.length) return <Empty>No system metrics for this run: the agent samples CPU, memory, network and GPUs of every writer.</Empty>;
  const settings = { ...settingsOf(state), xMode: state.x === 'step' ? 'rel' as const : state.x };
  const writers = only.length ? only : undefined;
  return (
    <div>
      <div class="section-head sticky">
        <fieldset class="labels-filter">
          <legend>Labels</legend>
          {labels.map((l) => (
            <label key={l} class="chip">
              <input type="checkbox" checked={!only.length || only.includes(l)}
                onChange={(e) => {
                  const on = (e.target as HTMLInputElement).checked;
                  const cur = only.length ? only : labels;
                  const next = on ? [...new Set([...cur, l])] : cur.filter((x) => x !== l);
                  setOnly(next.length === labels.length ? [] : next);
                }} /> {l}
            </label>
          ))}
        </fieldset>
        <ChartToolbar state={state} timeOnly aggregate={labels.length > 1} aggLabel="min/max band + mean across labels" />
      </div>
      {sections.map((s) => (
        <details open key={s.section} class="chart-section" data-section={s.section}>
          <summary><h2>{s.section}</h2></summary>
          <div class="grid">
            {s.charts.map((c) => (
              <ChartPanel key={c.key} title={c.title} settings={settings} tick={tick} syncKey={`sys-${r.id}`} height={180}
                sources={[{ entity: r.entity, project: r.project, run: r.id, key: c.key, system: true, writers, originMs: r.created_ms, name: (w) => w }]} />
            ))}
          </div>
        </details>
      ))}
    </div>
  );
}
