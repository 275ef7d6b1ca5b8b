// Project workspace: saved views, filter bar and builder, sidebar of groups, the runs table
// (virtual rows, grouping, sort on any column, config and summary columns, an eye per row), and
// charts of the visible runs, and an image comparison of them (WorkspaceMedia).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type View } from '../lib/api';
import {
  clausesToUi, configKeyStats, DEFAULT_VIEWS, defaultColumns, filterRuns, groupRows, sortRuns, summaryKeysOf, uiToClauses,
  type Run, type ViewSpec,
} from '../lib/filters';
import { update } from '../lib/nav';
import { naturalCompare } from '../lib/format';
import { useProjectRuns } from '../lib/runstore';
import { linkTo, type AppState } from '../lib/url';
import { Empty, ErrorBox, Link, Loading, useLoad } from '../components/common';
import { Popover } from '../components/ChartPanel';
import { FilterBar } from './FilterBar';
import { ProjectArtifacts } from './Artifacts';
import { RunsTable, StateDots } from './RunsTable';
import { MAX_CHART_RUNS, runStyles, WorkspaceCharts } from './WorkspaceCharts';
import { WorkspaceMedia } from './WorkspaceMedia';
import { ALERTS_REFRESH_MS, AlertsLink } from './Alerts';
import { openAlertsByRun } from '../lib/alerts';
import { CompareBar } from './Compare';
import { ParamImportance } from './ParamImportance';
import { applyBrushes } from '../lib/compare';
import { layoutOf, layoutState } from '../lib/views';
import { ComparePanels } from '../components/ComparePanels';

export function WorkspacePage({ state }: { state: AppState }) {
  const { entity, project } = state;
  const runsState = useProjectRuns(entity, project);
  const { runs, loaded, error } = runsState;

  // Saved views; a project with none gets the seed's three.
  const views = useLoad(async () => {
    let vs = await api.views(entity, project);
    // Only a project that exists (has runs) gets the seed's views: a mistyped URL creates nothing.
    if (!vs.length && (await api.runsPage(entity, project, { limit: 1 })).total > 0) {
      for (const v of DEFAULT_VIEWS) {
        try { await api.createView(entity, project, v.name, v.spec); } catch { /* another tab made them */ }
      }
      vs = await api.views(entity, project);
    }
    // Two tabs may both have created them: show each name once.
    const seen = new Set<string>();
    return vs.filter((v) => (seen.has(v.name) ? false : (seen.add(v.name), true)));
  }, [entity, project]);

  // Open alerts, marked on their runs in the table and counted on the header's link.
  const openAlerts = useLoad((signal) => api.alerts(entity, project, { state: 'open', limit: 1000 }, signal), [entity, project], ALERTS_REFRESH_MS);
  const alertsByRun = useMemo(() => openAlertsByRun(openAlerts.data ?? []), [openAlerts.data]);

  const f = state.filters;
  const t0 = performance.now();
  // The comparison panels take the filter's runs unsorted: a new sort does not redraw them.
  const matching = useMemo(() => filterRuns(runs, f), [runs, JSON.stringify(f)]);
  const filtered = useMemo(() => sortRuns(matching, state.sort), [matching, state.sort]);
  // The parallel coordinates' brushes keep the runs inside all of them (compare.ts).
  const brushes = state.panels.pc?.brushes;
  const shown = useMemo(() => applyBrushes(filtered, brushes), [filtered, JSON.stringify(brushes ?? {})]);
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  // Runs picked in the table for a comparison (in the order picked).
  const [picked, setPicked] = useState<string[]>([]);
  useEffect(() => setPicked([]), [entity, project]);  // a project's runs only
  const pickedSet = useMemo(() => new Set(picked), [picked]);
  const rows = useMemo(() => groupRows(shown, state.groupBy, collapsed), [shown, state.groupBy, collapsed]);
  // For the bench: how long the last filter+sort took.
  (window as any).__cohortFilterMs = performance.now() - t0;

  // Recomputed whenever the run list changes (a new array on each refresh that changed a run):
  // any run, not only the newest, may have new summary or config keys.
  const summaryKeys = useMemo(() => summaryKeysOf(runs), [runs]);
  const configKeys = useMemo(() => [...configKeyStats(runs).keys()].sort(), [runs]);
  // Default columns vary with what is visible: the config keys that differ among the shown runs,
  // then their main metrics.
  const autoColumns = useMemo(() => defaultColumns(shown), [shown]);
  const columns = state.columns.length ? state.columns : autoColumns;
  const jobTypes = useMemo(() => [...new Set(runs.map((r) => r.job_type).filter(Boolean))].sort(), [runs]);

  // Charts: the visible runs in table order, less the hidden ones, at most MAX_CHART_RUNS.
  const hidden = useMemo(() => new Set(state.hide), [state.hide.join(',')]);
  const eligible = useMemo(() => shown.filter((r) => !hidden.has(r.id)), [shown, hidden]);
  const charted = useMemo(() => eligible.slice(0, MAX_CHART_RUNS), [eligible]);
  const { styles, legend } = useMemo(() => runStyles(charted, state.cby), [charted, state.cby]);

  const currentView = views.data?.find((v) => String(v.id) === state.view) ?? null;
  const specNow: ViewSpec = { filters: uiToClauses(f), group_by: state.groupBy, sort: state.sort, columns: state.columns, layout: layoutOf(state) };
  const modified = currentView ? JSON.stringify(normSpec(currentView.spec)) !== JSON.stringify(normSpec(specNow)) : false;

  const applyView = (v: View | null) => {
    if (!v) { update({ view: '' }); return; }
    update({
      view: String(v.id), filters: clausesToUi(v.spec.filters ?? []), groupBy: v.spec.group_by ?? '',
      sort: v.spec.sort || '-created', columns: v.spec.columns ?? [], ...layoutState(v.spec.layout),
    });
  };

  const searchRef = useRef<HTMLInputElement>(null);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === '/' && !(e.target instanceof HTMLInputElement) && !(e.target instanceof HTMLTextAreaElement)) {
        e.preventDefault();
        searchRef.current?.focus();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  // An empty answer: a project nobody logged to (a mistyped name) is not an empty project.
  const projects = useLoad(async () => (loaded && !runs.length && !error ? api.projects() : null), [loaded, runs.length === 0, !!error]);
  const exists = !projects.data || projects.data.some((p) => p.entity === entity && p.project === project);

  return (
    <div class="workspace">
      <Sidebar state={state} runs={runs} loaded={loaded} />
      <div class="ws-main">
        <div class="ws-head">
          <h1>{project}</h1>
          <AlertsLink open={openAlerts.data?.length ?? 0} />
          <ViewBar state={state} views={views.data} error={views.error} current={currentView} modified={modified}
            onApply={applyView} onSaved={(v) => { views.reload(); applyView(v); }} onDeleted={() => { views.reload(); update({ view: '' }); }} specNow={specNow} />
        </div>
        <FilterBar filters={f} jobTypes={jobTypes} searchRef={searchRef} state={state} runs={runs}
          configKeys={configKeys} summaryKeys={summaryKeys} columns={columns} />
        {error ? <ErrorBox error={error} retry={runsState.reload} /> : null}
        {!(error && !runs.length) && (
          <div class="ws-count" aria-live="polite">
            {!loaded && !runs.length ? 'Loading runs…'
              : `${shown.length.toLocaleString()} of ${runsState.total.toLocaleString()} runs${loaded ? '' : ' (loading…)'}`}
          </div>
        )}
        <CompareBar state={state} picked={picked} onClear={() => setPicked([])} />
        {error && !runs.length ? null
          : !loaded && !runs.length ? <Loading what="runs" />
            : !runs.length ? (exists
              ? <Empty>No runs in this project yet. A run logged with <code>cohort.init(project="{project}")</code> appears here.</Empty>
              : <Empty><span data-testid="no-such-project">No such project: <strong>{entity}/{project}</strong>.</span> <Link href="/">All projects</Link></Empty>)
              : !shown.length && filtered.length ? <Empty>No run is inside the brushes of the parallel coordinates. <button type="button" class="link" onClick={() => update({ panels: { ...state.panels, pc: { ...state.panels.pc!, brushes: {} } } })}>Clear the brushes</button></Empty>
              : !shown.length ? <Empty>No run matches these filters. <button type="button" class="link" onClick={() => update({ filters: { jobType: null, states: [], tags: [], name: '', extra: [] }, view: '' })}>Clear filters</button></Empty>
                : <RunsTable rows={rows} state={state} columns={columns} collapsed={collapsed} setCollapsed={setCollapsed}
                    styleOf={(id) => styles.get(id)} alertsOf={(id) => alertsByRun.get(id)}
                    selected={pickedSet} onSelect={(id, on) => setPicked((p) => (on ? [...p.filter((x) => x !== id), id] : p.filter((x) => x !== id)))} />}
        {runs.length > 0 && filtered.length > 0 && <ComparePanels state={state} filtered={matching} hidden={hidden} />}
        {runs.length > 0 && shown.length > 0 && loaded && <ParamImportance state={state} runs={shown} all={runs} />}
        {runs.length > 0 && shown.length > 0 && (
          <WorkspaceCharts state={state} visible={shown} eligible={eligible.length} charted={charted} styles={styles} legend={legend} loaded={loaded} />
        )}
        {runs.length > 0 && shown.length > 0 && loaded && <WorkspaceMedia state={state} charted={charted} styles={styles} />}
      </div>
    </div>
  );
}

function normSpec(s: ViewSpec) {
  return {
    filters: uiToClauses(clausesToUi(s.filters ?? [])), group_by: s.group_by ?? '', sort: s.sort || '-created', columns: s.columns ?? [],
    layout: layoutOf(layoutState(s.layout)),
  };
}

// ---- views -------------------------------------------------------------------------------

function ViewBar(p: {
  state: AppState; views: View[] | null; error: unknown; current: View | null; modified: boolean; specNow: ViewSpec;
  onApply: (v: View | null) => void; onSaved: (v: View) => void; onDeleted: () => void;
}) {
  const { entity, project } = p.state;
  const [err, setErr] = useState<unknown>(null);
  const [dialog, setDialog] = useState<'' | 'save-as' | 'delete'>('');
  const [name, setName] = useState('');
  const saveAs = async (e: Event) => {
    e.preventDefault();
    if (!name.trim()) return;
    try { p.onSaved(await api.createView(entity, project, name.trim(), p.specNow)); setErr(null); setDialog(''); } catch (x) { setErr(x); }
  };
  const save = async () => {
    if (!p.current) return;
    try { p.onSaved(await api.updateView(entity, project, p.current.id, p.current.name, p.specNow, p.current.updated_ms)); setErr(null); } catch (e) { setErr(e); }
  };
  const del = async () => {
    if (!p.current) return;
    try { await api.deleteView(entity, project, p.current.id); p.onDeleted(); setErr(null); setDialog(''); } catch (e) { setErr(e); }
  };
  return (
    <div class="viewbar">
      <label>View{' '}
        <select aria-label="saved view" data-testid="view-select" value={p.current ? String(p.current.id) : ''}
          onChange={(e) => p.onApply(p.views?.find((v) => String(v.id) === (e.target as HTMLSelectElement).value) ?? null)}>
          <option value="">(no view: all runs)</option>
          {p.views?.map((v) => <option key={v.id} value={String(v.id)}>{v.name}</option>)}
        </select>
      </label>
      {p.modified && <span class="modified" title="the filters or the layout differ from the saved view">modified</span>}
      {p.current && p.modified && <button type="button" class="small" onClick={save}>Save view</button>}
      <span class="picker">
        <button type="button" class="small" aria-expanded={dialog === 'save-as'}
          onClick={() => { setName(p.current ? `${p.current.name} (copy)` : 'my view'); setDialog(dialog === 'save-as' ? '' : 'save-as'); }}>Save as…</button>
        {dialog === 'save-as' && (
          <Popover onClose={() => setDialog('')} label="save as a new view">
            <form class="builder-form" onSubmit={saveAs}>
              <label>Name <input type="text" aria-label="name of the new view" value={name} autoFocus
                onInput={(e) => setName((e.target as HTMLInputElement).value)} /></label>
              <button type="submit" class="small primary" disabled={!name.trim()}>Save</button>
              <button type="button" class="small" onClick={() => setDialog('')}>Cancel</button>
            </form>
          </Popover>
        )}
      </span>
      {p.current && (
        <span class="picker">
          <button type="button" class="small danger" aria-expanded={dialog === 'delete'} onClick={() => setDialog(dialog === 'delete' ? '' : 'delete')}>Delete view</button>
          {dialog === 'delete' && (
            <Popover onClose={() => setDialog('')} label="delete the view">
              <p>Delete the view “{p.current.name}”?</p>
              <button type="button" class="small danger" onClick={del}>Delete</button>{' '}
              <button type="button" class="small" onClick={() => setDialog('')}>Cancel</button>
            </Popover>
          )}
        </span>
      )}
      {p.error ? <ErrorBox error={p.error} /> : null}
      {err ? <ErrorBox error={err} /> : null}
    </div>
  );
}

// ---- sidebar -------------------------------------------------------------------------------

function Sidebar({ state, runs, loaded }: { state: AppState; runs: Run[]; loaded: boolean }) {
  const [open, setOpen] = useState<Set<string>>(new Set());
  const groups = useMemo(() => {
    const m = new Map<string, { runs: Run[]; states: Record<string, number> }>();
    for (const r of runs) {
      if (!r.group) continue;
      let g = m.get(r.group);
      if (!g) { g = { runs: [], states: {} }; m.set(r.group, g); }
      g.runs.push(r);
      g.states[r.state] = (g.states[r.state] ?? 0) + 1;
    }
    return [...m.entries()].sort((a, b) => a[0].localeCompare(b[0]));
  }, [runs]);
  const ungrouped = runs.filter((r) => !r.group).length;
  const toggle = (g: string) => { const n = new Set(open); if (n.has(g)) n.delete(g); else n.add(g); setOpen(n); };
  return (
    <aside class="sidebar" aria-label="groups and artifacts">
      <h2>Groups</h2>
      {!loaded && !runs.length ? <Loading /> : !groups.length ? <div class="muted">No groups. Runs started with <code>group="…"</code> appear here.</div> : null}
      <ul class="groups" data-testid="groups">
        {groups.map(([g, info]) => (
          <li key={g} class="group-item" data-group={g}>
            <div class="group-row">
              <button type="button" class="twisty" aria-expanded={open.has(g)} aria-label={`${open.has(g) ? 'collapse' : 'expand'} group ${g}`} onClick={() => toggle(g)}>{open.has(g) ? '▾' : '▸'}</button>
              <Link href={linkTo(state, { group: g, run: '' })} class="group-name">{g}</Link>
              <span class="count">{info.runs.length}</span>
              <StateDots states={info.states} />
            </div>
            {open.has(g) && (
              <ul class="group-runs">
                {info.runs.slice().sort((a, b) => naturalCompare(a.name, b.name)).slice(0, 500).map((r) => (
                  <li key={r.id}>
                    <span class={`dot state-${r.state}`} title={r.state} />
                    <Link href={linkTo(state, { run: r.id, group: '' })}>{r.name || r.id}</Link>
                    {r.job_type && <span class="muted small"> {r.job_type}</span>}
                  </li>
                ))}
              </ul>
            )}
          </li>
        ))}
      </ul>
      {ungrouped > 0 && <div class="muted small">{ungrouped} run{ungrouped === 1 ? '' : 's'} without a group</div>}
      <ProjectArtifacts state={state} />
    </aside>
  );
}

