// All runs of a project, loaded once in pages of 1,000 and then kept fresh by asking only for
// what changed (sort=-updated until runs older than the last refresh), so that a workspace of
// 10,000 runs filters and sorts in the browser without a round trip.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api';
import type { Run } from './filters';

export interface RunsState {
  runs: Run[];
  total: number;
  loaded: boolean;
  error: unknown;
  version: number;
}

const PAGE = 1000;

export function useProjectRuns(entity: string, project: string, refreshMs = 4000): RunsState & { reload: () => void } {
  const [st, setSt] = useState<RunsState>({ runs: [], total: 0, loaded: false, error: null, version: 0 });
  const byId = useRef(new Map<string, Run>());
  const lastUpdated = useRef(0);
  const [full, setFull] = useState(0);

  useEffect(() => {
    let stop = false;
    const ctl = new AbortController();
    const publish = (loaded: boolean, total: number) => {
      const runs = [...byId.current.values()];
      setSt((s) => ({ runs, total, loaded, error: null, version: s.version + 1 }));
    };
    const loadAll = async () => {
      const fresh = new Map<string, Run>();
      let cursor: string | undefined;
      let total = 0;
      let maxUpdated = 0;
      do {
        const page = await api.runsPage(entity, project, { sort: '-created', limit: PAGE, cursor }, ctl.signal);
        for (const r of page.runs) { fresh.set(r.id, r); maxUpdated = Math.max(maxUpdated, r.updated_ms); }
        total = page.total;
        cursor = page.next_cursor ?? undefined;
        if (stop) return;
        if (cursor && fresh.size >= PAGE && byId.current.size === 0) {
          // Show the first pages while the rest load.
          byId.current = new Map(fresh);
          publish(false, total);
        }
      } while (cursor);
      byId.current = fresh;
      lastUpdated.current = maxUpdated;
      publish(true, total);
    };
    const refresh = async () => {
      // Newest changes first; stop at the first page that reaches runs older than the last look.
      let cursor: string | undefined;
      let changed = false;
      let total = st.total;
      const since = lastUpdated.current;
      for (let i = 0; i < 20; i++) {
        const page = await api.runsPage(entity, project, { sort: '-updated', limit: 200, cursor }, ctl.signal);
        total = page.total;
        let older = false;
        for (const r of page.runs) {
          if (r.updated_ms < since - 1000) { older = true; break; }
          const prev = byId.current.get(r.id);
          if (!prev || prev.updated_ms !== r.updated_ms || prev.state !== r.state || prev.writer_count !== r.writer_count) {
            byId.current.set(r.id, r);
            changed = true;
          }
          lastUpdated.current = Math.max(lastUpdated.current, r.updated_ms);
        }
        if (older || !page.next_cursor) break;
        cursor = page.next_cursor;
      }
      if (stop) return;
      // Deleted runs: the total tells; reload everything then.
      if (total !== byId.current.size) { await loadAll(); return; }
      if (changed) publish(true, total);
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const loop = async () => {
      try {
        if (!lastUpdated.current && !byId.current.size) await loadAll(); else await refresh();
        // A look that went through ends an earlier failure's banner (publish clears it too, but
        // only when runs changed: after a brief outage they mostly did not).
        if (!stop) setSt((s) => (s.error ? { ...s, error: null } : s));
      } catch (e) {
        if ((e as Error).name === 'AbortError' || stop) return;
        setSt((s) => ({ ...s, error: e, loaded: true }));
      }
      if (!stop && refreshMs > 0) timer = setTimeout(loop, document.hidden ? refreshMs * 3 : refreshMs);
    };
    byId.current = new Map();
    lastUpdated.current = 0;
    loop();
    return () => { stop = true; ctl.abort(); if (timer) clearTimeout(timer); };
  }, [entity, project, full]);

  return { ...st, reload: () => setFull((x) => x + 1) };
}
