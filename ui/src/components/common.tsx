import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../lib/api';
import { onLinkClick } from '../lib/nav';

export function Link(p: { href: string; class?: string; children: ComponentChildren; title?: string; 'data-testid'?: string; tabIndex?: number }) {
  return <a href={p.href} class={p.class} title={p.title} data-testid={p['data-testid']} tabIndex={p.tabIndex} onClick={onLinkClick}>{p.children}</a>;
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`state state-${state}`} data-state={state}>{state}</span>;
}

export function ErrorBox({ error, retry }: { error: unknown; retry?: () => void }) {
  const msg = error instanceof ApiError ? error.message : error instanceof Error ? error.message : String(error);
  const status = error instanceof ApiError && error.status ? ` (${error.status} ${error.code})` : '';
  return (
    <div class="error" role="alert">
      <strong>Error{status}:</strong> {msg}
      {retry && <button type="button" class="small" onClick={retry}>Retry</button>}
    </div>
  );
}

export function Loading({ what }: { what?: string }) {
  return <div class="loading" role="status">Loading{what ? ` ${what}` : ''}…</div>;
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}

/**
 * Runs an async loader and keeps its result. `deps` say what is loaded: when one of them changes,
 * the previous inputs' data and error are dropped at once (a page never shows one key's data, or
 * stays silent about an error, under another key's name). `refresh` (a live tick, a width) runs
 * the loader again keeping what is shown until the new answer; so do reload() and `every` ms.
 */
export function useLoad<T>(fn: (signal: AbortSignal) => Promise<T>, deps: unknown[], every = 0, refresh: unknown[] = []) {
  // Which inputs the data belongs to: a number that changes with `deps` (during the render that
  // sees them, so that no render shows the old data with the new inputs).
  const inputs = useRef<{ deps: unknown[]; id: number }>({ deps, id: 0 });
  if (!sameDeps(inputs.current.deps, deps)) inputs.current = { deps, id: inputs.current.id + 1 };
  const id = inputs.current.id;
  const [st, setSt] = useState<{ id: number; data: T | null; error: unknown }>({ id, data: null, error: null });
  const [n, setN] = useState(0);
  const gen = useRef(0);
  useEffect(() => {
    const ctl = new AbortController();
    const my = ++gen.current;
    fn(ctl.signal).then((d) => { if (my === gen.current) setSt({ id, data: d, error: null }); },
      (e) => {
        if (my === gen.current && (e as Error).name !== 'AbortError') setSt((s) => ({ id, data: s.id === id ? s.data : null, error: e }));
      });
    return () => ctl.abort();
  }, [id, ...refresh, n]);
  useEffect(() => {
    if (!every) return;
    const t = setInterval(() => { if (!document.hidden) setN((x) => x + 1); }, every);
    return () => clearInterval(t);
  }, [every, id]);
  const mine = st.id === id;
  return {
    data: mine ? st.data : null,
    error: mine ? st.error : null,
    reload: () => setN((x) => x + 1),
    setData: (d: T | null) => setSt({ id, data: d, error: null }),
  };
}

function sameDeps(a: unknown[], b: unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
}

/** A number that increases every `ms` while `on` and the page is visible (live refresh). */
export function useTick(on: boolean, ms: number): number {
  const [t, setT] = useState(0);
  useEffect(() => {
    if (!on) return;
    const id = setInterval(() => { if (!document.hidden) setT((x) => x + 1); }, ms);
    return () => clearInterval(id);
  }, [on, ms]);
  return t;
}

export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}
