// One panel load that the next one (or the panel's end) aborts: what ChartPanel and the
// histogram panels run from their effects.
import { ApiError } from './api';

/** Starts `load` with a fresh AbortSignal: `setLoading(true)`, then, unless aborted meanwhile,
 * `done(value)`, no error and not loading, or the failure's message (an ApiError's own) and not
 * loading. Returns the abort (an effect's cleanup). */
export function startLoad<T>(
  load: (signal: AbortSignal) => Promise<T>,
  done: (value: T) => void,
  setError: (message: string | null) => void,
  setLoading: (loading: boolean) => void,
): () => void {
  const ctl = new AbortController();
  setLoading(true);
  load(ctl.signal).then((value) => {
    if (ctl.signal.aborted) return;
    done(value);
    setError(null);
    setLoading(false);
  }, (e) => {
    if (ctl.signal.aborted || (e as Error).name === 'AbortError') return;
    setError(e instanceof ApiError ? e.message : String(e));
    setLoading(false);
  });
  return () => ctl.abort();
}
