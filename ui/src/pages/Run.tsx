// Run page: overview (state, exit code, writers, config, summary), charts of every metric key
// grouped by prefix (one line per writer), histograms (Histograms.tsx), system metrics per device and per label, logs, the
// media it logged (Media.tsx), and the artifacts it logged and used (Artifacts.tsx).
// A running run refreshes every few seconds without a reload.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type Alert, type ConsoleLine, type RunDetail, type RunFile, type SeriesInfo, type Writer } from '../lib/api';
import type { LineSource } from '../lib/chartdata';
import { runtimeOf } from '../lib/filters';
import { flatten, fmtAgo, fmtBytes, fmtDuration, fmtTime, naturalCompare, prefixOf, signalOfExit } from '../lib/format';
import { fullText } from '../lib/rundiff';
import { update } from '../lib/nav';
import { SystemCharts } from './SystemCharts';
import { linkTo, TABS, type AppState, type Tab } from '../lib/url';
import { Empty, ErrorBox, Link, Loading, StateBadge, useLoad, useTick } from '../components/common';
import { ChartPanel, titleInSection } from '../components/ChartPanel';
import { ChartToolbar, settingsOf } from '../components/ChartToolbar';
import { HistogramsTab } from './Histograms';
import { LogsTab } from './Logs';
import { RanksView } from './Ranks';
import { RunArtifactsTab } from './Artifacts';
import { AlertMark, RunAlertsTab } from './Alerts';
import { openAlertsByRun } from '../lib/alerts';
import { MediaTab } from './Media';

export const LIVE_MS = 2500;

export function RunPage({ state }: { state: AppState }) {
  const { entity, project, run: runId } = state;
  // Poll every few seconds while anything runs; a finished run is checked rarely (it may resume).
  const [running, setRunning] = useState(true);
  const tick = useTick(true, running ? LIVE_MS : 15000);
  const run = useLoad((signal) => api.run(entity, project, runId, signal), [entity, project, runId], 0, [tick]);
  const r = run.data;
  useEffect(() => {
    if (r) setRunning(r.state === 'running' || r.writers?.some((w) => w.state === 'running'));
  }, [r]);
  // Every key with its type: scalars are charted, histograms have their own tab (other types are
  // skipped, as docs/api.md asks of readers).
  const allKeys = useLoad((signal) => api.allKeys(entity, project, runId, signal), [entity, project, runId], 0, [tick]);
  const keys = useMemo(() => ({
    data: allKeys.data ? allKeys.data.filter((k) => (k.type ?? 'scalar') === 'scalar') : null,
    hists: allKeys.data ? allKeys.data.filter((k) => k.type === 'histogram') : null,
    error: allKeys.error,
  }), [allKeys.data, allKeys.error]);

  // Open alerts: counted on the Alerts tab and marked in the header.
  const openAlerts = useLoad((signal) => api.alerts(entity, project, { run: runId, state: 'open', limit: 1000 }, signal), [entity, project, runId], 0, [tick]);

  if (run.error && !r) return <div class="page"><ErrorBox error={run.error} retry={run.reload} /></div>;
  if (!r) return <div class="page"><Loading what="run" /></div>;

  const counts = { ...countKeys(keys.data ?? []), histograms: new Set((keys.hists ?? []).map((k) => k.key)).size, alerts: openAlerts.data?.length ?? 0 };
  return (
    <div class="page run-page" data-run-state={r.state}>
      <RunHeader r={r} state={state} live={running} openAlerts={openAlerts.data ?? []} />
      {run.error ? <ErrorBox error={run.error} /> : null}
      <Tabs state={state} counts={counts} />
      <div role="tabpanel" id={`panel-${state.tab}`} aria-labelledby={`tab-${state.tab}`} class="tabpanel">
        {state.tab === 'overview' && <Overview r={r} state={state} />}
        {state.tab === 'charts' && <ChartsTab r={r} state={state} keys={keys.data} error={keys.error} tick={running ? tick : 0} />}
        {state.tab === 'histograms' && <HistogramsTab r={r} state={state} keys={keys.hists} error={keys.error} tick={running ? tick : 0} />}
        {state.tab === 'system' && <SystemTab r={r} state={state} keys={keys.data} error={keys.error} tick={running ? tick : 0} />}
        {state.tab === 'logs' && <LogsTab r={r} state={state} tick={running ? tick : 0} />}
        {state.tab === 'ranks' && (keys.error && !keys.data ? <ErrorBox error={keys.error} /> : !keys.data ? <Loading what="metrics" /> : (
          <RanksView scope={{ entity, project, run: runId }} state={state} tick={running ? tick : 0}
            keys={[...new Set(keys.data.filter((k) => !k.key.startsWith('system/')).map((k) => k.key))].sort()} />
        ))}
        {state.tab === 'media' && <MediaTab r={r} state={state} tick={running ? tick : 0} />}
        {state.tab === 'artifacts' && <RunArtifactsTab r={r} state={state} tick={running ? tick : 0} />}
        {state.tab === 'alerts' && <RunAlertsTab state={state} tick={tick} />}
      </div>
    </div>
  );
}

function countKeys(keys: SeriesInfo[]) {
  const user = new Set<string>(), sys = new Set<string>();
  for (const k of keys) (k.key.startsWith('system/') ? sys : user).add(k.key);
  return { charts: user.size, system: sys.size };
}

function RunHeader({ r, state, live, openAlerts }: { r: RunDetail; state: AppState; live: boolean; openAlerts: Alert[] }) {
  const marks = openAlertsByRun(openAlerts).get(r.id);
  return (
    <header class="run-head">
      <h1>{r.name || r.id} <StateBadge state={r.state} /> {live && <span class="live" title="refreshes every few seconds">● live</span>}
        {marks && state.tab !== 'alerts' && <> <AlertMark info={marks} href={linkTo(state, { tab: 'alerts' })} /></>}</h1>
      <dl class="facts">
        <div><dt>id</dt><dd class="mono">{r.id}</dd></div>
        {r.group && <div><dt>group</dt><dd><Link href={linkTo(state, { group: r.group, run: '' })}>{r.group}</Link></dd></div>}
        {r.job_type && <div><dt>job type</dt><dd>{r.job_type}</dd></div>}
        <div><dt>host</dt><dd>{r.host || '—'}</dd></div>
        <div><dt>created</dt><dd title={fmtTime(r.created_ms)}>{fmtAgo(r.created_ms)}</dd></div>
        <div><dt>runtime</dt><dd>{fmtDuration(runtimeOf(r))}</dd></div>
        <div><dt>exit code</dt><dd data-testid="exit-code">{r.exit_code ?? '—'}{signalOfExit(r.exit_code) ? ` (${signalOfExit(r.exit_code)})` : ''}</dd></div>
        <div><dt>writers</dt><dd>{r.writer_count}</dd></div>
        {r.tags?.length ? <div><dt>tags</dt><dd>{r.tags.map((t) => <span class="chip" key={t}>{t}</span>)}</dd></div> : null}
      </dl>
    </header>
  );
}

function Tabs({ state, counts }: { state: AppState; counts: { charts: number; histograms: number; system: number; alerts: number } }) {
  const refs = useRef<(HTMLButtonElement | null)[]>([]);
  const label: Record<Tab, string> = { overview: 'Overview', charts: `Charts (${counts.charts})`, histograms: `Histograms (${counts.histograms})`, system: `System (${counts.system})`, logs: 'Logs', ranks: 'Ranks', media: 'Media', artifacts: 'Artifacts', alerts: counts.alerts ? `Alerts (${counts.alerts} open)` : 'Alerts' };
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

/** Writers in label order (rank_2 before rank_10), whatever order they joined in. */
export function sortedWriters(ws: Writer[] | undefined): Writer[] {
  return [...(ws ?? [])].sort((a, b) => naturalCompare(a.label, b.label));
}

function Overview({ r, state }: { r: RunDetail; state: AppState }) {
  const now = Date.now();
  const writers = sortedWriters(r.writers);
  const ended = writers.filter((w) => w.state === 'crashed' || w.state === 'failed' || w.state === 'killed');
  return (
    <div class="overview">
      {ended.length > 0 && <EndedWriters r={r} writers={ended} state={state} />}
      <section>
        <h2>Writers</h2>
        {!writers.length ? <Empty>No writer has joined this run.</Empty> : (
          <table class="table writers" data-testid="writers">
            <thead><tr><th>Label</th><th>Role</th><th>Host</th><th class="num">PID</th><th>GPUs</th><th>State</th><th class="num">Exit code</th><th>Last heartbeat</th></tr></thead>
            <tbody>
              {writers.map((w) => (
                <tr key={w.label} data-writer={w.label} data-state={w.state}>
                  <td class="mono">{w.label}</td>
                  <td>{w.primary ? 'primary' : 'worker'}{w.update_finish_state && !w.primary ? ' (updates state)' : ''}</td>
                  <td>{w.host || '—'}</td>
                  <td class="num">{w.pid || '—'}</td>
                  <td>{w.gpu_ids?.length ? w.gpu_ids.join(', ') : '—'}</td>
                  <td><StateBadge state={w.state} />{w.state !== 'running' && w.finished_ms ? <span class="muted small"> {fmtTime(w.finished_ms).slice(11)}</span> : null}</td>
                  <td class="num">{w.exit_code ?? '—'}{signalOfExit(w.exit_code) ? ` (${signalOfExit(w.exit_code)})` : ''}</td>
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

/** How a writer ended, in words: its exit code and the signal behind it when there is one. */
export function howItEnded(w: Writer): string {
  const sig = signalOfExit(w.exit_code);
  if (sig) return `exit code ${w.exit_code}: killed by ${sig}`;
  if (w.exit_code !== null && w.exit_code !== undefined) return `exit code ${w.exit_code}`;
  if (w.state === 'crashed') {
    return 'no exit status: the process vanished without finishing (killed by SIGKILL, e.g. the out-of-memory killer, or its machine or agent was lost)';
  }
  return 'no exit status';
}

/** The last `n` stderr lines of one writer (the console index finds where they start). */
async function lastStderr(r: RunDetail, label: string, n: number, signal: AbortSignal): Promise<{ lines: ConsoleLine[]; total: number }> {
  const stride = 10;
  const f = { labels: [label], stream: 'stderr' };
  const ix = await api.consoleIndex(r.entity, r.project, r.id, { ...f, stride }, signal);
  if (!ix.total) return { lines: [], total: 0 };
  const start = Math.max(0, ix.total - n);
  const page = Math.floor(start / stride);
  const res = await api.console(r.entity, r.project, r.id, { ...f, after: ix.cursors[page], limit: n + stride }, signal);
  return { lines: res.lines.slice(start - page * stride, start - page * stride + n), total: ix.total };
}

/** Writers that crashed, failed or were killed: when, how (exit code, signal), and the last lines
 * they printed to stderr. */
function EndedWriters({ r, writers, state }: { r: RunDetail; writers: Writer[]; state: AppState }) {
  return (
    <section class="ended-writers" data-testid="ended-writers">
      <h2>{writers.length === 1 ? `Writer ${writers[0].label} ${writers[0].state}` : `${writers.length} writers did not finish`}</h2>
      {writers.map((w) => <EndedWriter key={w.label} r={r} w={w} state={state} />)}
    </section>
  );
}

function EndedWriter({ r, w, state }: { r: RunDetail; w: Writer; state: AppState }) {
  const tail = useLoad((signal) => lastStderr(r, w.label, 10, signal), [r.id, w.label], 0, [w.finished_ms]);
  const lifetime = w.finished_ms ? w.finished_ms - w.created_ms : null;
  return (
    <div class="ended-writer card" data-writer={w.label}>
      <p>
        <strong class="mono">{w.label}</strong> <StateBadge state={w.state} />
        {w.finished_ms ? <> at {fmtTime(w.finished_ms)}{lifetime !== null ? ` (after ${fmtDuration(lifetime)})` : ''}</> : null}
        {w.host ? <> on {w.host}{w.pid ? ` (pid ${w.pid})` : ''}</> : null}
      </p>
      <p data-testid="exit-status">{howItEnded(w)}</p>
      {tail.error ? <ErrorBox error={tail.error} /> : !tail.data ? <Loading what="stderr" /> : !tail.data.lines.length ? (
        <p class="muted">It printed nothing to stderr.</p>
      ) : (
        <>
          <div class="muted small">Last {tail.data.lines.length} of its {tail.data.total.toLocaleString()} stderr line{tail.data.total === 1 ? '' : 's'}:</div>
          <pre class="stderr-tail" data-testid="stderr-tail">{tail.data.lines.map((l) => l.text).join('\n')}</pre>
        </>
      )}
      <Link href={linkTo(state, { tab: 'logs', labels: [w.label], stream: 'stderr' })}>All of {w.label}'s stderr in Logs</Link>
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
  // Keys in order (train/loss after train/acc, lr_2 before lr_10), not in the order they came.
  const rows = flatten(obj ?? {}).sort((a, b) => naturalCompare(a[0], b[0]));
  const shown = rows.filter(([k]) => k.toLowerCase().includes(q.toLowerCase()));
  return (
    <section class="kv" data-testid={`kv-${title.toLowerCase()}`}>
      <div class="section-head">
        <h2>{title}</h2>
        {rows.length > 8 && <input type="search" placeholder="filter" aria-label={`filter ${title}`} value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />}
      </div>
      {!rows.length ? <Empty>No {title.toLowerCase()}.</Empty> : (
        <table class="table kv-table">
          <tbody>{shown.map(([k, v]) => <tr key={k} data-key={k}><th scope="row" class="mono">{k}</th><td class="mono">{fullText(v)}</td></tr>)}</tbody>
        </table>
      )}
    </section>
  );
}

// ---- charts ------------------------------------------------------------------------------

function ChartsTab({ r, state, keys, error, tick }: { r: RunDetail; state: AppState; keys: SeriesInfo[] | null; error: unknown; tick: number }) {
  const q = state.mq;
  const sections = useMemo(() => {
    const per = new Map<string, { writers: string[]; range: [number, number] }>();
    for (const k of keys ?? []) {
      if (k.key.startsWith('system/')) continue;
      const cur = per.get(k.key);
      if (cur) { cur.writers.push(k.writer); cur.range = [Math.min(cur.range[0], k.min_step), Math.max(cur.range[1], k.max_step)]; }
      else per.set(k.key, { writers: [k.writer], range: [k.min_step, k.max_step] });
    }
    const bySection = new Map<string, [string, { writers: string[]; range: [number, number] }][]>();
    for (const e of [...per.entries()].sort((a, b) => naturalCompare(a[0], b[0]))) {
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
  const runName = r.name || r.id;
  const settings = settingsOf(state);
  return (
    <div>
      <div class="section-head sticky">
        <input type="search" placeholder="filter metrics" aria-label="filter metrics" value={state.mq} onInput={(e) => update({ mq: (e.target as HTMLInputElement).value }, true)} />
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
                <ChartPanel key={key} id={key} title={key} label={titleInSection(key, section)} settings={settings} tick={tick} syncKey={`run-${r.id}`}
                  chart={state.charts[key]} fullscreen={state.full === key}
                  aggLabel={`mean of ${info.writers.length} writers`}
                  // One writer: the line is the run (never an internal writer id).
                  sources={[{ entity: r.entity, project: r.project, run: r.id, key, system: false, originMs: r.created_ms, stepRange: info.range,
                    name: (w) => (multi ? w : runName) } as LineSource]} />
              ))}
            </div>
          </details>
        );
      })}
    </div>
  );
}

// ---- system --------------------------------------------------------------------------------

function SystemTab({ r, state, keys, error, tick }: { r: RunDetail; state: AppState; keys: SeriesInfo[] | null; error: unknown; tick: number }) {
  const labels = useMemo(() => {
    const ls = new Set<string>();
    for (const k of keys ?? []) if (k.key.startsWith('system/')) ls.add(k.writer);
    return [...ls].sort(naturalCompare);
  }, [keys]);
  const [only, setOnly] = useState<string[]>([]);
  if (error && !keys) return <ErrorBox error={error} />;
  if (!keys) return <Loading what="system metrics" />;
  if (!labels.length) return <Empty>No system metrics for this run: the agent samples CPU, memory, network and GPUs of every writer.</Empty>;
  const writers = only.length ? only : labels;
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
        <ChartToolbar state={state} timeOnly aggregate={labels.length > 1} aggLabel="min/max band + mean across labels" label="system chart options" />
      </div>
      <SystemCharts state={state} tick={tick} syncKey={`sys-${r.id}`}
        runs={[{ run: r, keys: keys.filter((k) => k.key.startsWith('system/')), labels: writers }]} />
    </div>
  );
}
