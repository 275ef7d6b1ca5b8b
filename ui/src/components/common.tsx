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

/** Runs an async loader and keeps its result; reload() runs it again; `every` ms polls. */
export function useLoad<T>(fn: (signal: AbortSignal) => Promise<T>, deps: unknown[], every = 0) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [n, setN] = useState(0);
  const gen = useRef(0);
  useEffect(() => {
    const ctl = new AbortController();
    const my = ++gen.current;
    fn(ctl.signal).then((d) => { if (my === gen.current) { setData(d); setError(null); } },
      (e) => { if (my === gen.current && (e as Error).name !== 'AbortError') setError(e); });
    return () => ctl.abort();
  }, [...deps, n]);
  useEffect(() => {
    if (!every) return;
    const t = setInterval(() => { if (!document.hidden) setN((x) => x + 1); }, every);
    return () => clearInterval(t);
  }, [every, ...deps]);
  return { data, error, reload: () => setN((x) => x + 1), setData };
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
