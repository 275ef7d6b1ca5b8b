// The workspace's comparison panels over the runs of the filter (or only its visible ones, the
// eye on): parallel coordinates (ParallelCoords) and a scatter (Scatter), each opened from here
// with defaults picked from the runs' fields; their state is in the URL (lib/compare.ts).
import { useMemo } from 'preact/hooks';
import { defaultAxes, defaultColor, fieldsOf } from '../lib/compare';
import type { Run } from '../lib/filters';
import { update } from '../lib/nav';
import type { AppState } from '../lib/url';
import { ParallelCoords } from './ParallelCoords';
import { Scatter } from './Scatter';
import './compare.css';

export function ComparePanels({ state, filtered, hidden }: { state: AppState; filtered: Run[]; hidden: Set<string> }) {
  const fields = useMemo(() => fieldsOf(filtered), [filtered]);
  const visible = useMemo(() => (hidden.size ? filtered.filter((r) => !hidden.has(r.id)) : filtered), [filtered, hidden]);
  const { pc, sc } = state.panels;
  const openPc = () => {
    const color = defaultColor(fields);
    update({ panels: { ...state.panels, pc: { axes: defaultAxes(filtered, fields, color), color, brushes: {}, scope: '' } } });
  };
  const openSc = () => {
    const color = defaultColor(fields);
    const xs = defaultAxes(filtered, fields, '', 1);
    update({ panels: { ...state.panels, sc: { x: xs[0] ?? '', y: color, color: '', scope: '' } } });
  };
  return (
    <section class="compare" aria-label="compare runs">
      <div class="section-head">
        <h2>Compare</h2>
        {!pc && <button type="button" class="small" onClick={openPc}>+ Parallel coordinates</button>}
        {!sc && <button type="button" class="small" onClick={openSc}>+ Scatter</button>}
        {!pc && !sc && <span class="muted small">config and summary fields of the runs of the filter</span>}
      </div>
      {pc && <ParallelCoords state={state} runs={pc.scope === 'visible' ? visible : filtered} fields={fields} />}
      {sc && <Scatter state={state} runs={sc.scope === 'visible' ? visible : filtered} fields={fields} brushes={pc?.brushes ?? {}} />}
    </section>
  );
}
