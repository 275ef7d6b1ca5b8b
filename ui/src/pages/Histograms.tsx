// The run page's Histograms tab: every histogram key (grouped by prefix: gradients/...,
// parameters/...), one panel per key showing one writer's histograms over the steps, as
// distribution bands or as a steps x bins heatmap (the page's choice, in the URL: `hv`, `hlog`),
// with a writer selector where several writers logged the key (`hw`). Each panel loads when
// scrolled near the viewport, asks the server for as many buckets as its plot has pixels (a
// 10,000-step series is merged server-side, never fetched whole), re-queries on a drag zoom and on
// every live tick.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type RunDetail, type SeriesInfo } from '../lib/api';
import { fmtNum, naturalCompare, prefixOf } from '../lib/format';
import { bucketsFor, distribution, groupHistKeys, type Distribution } from '../lib/histograms';
import { startLoad } from '../lib/load';
import { update } from '../lib/nav';
import type { AppState } from '../lib/url';
import { useVisibleWidth } from '../lib/useVisibleWidth';
import { Empty, ErrorBox, Loading } from '../components/common';
import { HistogramChart } from '../components/HistogramChart';

const AXIS_SPACE = 72; // y axis + padding: the plot's width in pixels is the panel's minus this

export function HistogramsTab({ r, state, keys, error, tick }: { r: RunDetail; state: AppState; keys: SeriesInfo[] | null; error: unknown; tick: number }) {
  const q = state.mq;
  const sections = useMemo(() => groupHistKeys(keys ?? [], naturalCompare, prefixOf), [keys]);
  if (error && !keys) return <ErrorBox error={error} />;
  if (!keys) return <Loading what="histograms" />;
  if (!sections.length) {
    return <Empty>This run has logged no histograms{r.state === 'running' ? ' yet (the page refreshes by itself)' : ''}: log them with <code>run.log({'{'}"grad/w": cohort.Histogram(t){'}'})</code> or <code>run.watch(model)</code>.</Empty>;
  }
  const shownCount = sections.reduce((a, [, items]) => a + items.filter((k) => k.key.includes(q)).length, 0);
  return (
    <div class="histograms" data-testid="histograms">
      <div class="section-head sticky">
        <input type="search" placeholder="filter histograms" aria-label="filter histograms" value={state.mq} onInput={(e) => update({ mq: (e.target as HTMLInputElement).value }, true)} />
        <div class="toolbar" role="toolbar" aria-label="histogram options">
          <span class="seg" role="group" aria-label="histogram view">
            <button type="button" class="small toggle" aria-pressed={state.hview === 'bands'} data-view="bands"
              title="percentile bands over the steps: min..max, 7..93%, 16..84%, 31..69%, median"
              onClick={() => update({ hview: 'bands' })}>Distribution</button>
            <button type="button" class="small toggle" aria-pressed={state.hview === 'heatmap'} data-view="heatmap"
              title="steps x bins, colour = count" onClick={() => update({ hview: 'heatmap' })}>Heatmap</button>
          </span>
          <label title="the heatmap's colour on a log scale of counts (rare values stay visible)">
            <input type="checkbox" data-testid="hist-log" checked={state.hlog} disabled={state.hview !== 'heatmap'}
              onChange={(e) => update({ hlog: (e.target as HTMLInputElement).checked })} /> log colour scale
          </label>
        </div>
      </div>
      {!shownCount && <Empty>No histogram key contains “{q}”.</Empty>}
      {sections.map(([section, items]) => {
        const shown = items.filter((k) => k.key.includes(q));
        if (!shown.length) return null;
        return (
          <details open key={section} class="chart-section" data-section={section}>
            <summary><h2>{section || 'Histograms'} <span class="muted small">{shown.length}</span></h2></summary>
            <div class="grid">
              {shown.map((k) => (
                <HistogramPanel key={k.key} r={r} histKey={k.key} writers={k.writers} state={state} tick={tick} />
              ))}
            </div>
          </details>
        );
      })}
    </div>
  );
}

function HistogramPanel({ r, histKey, writers, state, tick }: { r: RunDetail; histKey: string; writers: string[]; state: AppState; tick: number }) {
  const box = useRef<HTMLDivElement>(null);
  const { visible, width } = useVisibleWidth(box);
  const [zoom, setZoom] = useState<[number, number] | null>(null);
  const [data, setData] = useState<{ dist: Distribution; writer: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  // Bumped by the error's Retry button: the load runs again.
  const [attempt, setAttempt] = useState(0);
  const writer = state.hw[histKey] && writers.includes(state.hw[histKey]) ? state.hw[histKey] : writers[0];
  const multi = (r.writers?.length ?? 0) > 1;

  useEffect(() => {
    if (!visible || width <= 0) return;
    return startLoad((signal) => api.histograms(r.entity, r.project, r.id, [histKey], [writer], {
      buckets: bucketsFor(width - AXIS_SPACE), min_step: zoom?.[0], max_step: zoom?.[1],
    }, signal), (hs) => {
      const h = hs.find((x) => x.key === histKey && x.writer === writer) ?? { key: histKey, writer, count: 0, steps: [] };
      setData({ dist: distribution(h), writer });
    }, setError, setLoading);
  }, [visible, width, r.entity, r.project, r.id, histKey, writer, zoom?.[0], zoom?.[1], tick, attempt]);

  const d = data?.dist;
  const height = 220;
  // The data shown is the selected writer's (while another loads, the panel says so).
  const stale = !!data && data.writer !== writer;
  return (
    <section class="panel hist-panel" ref={box} data-hist={histKey} data-writer={data?.writer ?? ''} data-view={state.hview}
      data-steps={d?.steps ?? ''} data-columns={d?.points.length ?? ''} aria-busy={loading || stale}>
      <header class="panel-head">
        <h3 title={histKey}>{histKey}</h3>
        <span class="panel-meta" data-testid="hist-meta">
          {d && (d.raw
            ? `${fmtNum(d.steps)} step${d.steps === 1 ? '' : 's'}`
            : `${fmtNum(d.steps)} steps in ${fmtNum(d.points.length)} columns${d.approx ? ' (re-binned)' : ''}`)}
        </span>
        {d && d.empty > 0 && (
          <span class="nonfinite" data-testid="hist-empty" title="steps whose histogram counts no finite value: drawn as gaps">
            {fmtNum(d.empty)} empty
          </span>
        )}
        {zoom && <button type="button" class="small" onClick={() => setZoom(null)}>Reset zoom</button>}
        {writers.length > 1 ? (
          <label class="small">writer{' '}
            <select aria-label={`writer of ${histKey}`} data-testid="hist-writer" value={writer}
              onChange={(e) => update({ hw: { ...state.hw, [histKey]: (e.target as HTMLSelectElement).value } }, true)}>
              {writers.map((w) => <option key={w} value={w}>{w}</option>)}
            </select>
          </label>
        ) : multi ? <span class="muted small" data-testid="hist-writer-only">{writer}</span> : null}
      </header>
      {error ? <ErrorBox error={error} retry={() => setAttempt((n) => n + 1)} />
        : !d ? <div class="chart-skeleton" style={{ height: height + 'px' }}>{visible ? 'Loading…' : ''}</div>
          : !d.points.length ? <div class="empty" style={{ height: height + 'px' }}>No histogram of {data!.writer} in this range</div>
            : <HistogramChart dist={d} id={data!.writer} view={state.hview} log={state.hlog} height={height}
                ariaLabel={`${histKey} of ${data!.writer}, ${state.hview === 'heatmap' ? 'heatmap of steps by bins' : 'distribution over steps'}`}
                onZoom={(z) => setZoom(z)} />}
    </section>
  );
}
