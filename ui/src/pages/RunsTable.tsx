// The workspace's runs table: virtual rows, grouping headers, sort on any column (config and
// summary columns included), an eye per row that shows or hides the run in the charts, and
// keyboard navigation (arrow keys between rows, Enter opens a run, Space toggles its eye). It
// fills the page's height, and a new sort or grouping starts at the top.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { columnLabel, columnSort, columnValue, runtimeOf, type GroupedRow, type Run } from '../lib/filters';
import { fmtAgo, fmtDuration, fmtNum, fmtTime } from '../lib/format';
import { navigate, update } from '../lib/nav';
import { linkTo, type AppState } from '../lib/url';
import { Link, StateBadge } from '../components/common';
import type { LineStyle } from '../components/ChartPanel';
import type { RunAlerts } from '../lib/alerts';
import { AlertMark } from './Alerts';

export const ROW_H = 34;

interface Col { id: string; label: string; sort?: string; num?: boolean; cell: (r: Run, s: AppState) => preact.ComponentChildren }

export function RunsTable({ rows, state, columns, collapsed, setCollapsed, styleOf, alertsOf, selected, onSelect }: {
  rows: GroupedRow[]; state: AppState; columns: string[]; collapsed: Set<string>; setCollapsed: (s: Set<string>) => void;
  /** The run's line style in the charts; undefined when it is not charted. */
  styleOf: (id: string) => LineStyle | undefined;
  /** The run's open alerts (a mark after its name); undefined when none. */
  alertsOf?: (id: string) => RunAlerts | undefined;
  /** Runs picked for a comparison (a checkbox per row when onSelect is given). */
  selected?: Set<string>;
  onSelect?: (id: string, on: boolean) => void;
}) {
  const scroller = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(600);
  const [maxH, setMaxH] = useState(0);
  const [focusRow, setFocusRow] = useState(-1);
  const wantFocus = useRef(false);
  // The row a key press moved to but that is not focused yet (its render is pending): the next
  // key press (a fast typist, key repeat) moves on from there, not from the row it was sent to.
  const pendingRow = useRef(-1);

  // The table takes the page's height below it (less when its rows need less).
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const fit = () => {
      // Where the table starts on the page (its scroll container scrolled to the top).
      const top = el.getBoundingClientRect().top + (el.closest('.ws-main')?.scrollTop ?? 0);
      const max = Math.max(200, window.innerHeight - top - 16);
      setMaxH(max);
      // Never more than fits: the virtual rows render what this height shows (the CSS max-height
      // holds the table until `max` applies).
      setHeight(Math.min(el.clientHeight, max));
    };
    fit();
    const ro = new ResizeObserver(fit);
    ro.observe(el);
    window.addEventListener('resize', fit);
    return () => { ro.disconnect(); window.removeEventListener('resize', fit); };
  }, []);

  // A new sort or grouping (or filter) starts at the top: the old scroll position would show an
  // arbitrary slice of the new order.
  const orderKey = `${state.sort}|${state.groupBy}|${JSON.stringify(state.filters)}`;
  const lastOrder = useRef(orderKey);
  useEffect(() => {
    if (lastOrder.current === orderKey) return;
    lastOrder.current = orderKey;
    if (scroller.current) scroller.current.scrollTop = 0;
    setScrollTop(0);
    setFocusRow((f) => (f >= 0 ? 0 : f));
  }, [orderKey]);

  const now = Date.now();
  const cols: Col[] = [
    { id: 'name', label: 'Name', sort: 'name', cell: (r, s) => {
      const marks = alertsOf?.(r.id);
      return (
        <>
          <Link href={linkTo(s, { run: r.id, group: '' })} class="run-link" tabIndex={-1}>{r.name || r.id}</Link>
          {marks && <> <AlertMark info={marks} href={linkTo(s, { run: r.id, group: '', tab: 'alerts' })} /></>}
        </>
      );
    } },
    { id: 'state', label: 'State', sort: 'state', cell: (r) => <StateBadge state={r.state} /> },
    { id: 'group', label: 'Group', sort: 'group', cell: (r, s) => (r.group ? <Link href={linkTo(s, { group: r.group, run: '' })} tabIndex={-1}>{r.group}</Link> : <span class="muted">—</span>) },
    { id: 'job_type', label: 'Job type', sort: 'job_type', cell: (r) => r.job_type || <span class="muted">—</span> },
    { id: 'writers', label: 'Writers', sort: 'writers', num: true, cell: (r) => r.writer_count },
    { id: 'created', label: 'Created', sort: 'created', cell: (r) => <span title={fmtTime(r.created_ms)}>{fmtAgo(r.created_ms, now)}</span> },
    { id: 'runtime', label: 'Runtime', sort: 'runtime', num: true, cell: (r) => fmtDuration(runtimeOf(r, now)) },
    ...columns.map<Col>((k) => ({ id: 'c:' + k, label: columnLabel(k), sort: columnSort(k), num: true, cell: (r) => fmtNum(columnValue(r, k)) })),
  ];
  const first = Math.max(0, Math.floor(scrollTop / ROW_H) - 10);
  const last = Math.min(rows.length, Math.ceil((scrollTop + height) / ROW_H) + 10);
  const hidden = new Set(state.hide);
  const toggleEye = (id: string) => update({ hide: hidden.has(id) ? state.hide.filter((x) => x !== id) : [...state.hide, id] });
  const sortBy = (key: string) => update({ sort: state.sort === '-' + key ? key : '-' + key });
  const ariaSort = (key?: string) => (!key ? undefined : state.sort === key ? 'ascending' : state.sort === '-' + key ? 'descending' : 'none');

  // Keyboard: the focused row is the one tab stop of the body (roving tabindex).
  const moveTo = (i: number) => {
    const n = rows.length;
    if (!n) return;
    const j = Math.max(0, Math.min(n - 1, i));
    const el = scroller.current;
    if (el) {
      const top = j * ROW_H, bottom = top + ROW_H + ROW_H; // + the sticky header
      if (top < el.scrollTop) el.scrollTop = top;
      else if (bottom > el.scrollTop + el.clientHeight) el.scrollTop = bottom - el.clientHeight;
      setScrollTop(el.scrollTop);
    }
    wantFocus.current = true;
    pendingRow.current = j;
    setFocusRow(j);
  };
  useEffect(() => {
    if (!wantFocus.current || focusRow < 0) return;
    wantFocus.current = false;
    scroller.current?.querySelector<HTMLElement>(`tr[data-index="${focusRow}"]`)?.focus();
    pendingRow.current = -1;
  });
  // "Skip to the runs" (the page's first tab stop) lands here.
  useEffect(() => {
    const onSkip = () => moveTo(0);
    window.addEventListener('cohort:focus-runs', onSkip);
    return () => window.removeEventListener('cohort:focus-runs', onSkip);
  });
  const onKey = (e: KeyboardEvent, sent: number, sentRow: GroupedRow) => {
    const pending = pendingRow.current >= 0 && pendingRow.current < rows.length;
    const i = pending ? pendingRow.current : sent;
    const row = pending ? rows[i] : sentRow;
    const page = Math.max(1, Math.floor(height / ROW_H) - 1);
    if (e.key === 'ArrowDown') moveTo(i + 1);
    else if (e.key === 'ArrowUp') moveTo(i - 1);
    else if (e.key === 'PageDown') moveTo(i + page);
    else if (e.key === 'PageUp') moveTo(i - page);
    else if (e.key === 'Home') moveTo(0);
    else if (e.key === 'End') moveTo(rows.length - 1);
    else if (e.key === 'Enter' && row.kind === 'run') navigate(linkTo(state, { run: row.run.id, group: '' }));
    else if (e.key === 'Enter' || (e.key === ' ' && row.kind === 'group')) {
      if (row.kind === 'group') { const n = new Set(collapsed); if (n.has(row.value)) n.delete(row.value); else n.add(row.value); setCollapsed(n); }
    } else if (e.key === ' ' && row.kind === 'run') toggleEye(row.run.id);
    else if (e.key === 'x' && row.kind === 'run' && onSelect) onSelect(row.run.id, !selected?.has(row.run.id));
    else return;
    e.preventDefault();
  };
  const tabRow = focusRow >= 0 && focusRow < rows.length ? focusRow : 0;

  return (
    <div class="table-scroll" ref={scroller} style={{ maxHeight: maxH ? `${maxH}px` : undefined }}
      onScroll={(e) => setScrollTop((e.target as HTMLDivElement).scrollTop)}>
      <table class="table runs" data-testid="runs-table" aria-rowcount={rows.length} aria-label="runs">
        <thead>
          <tr>
            {onSelect && <th class="pick"><span class="sr-only">selected for comparison</span></th>}
            <th class="sel"><span class="sr-only">in charts</span></th>
            {cols.map((c) => (
              <th key={c.id} class={c.num ? 'num' : ''} aria-sort={ariaSort(c.sort) as any} title={c.id.startsWith('c:config.') ? `config ${c.label}` : undefined}>
                {c.sort ? <button type="button" class="th-sort" onClick={() => sortBy(c.sort!)}>{c.label}{state.sort === c.sort ? ' ▲' : state.sort === '-' + c.sort ? ' ▼' : ''}</button> : c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {first > 0 && <tr class="spacer" style={{ height: first * ROW_H + 'px' }} />}
          {rows.slice(first, last).map((row, k) => {
            const i = first + k;
            return row.kind === 'group' ? (
              <tr key={'g:' + row.value} class="group-header" data-index={i} tabIndex={i === tabRow ? 0 : -1} onKeyDown={(e) => onKey(e as KeyboardEvent, i, row)}
                onFocus={() => setFocusRow(i)}>
                <td colSpan={cols.length + (onSelect ? 2 : 1)}>
                  <button type="button" class="twisty" aria-expanded={!collapsed.has(row.value)} tabIndex={-1}
                    onClick={() => { const n = new Set(collapsed); if (n.has(row.value)) n.delete(row.value); else n.add(row.value); setCollapsed(n); }}>
                    {collapsed.has(row.value) ? '▸' : '▾'} {row.value || '(none)'}
                  </button>
                  <span class="count">{row.count}</span> <StateDots states={row.states} />
                  {state.groupBy === 'group' && row.value && <> · <Link href={linkTo(state, { group: row.value, run: '' })} tabIndex={-1}>group page</Link></>}
                </td>
              </tr>
            ) : (
              <tr key={row.run.id} data-run={row.run.id} data-name={row.run.name} data-index={i} class={hidden.has(row.run.id) ? 'hidden-run' : ''}
                tabIndex={i === tabRow ? 0 : -1} aria-label={row.run.name || row.run.id}
                onKeyDown={(e) => onKey(e as KeyboardEvent, i, row)} onFocus={() => setFocusRow(i)}>
                {onSelect && (
                  <td class="pick">
                    <input type="checkbox" tabIndex={-1} checked={!!selected?.has(row.run.id)} aria-label={`select ${row.run.name || row.run.id} to compare`}
                      onChange={(e) => onSelect(row.run.id, (e.target as HTMLInputElement).checked)} />
                  </td>
                )}
                <td class="sel">
                  <Eye name={row.run.name || row.run.id} on={!hidden.has(row.run.id)} style={styleOf(row.run.id)} onClick={() => toggleEye(row.run.id)} />
                </td>
                {cols.map((c) => <td key={c.id} class={c.num ? 'num' : ''}>{c.cell(row.run, state)}</td>)}
              </tr>
            );
          })}
          {last < rows.length && <tr class="spacer" style={{ height: (rows.length - last) * ROW_H + 'px' }} />}
        </tbody>
      </table>
    </div>
  );
}

/** The eye of a row: shown in the charts (with its line's colour and dash) or hidden. */
function Eye({ name, on, style, onClick }: { name: string; on: boolean; style?: LineStyle; onClick: () => void }) {
  return (
    <button type="button" class={`eye${on ? ' on' : ''}`} tabIndex={-1} aria-pressed={on}
      aria-label={`${on ? 'hide' : 'show'} ${name} in charts`} title={on ? 'shown in the charts: click to hide' : 'hidden from the charts: click to show'}
      onClick={onClick}>
      {on ? (style ? <span class="eye-line" style={{ borderTop: `3px ${!style.dash?.length ? 'solid' : style.dash[0] <= 2 ? 'dotted' : 'dashed'} ${style.color}` }} />
        : <span class="eye-open">◉</span>) : <span class="eye-closed">○</span>}
    </button>
  );
}

export function StateDots({ states }: { states: Record<string, number> }) {
  return (
    <span class="state-dots">
      {Object.entries(states).map(([s, n]) => <span key={s} class={`dotn state-${s}`} title={`${n} ${s}`}>{n}</span>)}
    </span>
  );
}
