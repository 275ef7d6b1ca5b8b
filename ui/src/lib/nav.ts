// Navigation: the URL is the app's state. pushState/replaceState plus a change event.
import { useEffect, useState } from 'preact/hooks';
import { decodeState, encodeState, pruneCharts, structuredCloneState, TABS, type AppState, type ChartState, type Tab } from './url';

const EVENT = 'cohort:navigate';

export function currentState(): AppState {
  adoptVendorPath();
  return decodeState(location.search);
}

// W&B's page paths. Its clients pointed at this server (WANDB_BASE_URL) print "View run at
// URL/ENTITY/PROJECT/runs/ID" and "View project at URL/ENTITY/PROJECT", and users paste the
// vendor's other page URLs with the host changed; the server answers index.html for any such path
// (no dot in its last segment). Each is mapped to the same screen here and the address bar then
// holds this app's own form (`/?p=ENTITY/PROJECT&run=ID...`), so reload and Back work.

/** Cohort's ids (entity, project, run): 1-64 letters, digits, `_`, `-`, `.`. */
const ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** The vendor's run page tabs → this app's (the files are listed on the overview). */
const VENDOR_RUN_TABS: Record<string, Tab> = {
  overview: 'overview', workspace: 'charts', charts: 'charts', system: 'system', logs: 'logs',
  files: 'overview', artifacts: 'artifacts', model: 'overview', code: 'overview',
};

/** Project subpages of the vendor whose screen here is the project's workspace (runs table,
 * charts, the project's artifacts). */
const VENDOR_PROJECT_PAGES = new Set(['workspace', 'table', 'overview', 'runs', 'groups', 'artifacts']);

/**
 * The screen a W&B page path names, as the state fields that define a page here (entity,
 * project, run, group, artifact and version; the run's tab when the path names one); null when
 * `pathname` is not one of those paths (`/`, a path of one segment, an unknown subpage, a
 * name that is not a Cohort id, a malformed escape). Forms:
 * `/E/P`, `/E/P/workspace`, `/E/P/table` (workspace); `/E/P/runs/ID`, `/E/P/runs/ID/TAB`
 * (run; TAB overview, workspace, logs, files, artifacts, system, ... or any tab of this app);
 * `/E/P/groups/G` (group); `/E/P/artifacts/TYPE/NAME`, `/E/P/artifacts/TYPE/NAME/VERSION`
 * (artifact; `latest` is this app's default version). Trailing slashes are ignored.
 */
export function stateOfVendorPath(pathname: string): Partial<AppState> | null {
  let seg: string[];
  try {
    seg = pathname.split('/').filter((x) => x !== '').map(decodeURIComponent);
  } catch {
    return null;  // a malformed %-escape
  }
  if (seg.length < 2) return null;
  const [entity, project, sub, ...rest] = seg;
  if (!ID.test(entity) || !ID.test(project)) return null;
  const page: Partial<AppState> = { entity, project, run: '', group: '', art: '', ver: '', alerts: false, cmp: [] };
  if (sub === undefined) return page;
  if (!VENDOR_PROJECT_PAGES.has(sub)) return null;
  if (sub === 'runs' && rest.length) {
    const [run, tab] = rest;
    if (!ID.test(run)) return null;
    page.run = run;
    if (tab !== undefined) {
      page.tab = (TABS as string[]).includes(tab) ? tab as Tab : VENDOR_RUN_TABS[tab] ?? 'overview';
    }
    return page;
  }
  if (sub === 'groups' && rest.length) {
    page.group = rest[0];
    return page;
  }
  if (sub === 'artifacts' && rest.length >= 2) {
    // TYPE/NAME[/VERSION[/files|lineage|metadata|...]]: the type is implied by the name here.
    page.art = rest[1];
    const ver = rest[2] ?? '';
    page.ver = ver === 'latest' ? '' : ver;
    return page;
  }
  // The project's page, or its runs, groups or artifacts list (all on the workspace).
  return rest.length && sub !== 'artifacts' ? null : page;
}

/**
 * The address to show instead of `pathname + search + hash` when the path is one of W&B's
 * (stateOfVendorPath): this app's own form of the same state (query parameters already present
 * are kept where the path does not override them; a login `token` is kept for App to take);
 * null to leave the address as it is.
 */
export function canonicalHref(pathname: string, search: string, hash = ''): string | null {
  if (pathname === '/' || pathname === '') return null;
  const page = stateOfVendorPath(pathname);
  if (!page) return null;
  const next: AppState = { ...decodeState(search), ...page };
  let href = '/' + encodeState(next);
  const token = new URLSearchParams(search).get('token');
  if (token !== null) href += (href.includes('?') ? '&' : '?') + new URLSearchParams({ token }).toString();
  return href + hash;
}

/** Replaces a W&B page path in the address bar with this app's form of it (history.replaceState:
 * the entry itself changes, so reload and Back see the app's form); an unknown path is left. */
export function adoptVendorPath() {
  const href = canonicalHref(location.pathname, location.search, location.hash);
  if (href !== null) history.replaceState(history.state, '', href);
}

export function navigate(href: string, replace = false) {
  if (href === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', href); else history.pushState(null, '', href);
  window.dispatchEvent(new Event(EVENT));
}

/** Merges a patch into the current state. Typing in a search box replaces, clicks push. */
export function update(patch: Partial<AppState>, replace = false) {
  const next = { ...structuredCloneState(currentState()), ...patch };
  navigate('/' + encodeState(next), replace);
}

/** Merges `patch` into one chart's state (undefined fields are dropped; null clears the chart). */
export function updateChart(id: string, patch: Partial<ChartState> | null, replace = false) {
  const cur = currentState();
  const charts = { ...cur.charts };
  if (patch === null) delete charts[id];
  else charts[id] = { ...(charts[id] ?? {}), ...patch };
  update({ charts: pruneCharts(charts) }, replace);
}

export function useAppState(): AppState {
  const [s, setS] = useState(currentState);
  useEffect(() => {
    const on = () => setS(currentState());
    window.addEventListener('popstate', on);
    window.addEventListener(EVENT, on);
    return () => { window.removeEventListener('popstate', on); window.removeEventListener(EVENT, on); };
  }, []);
  return s;
}

/** Click handler for in-app links: plain clicks navigate in place, modified clicks open tabs. */
export function onLinkClick(e: MouseEvent) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.currentTarget as HTMLAnchorElement);
  e.preventDefault();
  navigate(a.getAttribute('href')!);
}
