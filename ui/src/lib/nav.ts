// Navigation: the URL is the app's state. pushState/replaceState plus a change event.
import { useEffect, useState } from 'preact/hooks';
import { decodeState, encodeState, pruneCharts, structuredCloneState, type AppState, type ChartState } from './url';

const EVENT = 'cohort:navigate';

export function currentState(): AppState {
  return decodeState(location.search);
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
