// Logs tab: the console lines of every writer, filtered by label (chips, or `label:rank_0` in the
// search bar), stream and text; stderr highlighted. Virtual scrolling over any number of lines:
// the server's console index gives the cursor of every 1,000th line, so the view fetches only
// the pages on screen, and a scroll bar scaled past the browser's height limit spans 1M lines.
// A filtered view keeps every line's number in the whole log (found from the whole log's index
// and the page that holds the line), and a click on a line shows it whole, with a way back to
// it in context. Long lines scroll sideways instead of being cut.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type ConsoleLine, type RunDetail } from '../lib/api';
import { colorFor, fmtTime, naturalCompare } from '../lib/format';
import { update } from '../lib/nav';
import { Link } from '../components/common';
import { linkTo } from '../lib/url';
import type { AppState } from '../lib/url';
import { ErrorBox, useDebounced } from '../components/common';

const STRIDE = 1000;
const ROW = 18;
const MAX_SCROLL_PX = 8_000_000; // under every browser's element height limit

interface Page { after: number; start: number }
interface Index { total: number; pages: Page[]; lastId: number; /** the filter it counts */ key?: string }

/** The index with the lines an index request `after` a line id answered (`ix`): new lines start
 * new pages after the old last one, which keeps its exact length. Unchanged when the index has
 * moved past `after` since (another answer counted those lines already). */
export function extendIndex(cur: Index, after: number, ix: { total: number; stride: number; cursors: number[]; last_id: number }): Index {
  if (cur.lastId !== after || !ix.total) return cur;
  const pages = cur.pages.concat(ix.cursors.map((a, i) => ({ after: a, start: cur.total + i * ix.stride })));
  return { total: cur.total + ix.total, lastId: ix.last_id, pages, key: cur.key };
}

/** `label:x` tokens of the search bar, and the text that remains. */
export function parseLogQuery(q: string): { labels: string[]; text: string } {
  const labels: string[] = [];
  const text = q.replace(/(^|\s)label:(\S+)/g, (_m, sp, l) => { labels.push(...String(l).split(',').filter(Boolean)); return sp; }).trim();
  return { labels, text };
}

/** Index of the page holding line i (pages sorted by start). */
export function pageOfLine(pages: Page[], i: number): number {
  let lo = 0, hi = pages.length - 1, ans = 0;
  while (lo <= hi) {
    const m = (lo + hi) >> 1;
    if (pages[m].start <= i) { ans = m; lo = m + 1; } else hi = m - 1;
  }
  return ans;
}

/** The number (0-based) in the whole log of the line `id`, given the whole log's pages and the
 * ids of the page that holds it; null when that page is not loaded or lacks the line. */
export function lineNumberOf(pages: Page[], pageIds: Map<number, number[]>, id: number): number | null {
  const p = pageHolding(pages, id);
  const ids = pageIds.get(p);
  if (!ids) return null;
  const i = lowerBoundIds(ids, id);
  return i < ids.length && ids[i] === id ? pages[p].start + i : null;
}

/** The page (of the whole log) that holds line `id`: the last one whose cursor is below it. */
export function pageHolding(pages: Page[], id: number): number {
  let lo = 0, hi = pages.length - 1, ans = 0;
  while (lo <= hi) {
    const m = (lo + hi) >> 1;
    if (pages[m].after < id) { ans = m; lo = m + 1; } else hi = m - 1;
  }
  return ans;
}

function lowerBoundIds(a: number[], v: number): number {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (a[m] < v) lo = m + 1; else hi = m;
  }
  return lo;
}

/** First visible line for a scroll position, exact below the height limit, scaled above it. */
export function firstLineAt(scrollTop: number, total: number, viewRows: number): number {
  const full = total * ROW;
  if (full <= MAX_SCROLL_PX) return Math.floor(scrollTop / ROW);
  const maxTop = MAX_SCROLL_PX - viewRows * ROW;
  const frac = Math.min(1, Math.max(0, scrollTop / Math.max(1, maxTop)));
  return Math.round(frac * Math.max(0, total - viewRows));
}

export function LogsTab({ r, state, tick }: { r: RunDetail; state: AppState; tick: number }) {
  const writerLabels = useMemo(() => (r.writers ?? []).map((w) => w.label).sort(naturalCompare), [r.writers]);
  const [text, setText] = useState(state.lq);
  const debounced = useDebounced(text, 250);
  // A link that changes the search (back to the whole log, "Show in context") updates the box.
  useEffect(() => { if (state.lq !== text && state.lq !== debounced) setText(state.lq); }, [state.lq]);
  useEffect(() => { if (debounced !== state.lq) update({ lq: debounced }, true); }, [debounced]);
  const parsed = parseLogQuery(state.lq);
  const labels = [...new Set([...state.labels, ...parsed.labels])];
  const filterKey = JSON.stringify([labels, state.stream, parsed.text]);

  const [index, setIndex] = useState<Index | null>(null);
  const [error, setError] = useState<unknown>(null);
  const cache = useRef(new Map<number, ConsoleLine[]>());
  const pending = useRef(new Set<number>());
  const [version, setVersion] = useState(0);
  const [follow, setFollow] = useState(false);
  const [counting, setCounting] = useState(true);
  const filterGen = useRef(0);
  const filtered = labels.length > 0 || !!state.stream || !!parsed.text;
  const [selected, setSelected] = useState<{ line: ConsoleLine; n: number | null } | null>(null);

  // The whole log's index and the ids of its pages that hold lines on screen: line numbers of a
  // filtered view, and the place of a line shown in context (`at`).
  const [whole, setWhole] = useState<Index | null>(null);
  const wholeIds = useRef(new Map<number, number[]>());
  const wholePending = useRef(new Set<number>());
  const [wholeVersion, setWholeVersion] = useState(0);
  const needWhole = filtered || state.at > 0;
  // (After the filtered index: the lines and their count come first, their numbers next.)
  // (and the index of this very filter: in the render that changes it, `counting` is still false)
  const wholeReady = needWhole && !counting && index?.key === filterKey;
  useEffect(() => {
    if (!wholeReady) return;
    const ctl = new AbortController();
    api.consoleIndex(r.entity, r.project, r.id, { stride: STRIDE }, ctl.signal).then((ix) => {
      wholeIds.current = new Map();
      wholePending.current = new Set();
      setWhole({ total: ix.total, lastId: ix.last_id, pages: ix.cursors.map((after, i) => ({ after, start: i * ix.stride })) });
    }, () => { /* numbers stay unknown ("…") */ });
    return () => ctl.abort();
  }, [r.id, wholeReady, tick && needWhole ? Math.floor(tick / 4) : 0]);
  const loadWholePage = (p: number) => {
    const w = whole;
    if (!w || wholeIds.current.has(p) || wholePending.current.has(p)) return;
    wholePending.current.add(p);
    const end = p + 1 < w.pages.length ? w.pages[p + 1].start : w.total;
    api.console(r.entity, r.project, r.id, { after: w.pages[p].after, limit: Math.max(1, end - w.pages[p].start) }).then((res) => {
      wholePending.current.delete(p);
      wholeIds.current.set(p, res.lines.map((l) => l.id));
      setWholeVersion((v) => v + 1);
    }, () => { wholePending.current.delete(p); });
  };

  // A new filter: a new index, an empty cache.
  useEffect(() => {
    const gen = ++filterGen.current;
    const ctl = new AbortController();
    cache.current = new Map();
    pending.current = new Set();
    setIndex(null);
    setCounting(true);
    const f = { labels, stream: state.stream, q: parsed.text };
    // The first page right away (a long log's index takes a moment), the index alongside.
    let indexed = false;
    api.console(r.entity, r.project, r.id, { ...f, limit: STRIDE }, ctl.signal).then((res) => {
      if (gen !== filterGen.current || indexed) return;
      cache.current.set(0, res.lines);
      setIndex({ total: res.lines.length, lastId: 0, pages: [{ after: 0, start: 0 }], key: filterKey });
    }, () => { /* the index reports errors */ });
    api.consoleIndex(r.entity, r.project, r.id, { ...f, stride: STRIDE }, ctl.signal)
      .then((ix) => {
        if (gen !== filterGen.current) return;
        indexed = true;
        setIndex({ total: ix.total, lastId: ix.last_id, pages: ix.cursors.map((after, i) => ({ after, start: i * ix.stride })), key: filterKey });
        setCounting(false);
        setError(null);
      }, (e) => { if ((e as Error).name !== 'AbortError') setError(e); });
    return () => ctl.abort();
  }, [r.id, filterKey]);

  // Live: extend the index with the lines that arrived since; one request at a time (a slow
  // answer is not asked for again by the next tick), and an answer counts only onto the index it
  // was asked after.
  const tailing = useRef(false);
  useEffect(() => {
    if (!tick || !index || counting || tailing.current) return;
    const gen = filterGen.current;
    const after = index.lastId;
    tailing.current = true;
    api.consoleIndex(r.entity, r.project, r.id, { labels, stream: state.stream, q: parsed.text, stride: STRIDE, after })
      .then((ix) => {
        if (gen !== filterGen.current || !ix.total) return;
        setIndex((cur) => (cur ? extendIndex(cur, after, ix) : cur));
      }, () => { /* the next tick retries */ })
      .finally(() => { tailing.current = false; });
  }, [tick]);

  const box = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewH, setViewH] = useState(480);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    setViewH(el.clientHeight);
    const ro = new ResizeObserver(() => setViewH(el.clientHeight));
    ro.observe(el);
    return () => ro.disconnect();
  }, [index !== null]);

  const total = index?.total ?? 0;
  const viewRows = Math.ceil(viewH / ROW) + 1;
  const spacer = Math.min(total * ROW, MAX_SCROLL_PX);
  const first = Math.min(firstLineAt(scrollTop, total, viewRows), Math.max(0, total - viewRows + 1));
  const last = Math.min(total, first + viewRows);

  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [follow, total]);

  // `at`: the line shown in context, centred once its number is known.
  const placed = useRef(0);
  useEffect(() => {
    // (The index of this filter: in the render that changes the filter, the old one is still here.)
    if (!state.at || filtered || !whole || placed.current === state.at || !box.current || !index || index.key !== filterKey || counting) return;
    const n = lineNumberOf(whole.pages, wholeIds.current, state.at);
    if (n === null) { loadWholePage(pageHolding(whole.pages, state.at)); return; }
    const el = box.current;
    // Centred on the view's height now: one measured while the view was not laid out yet (0 px)
    // would put the line at the top, with nothing before it. Not laid out: the next render places.
    if (el.clientHeight < ROW) return;
    placed.current = state.at;
    const rows = Math.ceil(el.clientHeight / ROW) + 1;
    const target = Math.max(0, n - Math.floor(rows / 2));
    el.scrollTop = total * ROW <= MAX_SCROLL_PX ? target * ROW
      : (target / Math.max(1, total - rows)) * (MAX_SCROLL_PX - rows * ROW);
    setScrollTop(el.scrollTop);
  }, [state.at, filtered, whole, wholeVersion, index, counting, filterKey, viewH]);

  // Fetch the pages on screen (and the next one).
  useEffect(() => {
    if (!index || !total) return;
    const gen = filterGen.current;
    const p0 = pageOfLine(index.pages, first);
    const p1 = pageOfLine(index.pages, Math.max(first, last - 1));
    for (let p = p0; p <= Math.min(p1 + 1, index.pages.length - 1); p++) {
      if (cache.current.has(p) || pending.current.has(p)) continue;
      pending.current.add(p);
      const page = index.pages[p];
      const end = p + 1 < index.pages.length ? index.pages[p + 1].start : index.total;
      api.console(r.entity, r.project, r.id, { labels, stream: state.stream, q: parsed.text, after: page.after, limit: Math.min(10000, Math.max(1, end - page.start)) })
        .then((res) => {
          pending.current.delete(p);
          if (gen !== filterGen.current) return;
          cache.current.set(p, res.lines);
          if (cache.current.size > 200) cache.current.delete(cache.current.keys().next().value as number);
          setVersion((v) => v + 1);
        }, (e) => { pending.current.delete(p); setError(e); });
    }
  }, [index, first, last]);

  const lineAt = (i: number): ConsoleLine | undefined => {
    if (!index) return undefined;
    const p = pageOfLine(index.pages, i);
    return cache.current.get(p)?.[i - index.pages[p].start];
  };

  const toggleLabel = (l: string) => {
    const cur = state.labels;
    update({ labels: cur.includes(l) ? cur.filter((x) => x !== l) : [...cur, l] });
  };

  // The number of a line in the whole log: its position when unfiltered, else looked up.
  const numberOf = (i: number, line: ConsoleLine): number | null => {
    if (!filtered) return i;
    if (!whole) return null;
    const n = lineNumberOf(whole.pages, wholeIds.current, line.id);
    if (n === null) loadWholePage(pageHolding(whole.pages, line.id));
    return n;
  };
  void wholeVersion;
  const rows = [];
  for (let i = first; i < last; i++) {
    const line = lineAt(i);
    if (!line) {
      rows.push(<div key={i} class="log-line placeholder" role="row"><span class="log-n">{filtered ? '' : i + 1}</span><span class="log-text muted">…</span></div>);
      continue;
    }
    const n = numberOf(i, line);
    const isSel = selected?.line.id === line.id || state.at === line.id;
    rows.push(
      <div key={i} class={`log-line ${line.stream}${isSel ? ' sel' : ''}`} data-label={line.label} data-stream={line.stream} data-id={line.id}
        data-n={n === null ? '' : n + 1} role="row" aria-selected={isSel}
        onClick={() => setSelected(selected?.line.id === line.id ? null : { line, n })}>
        <span class="log-n" title={filtered ? 'line number in the whole log' : undefined}>{n === null ? '…' : n + 1}</span>
        <span class="log-t" title={fmtTime(line.time)}>{fmtTime(line.time).slice(11)}</span>
        <span class="log-label" style={{ color: colorFor(line.label) }}>{line.label}</span>
        <span class="log-text">{highlight(line.text, parsed.text)}</span>
      </div>,
    );
  }
  void version;
  const windowTop = total * ROW <= MAX_SCROLL_PX ? first * ROW : scrollTop;

  return (
    <div class="logs">
      <div class="logs-bar" role="search">
        <input type="search" class="search" aria-label="search logs" placeholder="Search text, or label:rank_0"
          value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        <fieldset class="labels-filter" aria-label="labels">
          <legend>Labels</legend>
          {writerLabels.map((l) => (
            <label key={l} class="chip">
              <input type="checkbox" data-label={l} checked={state.labels.includes(l)} onChange={() => toggleLabel(l)} /> {l}
            </label>
          ))}
          {state.labels.length > 0 && <button type="button" class="link" onClick={() => update({ labels: [] })}>all</button>}
        </fieldset>
        <select aria-label="stream" value={state.stream} onChange={(e) => update({ stream: (e.target as HTMLSelectElement).value as AppState['stream'] })}>
          <option value="">stdout + stderr</option>
          <option value="stdout">stdout</option>
          <option value="stderr">stderr</option>
        </select>
        <label><input type="checkbox" checked={follow} onChange={(e) => setFollow((e.target as HTMLInputElement).checked)} /> follow</label>
        <span class="muted" data-testid="log-count">{!index ? 'counting…' : counting ? `${total.toLocaleString()}+ lines, counting…` : `${total.toLocaleString()} lines`}</span>
      </div>
      {error ? <ErrorBox error={error} /> : null}
      {index && !total ? <div class="empty">No console lines{labels.length || parsed.text || state.stream ? ' match this filter' : ' yet'}.</div> : null}
      {index && total > 0 && (
        <div class="log-view" ref={box} tabIndex={0} role="table" aria-label="console lines" aria-rowcount={total}
          onScroll={(e) => {
            const el = e.target as HTMLDivElement;
            setScrollTop(el.scrollTop);
            if (follow && el.scrollTop + el.clientHeight < el.scrollHeight - ROW * 2) setFollow(false);
          }}>
          <div class="log-spacer" style={{ height: spacer + 'px' }} />
          <div class="log-window" style={{ transform: `translateY(${windowTop}px)` }}>{rows}</div>
        </div>
      )}
      {selected && (
        <section class="log-detail" data-testid="log-detail" aria-label="the selected line">
          <header>
            <strong>Line {selected.n === null ? '…' : (selected.n + 1).toLocaleString()}</strong>
            <span class="muted"> · {selected.line.label} · {selected.line.stream} · {fmtTime(selected.line.time)}</span>
            <span class="spacer" />
            {filtered && <Link href={linkTo(state, { lq: '', labels: [], stream: '', at: selected.line.id })} data-testid="in-context">Show in context</Link>}
            <button type="button" class="small" onClick={() => navigator.clipboard?.writeText(selected.line.text)}>Copy</button>
            <button type="button" class="small" aria-label="close" onClick={() => setSelected(null)}>✕</button>
          </header>
          <pre class="log-full">{selected.line.text}</pre>
        </section>
      )}
    </div>
  );
}

function highlight(text: string, q: string) {
  if (!q) return text;
  const parts = text.split(q);
  if (parts.length === 1) return text;
  const out: (string | preact.JSX.Element)[] = [];
  parts.forEach((p, i) => {
    if (i) out.push(<mark key={i}>{q}</mark>);
    out.push(p);
  });
  return out;
}
