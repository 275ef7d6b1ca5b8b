// Project workspace: saved views, filter bar, sidebar of groups, the runs table (virtual rows,
// grouping, sort on any column, summary metrics as columns), and charts of the selected runs.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type View } from '../lib/api';
import {
  clausesToUi, DEFAULT_VIEWS, filterRuns, groupRows, runtimeOf, sortRuns, STATES, uiToClauses,
  type GroupedRow, type Run, type UiFilters, type ViewSpec,
} from '../lib/filters';
import { colorFor, fmtAgo, fmtDuration, fmtNum, fmtTime, PALETTE } from '../lib/format';
import { update } from '../lib/nav';
import { useProjectRuns } from '../lib/runstore';
import { linkTo, type AppState } from '../lib/url';
import type { LineSource } from '../lib/chartdata';
import { Empty, ErrorBox, Link, Loading, StateBadge, useLoad, useTick } from '../components/common';
import { LIVE_MS } from './Run';
import { ChartPanel } from '../components/ChartPanel';
import { ChartToolbar, settingsOf } from '../components/ChartToolbar';

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

  const f = state.filters;
  const t0 = performance.now();
  const shown = useMemo(() => sortRuns(filterRuns(runs, f), state.sort), [runs, JSON.stringify(f), state.sort]);
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const rows = useMemo(() => groupRows(shown, state.groupBy, collapsed), [shown, state.groupBy, collapsed]);
  // For the bench: how long the last filter+sort took.
  (window as any).__cohortFilterMs = performance.now() - t0;

  const summaryKeys = useMemo(() => {
    const count = new Map<string, number>();
    for (let i = 0; i < runs.length && i < 3000; i++) {
      for (const [k, v] of Object.entries(runs[i].summary ?? {})) {
        if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') count.set(k, (count.get(k) ?? 0) + 1);
      }
    }
    return [...count.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k]) => k);
  }, [runs.length ? runs[0] : null, runs.length]);
  const columns = state.columns.length ? state.columns : summaryKeys.slice(0, 3);
  const jobTypes = useMemo(() => [...new Set(runs.map((r) => r.job_type).filter(Boolean))].sort(), [runs]);

  const currentView = views.data?.find((v) => String(v.id) === state.view) ?? null;
  const specNow: ViewSpec = { filters: uiToClauses(f), group_by: state.groupBy, sort: state.sort, columns: state.columns };
  const modified = currentView ? JSON.stringify(normSpec(currentView.spec)) !== JSON.stringify(normSpec(specNow)) : false;

  const applyView = (v: View | null) => {
    if (!v) { update({ view: '' }); return; }
    update({
      view: String(v.id), filters: clausesToUi(v.spec.filters ?? []), groupBy: v.spec.group_by ?? '',
      sort: v.spec.sort || '-created', columns: v.spec.columns ?? [],
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

  return (
    <div class="workspace">
      <Sidebar state={state} runs={runs} loaded={loaded} />
      <div class="ws-main">
        <div class="ws-head">
          <h1>{project}</h1>
          <ViewBar state={state} views={views.data} error={views.error} current={currentView} modified={modified}
            onApply={applyView} onSaved={(v) => { views.reload(); applyView(v); }} onDeleted={() => { views.reload(); update({ view: '' }); }} specNow={specNow} />
        </div>
        <FilterBar filters={f} jobTypes={jobTypes} searchRef={searchRef} state={state} summaryKeys={summaryKeys} columns={columns} />
        {error ? <ErrorBox error={error} retry={runsState.reload} /> : null}
        <div class="ws-count" aria-live="polite">
          {!loaded && !runs.length ? 'Loading runs…'
            : `${shown.length.toLocaleString()} of ${runsState.total.toLocaleString()} runs${loaded ? '' : ' (loading…)'}`}
          {state.selected.length > 0 && <> · {state.selected.length} selected <button type="button" class="link" onClick={() => update({ selected: [] })}>clear</button></>}
        </div>
        {!loaded && !runs.length ? <Loading what="runs" />
          : !runs.length ? <Empty>No runs in this project yet.</Empty>
            : !shown.length ? <Empty>No run matches these filters. <button type="button" class="link" onClick={() => update({ filters: { jobType: null, states: [], tags: [], name: '', extra: [] }, view: '' })}>Clear filters</button></Empty>
              : <RunsTable rows={rows} state={state} columns={columns} collapsed={collapsed} setCollapsed={setCollapsed} />}
        {state.selected.length > 0 && <SelectedCharts state={state} runs={runs} />}
      </div>
    </div>
  );
}

function normSpec(s: ViewSpec) {
  return { filters: uiToClauses(clausesToUi(s.filters ?? [])), group_by: s.group_by ?? '', sort: s.sort || '-created', columns: s.columns ?? [] };
}

// ---- views -------------------------------------------------------------------------------

function ViewBar(p: {
  state: AppState; views: View[] | null; error: unknown; current: View | null; modified: boolean; specNow: ViewSpec;
  onApply: (v: View | null) => void; onSaved: (v: View) => void; onDeleted: () => void;
}) {
  const { entity, project } = p.state;
  const [err, setErr] = useState<unknown>(null);
  const saveAs = async () => {
    const name = prompt('Name of the new view', p.current ? `${p.current.name} (copy)` : 'my view');
    if (!name) return;
    try { p.onSaved(await api.createView(entity, project, name, p.specNow)); setErr(null); } catch (e) { setErr(e); }
  };
  const save = async () => {
    if (!p.current) return;
    try { p.onSaved(await api.updateView(entity, project, p.current.id, p.current.name, p.specNow)); setErr(null); } catch (e) { setErr(e); }
  };
  const del = async () => {
    if (!p.current || !confirm(`Delete the view "${p.current.name}"?`)) return;
    try { await api.deleteView(entity, project, p.current.id); p.onDeleted(); setErr(null); } catch (e) { setErr(e); }
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
      {p.modified && <span class="modified" title="the filters differ from the saved view">modified</span>}
      {p.current && p.modified && <button type="button" class="small" onClick={save}>Save view</button>}
      <button type="button" class="small" onClick={saveAs}>Save as…</button>
      {p.current && <button type="button" class="small danger" onClick={del}>Delete view</button>}
      {p.error ? <ErrorBox error={p.error} /> : null}
      {err ? <ErrorBox error={err} /> : null}
    </div>
  );
}

// ---- filters -----------------------------------------------------------------------------

function FilterBar(p: { filters: UiFilters; jobTypes: string[]; searchRef: { current: HTMLInputElement | null }; state: AppState; summaryKeys: string[]; columns: string[] }) {
  const f = p.filters;
  const set = (patch: Partial<UiFilters>, replace = false) => update({ filters: { ...f, ...patch } }, replace);
  const [tagText, setTagText] = useState(f.tags.join(', '));
  useEffect(() => setTagText(f.tags.join(', ')), [f.tags.join(',')]);
  return (
    <div class="filterbar" role="search">
      <input ref={p.searchRef} type="search" class="search" placeholder="Search names  ( / )" aria-label="search run names"
        value={f.name} onInput={(e) => set({ name: (e.target as HTMLInputElement).value }, true)} />
      <span class="fgroup">
        <label for="jt-op">Job type</label>
        <select id="jt-op" aria-label="job type operator" value={f.jobType?.op ?? '=='}
          onChange={(e) => set({ jobType: { op: (e.target as HTMLSelectElement).value as '==' | '!=', value: f.jobType?.value ?? '' } })}>
          <option value="==">is</option>
          <option value="!=">is not</option>
        </select>
        <select aria-label="job type" data-testid="jobtype-value" value={f.jobType?.value ?? ''}
          onChange={(e) => { const v = (e.target as HTMLSelectElement).value; set({ jobType: v ? { op: f.jobType?.op ?? '==', value: v } : null }); }}>
          <option value="">any</option>
          {[...new Set([...p.jobTypes, ...(f.jobType?.value ? [f.jobType.value] : [])])].map((j) => <option key={j} value={j}>{j}</option>)}
        </select>
      </span>
      <fieldset class="fgroup states">
        <legend>State</legend>
        {STATES.map((s) => (
          <label key={s} class={`chip state-${s}`}>
            <input type="checkbox" checked={f.states.includes(s)}
              onChange={(e) => set({ states: (e.target as HTMLInputElement).checked ? [...f.states, s] : f.states.filter((x) => x !== s) })} />
            {s}
          </label>
        ))}
      </fieldset>
      <span class="fgroup">
        <label for="tags">Tags</label>
        <input id="tags" type="text" size={10} placeholder="a, b" value={tagText}
          onInput={(e) => setTagText((e.target as HTMLInputElement).value)}
          onChange={() => set({ tags: tagText.split(',').map((t) => t.trim()).filter(Boolean) })} />
      </span>
      {f.extra.length > 0 && (
        <span class="fgroup extra" title="filters of the saved view with no control here">
          {f.extra.map((c, i) => (
            <span class="chip" key={i}>{c.field} {c.op} {c.values ? c.values.join('|') : String(c.value)}
              <button type="button" class="x" aria-label="remove filter" onClick={() => set({ extra: f.extra.filter((_x, j) => j !== i) })}>×</button></span>
          ))}
        </span>
      )}
      <span class="fgroup">
        <label for="groupby">Group by</label>
        <select id="groupby" value={p.state.groupBy} onChange={(e) => update({ groupBy: (e.target as HTMLSelectElement).value as AppState['groupBy'] })}>
          <option value="">none</option>
          <option value="group">group</option>
          <option value="job_type">job type</option>
        </select>
      </span>
      <ColumnPicker keys={p.summaryKeys} columns={p.columns} />
    </div>
  );
}

function ColumnPicker({ keys, columns }: { keys: string[]; columns: string[] }) {
  const [open, setOpen] = useState(false);
  return (
    <span class="fgroup picker">
      <button type="button" class="small" aria-expanded={open} onClick={() => setOpen(!open)}>Columns ▾</button>
      {open && (
        <div class="popover" role="dialog" aria-label="summary columns" onKeyDown={(e) => { if (e.key === 'Escape') setOpen(false); }}>
          {!keys.length && <div class="muted">No summary metrics yet.</div>}
          {keys.slice(0, 200).map((k) => (
            <label key={k} class="row">
              <input type="checkbox" checked={columns.includes(k)}
                onChange={(e) => update({ columns: (e.target as HTMLInputElement).checked ? [...columns, k] : columns.filter((c) => c !== k) })} />
              {k}
            </label>
          ))}
        </div>
      )}
    </span>
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
    <aside class="sidebar" aria-label="groups">
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
                {info.runs.slice().sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true })).slice(0, 500).map((r) => (
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
    </aside>
  );
}

function StateDots({ states }: { states: Record<string, number> }) {
  return (
    <span class="state-dots">
      {Object.entries(states).map(([s, n]) => <span key={s} class={`dotn state-${s}`} title={`${n} ${s}`}>{n}</span>)}
    </span>
  );
}

// ---- runs table ----------------------------------------------------------------------------

const ROW_H = 34;

interface Col { id: string; label: string; sort?: string; num?: boolean; cell: (r: Run, s: AppState) => preact.ComponentChildren }

function RunsTable({ rows, state, columns, collapsed, setCollapsed }: {
  rows: GroupedRow[]; state: AppState; columns: string[]; collapsed: Set<string>; setCollapsed: (s: Set<string>) => void;
}) {
  const scroller = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(600);
  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    setHeight(el.clientHeight);
    const ro = new ResizeObserver(() => setHeight(el.clientHeight));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const now = Date.now();
  const cols: Col[] = [
    { id: 'name', label: 'Name', sort: 'name', cell: (r, s) => <Link href={linkTo(s, { run: r.id, group: '' })} class="run-link">{r.name || r.id}</Link> },
    { id: 'state', label: 'State', sort: 'state', cell: (r) => <StateBadge state={r.state} /> },
    { id: 'group', label: 'Group', sort: 'group', cell: (r, s) => (r.group ? <Link href={linkTo(s, { group: r.group, run: '' })}>{r.group}</Link> : <span class="muted">—</span>) },
    { id: 'job_type', label: 'Job type', sort: 'job_type', cell: (r) => r.job_type || <span class="muted">—</span> },
    { id: 'writers', label: 'Writers', sort: 'writers', num: true, cell: (r) => r.writer_count },
    { id: 'host', label: 'Host', sort: 'host', cell: (r) => r.host || <span class="muted">—</span> },
    { id: 'created', label: 'Created', sort: 'created', cell: (r) => <span title={fmtTime(r.created_ms)}>{fmtAgo(r.created_ms, now)}</span> },
    { id: 'runtime', label: 'Runtime', sort: 'runtime', num: true, cell: (r) => fmtDuration(runtimeOf(r, now)) },
    ...columns.map<Col>((k) => ({ id: 's:' + k, label: k, sort: 'summary.' + k, num: true, cell: (r) => fmtNum(r.summary?.[k]) })),
  ];
  const first = Math.max(0, Math.floor(scrollTop / ROW_H) - 10);
  const last = Math.min(rows.length, Math.ceil((scrollTop + height) / ROW_H) + 10);
  const sel = new Set(state.selected);
  const toggleSel = (id: string) => update({ selected: sel.has(id) ? state.selected.filter((x) => x !== id) : [...state.selected, id] });
  const sortBy = (key: string) => update({ sort: state.sort === '-' + key ? key : '-' + key });
  const ariaSort = (key?: string) => (!key ? undefined : state.sort === key ? 'ascending' : state.sort === '-' + key ? 'descending' : 'none');
  return (
    <div class="table-scroll" ref={scroller} onScroll={(e) => setScrollTop((e.target as HTMLDivElement).scrollTop)}>
      <table class="table runs" data-testid="runs-table" aria-rowcount={rows.length}>
        <thead>
          <tr>
            <th class="sel"><span class="sr-only">select</span></th>
            {cols.map((c) => (
              <th key={c.id} class={c.num ? 'num' : ''} aria-sort={ariaSort(c.sort) as any}>
                {c.sort ? <button type="button" class="th-sort" onClick={() => sortBy(c.sort!)}>{c.label}{state.sort === c.sort ? ' ▲' : state.sort === '-' + c.sort ? ' ▼' : ''}</button> : c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {first > 0 && <tr class="spacer" style={{ height: first * ROW_H + 'px' }} />}
          {rows.slice(first, last).map((row) => row.kind === 'group' ? (
            <tr key={'g:' + row.value} class="group-header">
              <td colSpan={cols.length + 1}>
                <button type="button" class="twisty" aria-expanded={!collapsed.has(row.value)}
                  onClick={() => { const n = new Set(collapsed); if (n.has(row.value)) n.delete(row.value); else n.add(row.value); setCollapsed(n); }}>
                  {collapsed.has(row.value) ? '▸' : '▾'} {row.value || '(none)'}
                </button>
                <span class="count">{row.count}</span> <StateDots states={row.states} />
                {state.groupBy === 'group' && row.value && <> · <Link href={linkTo(state, { group: row.value, run: '' })}>group page</Link></>}
              </td>
            </tr>
          ) : (
            <tr key={row.run.id} data-run={row.run.id} data-name={row.run.name} class={sel.has(row.run.id) ? 'selected' : ''}>
              <td class="sel">
                <input type="checkbox" aria-label={`select ${row.run.name}`} checked={sel.has(row.run.id)} onChange={() => toggleSel(row.run.id)} />
              </td>
              {cols.map((c) => <td key={c.id} class={c.num ? 'num' : ''}>{c.cell(row.run, state)}</td>)}
            </tr>
          ))}
          {last < rows.length && <tr class="spacer" style={{ height: (rows.length - last) * ROW_H + 'px' }} />}
        </tbody>
      </table>
    </div>
  );
}

// ---- charts of the selected runs -----------------------------------------------------------

function SelectedCharts({ state, runs }: { state: AppState; runs: Run[] }) {
  const ids = state.selected.slice(0, 20);
  const byId = new Map(runs.map((r) => [r.id, r]));
  // Live: while a selected run runs, keys and lines are re-queried every few seconds; a state
  // change (the project's runs refresh every 4 s) re-queries once more, so the last points show.
  const live = ids.some((id) => byId.get(id)?.state === 'running');
  const liveTick = useTick(live, LIVE_MS);
  const stateSig = ids.map((id) => byId.get(id)?.state ?? '').join(',');
  const lastSig = useRef(stateSig);
  const [stateBump, setStateBump] = useState(0);
  useEffect(() => {
    if (lastSig.current !== stateSig) { lastSig.current = stateSig; setStateBump((b) => b + 1); }
  }, [stateSig]);
  const tick = liveTick + stateBump;
  const keys = useLoad(async (signal) => {
    const all = await Promise.all(ids.map((id) => api.keys(state.entity, state.project, id, signal).then((ks) => [id, ks] as const)));
    return all;
  }, [state.entity, state.project, ids.join(','), tick]);
  const [keyFilter, setKeyFilter] = useState('');
  const settings = settingsOf(state);
  const charts = useMemo(() => {
    if (!keys.data) return [];
    const m = new Map<string, LineSource[]>();
    keys.data.forEach(([id, ks], runIdx) => {
      const r = byId.get(id);
      const writersOf = new Map<string, number>();
      for (const k of ks) if (!k.key.startsWith('system/')) writersOf.set(k.key, (writersOf.get(k.key) ?? 0) + 1);
      const perKey = new Map<string, [number, number]>();
      for (const k of ks) {
        if (k.key.startsWith('system/')) continue;
        const cur = perKey.get(k.key);
        perKey.set(k.key, cur ? [Math.min(cur[0], k.min_step), Math.max(cur[1], k.max_step)] : [k.min_step, k.max_step]);
      }
      for (const [key, range] of perKey) {
        let list = m.get(key);
        if (!list) { list = []; m.set(key, list); }
        const runName = r?.name || id;
        const multi = (writersOf.get(key) ?? 0) > 1;
        list.push({
          entity: state.entity, project: state.project, run: id, key, system: false, originMs: r?.created_ms ?? 0, stepRange: range,
          name: (w) => (multi ? `${runName} · ${w}` : runName),
          ...({ _idx: runIdx } as object),
        });
      }
    });
    return [...m.entries()].sort((a, b) => a[0].localeCompare(b[0]));
  }, [keys.data]);
  const shown = charts.filter(([k]) => k.includes(keyFilter));
  const runIndex = new Map(ids.map((id, i) => [id, i]));
  return (
    <section class="selected-charts" aria-label="charts of the selected runs">
      <div class="section-head">
        <h2>Selected runs {live && <span class="live" title="refreshes every few seconds">● live</span>}</h2>
        <input type="search" placeholder="filter metrics" aria-label="filter metrics" value={keyFilter} onInput={(e) => setKeyFilter((e.target as HTMLInputElement).value)} />
        <ChartToolbar state={state} />
      </div>
      <div class="legend-runs">
        {ids.map((id, i) => <span key={id} class="legend-item static"><span class="swatch" style={{ background: PALETTE[i % PALETTE.length] }} />{byId.get(id)?.name ?? id}</span>)}
      </div>
      {keys.error ? <ErrorBox error={keys.error} /> : !keys.data ? <Loading what="metrics" /> : !shown.length ? <Empty>The selected runs have no metrics{keyFilter ? ' matching this filter' : ''}.</Empty> : (
        <div class="grid">
          {shown.slice(0, 60).map(([k, sources]) => (
            <ChartPanel key={k} title={k} sources={sources} settings={{ ...settings, agg: false }} syncKey="ws" tick={tick}
              color={(l) => colorFor('', runIndex.get(l.run) ?? 0)} />
          ))}
        </div>
      )}
    </section>
  );
}
