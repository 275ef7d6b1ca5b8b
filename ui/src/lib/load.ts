// One panel load that the next one (or the panel's end) aborts: what ChartPanel and the
// histogram panels run from their effects.
import { ApiError } from './api';

/** How long to wait before the one automatic retry of a load the server refused for load (429,
 * 503): its Retry-After (at most 10 s), else 1 s; null for any other failure (not retried). */
export function retryDelayMs(e: unknown): number | null {
  if (!(e instanceof ApiError) || (e.status !== 429 && e.status !== 503)) return null;
  return Math.min(10_000, e.retryAfterMs ?? 1000);
}

/** Starts `load` with a fresh AbortSignal: `setLoading(true)`, then, unless aborted meanwhile,
 * `done(value)`, no error and not loading, or the failure (the ApiError itself, with its status
 * and code, for ErrorBox) and not loading. A 429 or 503 is first tried once more after
 * retryDelayMs (still loading meanwhile). Returns the abort (an effect's cleanup). */
export function startLoad<T>(
  load: (signal: AbortSignal) => Promise<T>,
  done: (value: T) => void,
  setError: (error: unknown) => void,
  setLoading: (loading: boolean) => void,
): () => void {
  const ctl = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  setLoading(true);
  const attempt = (retried: boolean) => load(ctl.signal).then((value) => {
    if (ctl.signal.aborted) return;
    done(value);
    setError(null);
    setLoading(false);
  }, (e) => {
    if (ctl.signal.aborted || (e as Error).name === 'AbortError') return;
    const wait = retried ? null : retryDelayMs(e);
    if (wait !== null) {
      timer = setTimeout(() => attempt(true), wait);
      return;
    }
    setError(e);
    setLoading(false);
  });
  attempt(false);
  return () => { ctl.abort(); if (timer !== undefined) clearTimeout(timer); };
}
