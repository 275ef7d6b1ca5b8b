// The Ranks view (run page tab of a shared run, section of the group page): one metric across
// every writer (or run) as the server aggregates it -- the min..max band, the mean and median
// lines, on hover the ranks holding the min, the max and the outlier, one click isolating a rank --
// then the heatmap of ranks x time coloured by step time or GPU utilisation and the flagged
// stragglers with their evidence and host. Re-queried on every live tick.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type RankAggregate, type RankScope, type Stragglers } from '../lib/api';
import { fmtNum, fmtTime, naturalCompare } from '../lib/format';
import { update } from '../lib/nav';
import { bucketAt, flagged, heatColor, heatRange, memberBand, memberId, memberName, rankBands, spansRuns, type BucketInfo } from '../lib/ranks';
import type { AppState } from '../lib/url';
import { Chart, type ChartLine } from '../components/Chart';
import { Empty, ErrorBox, Loading, StateBadge, useLoad } from '../components/common';

const AXIS_SPACE = 70;

/** Member indexes in the natural order of their names (rank_2 before rank_10), whatever order
 * the writers joined in. */
export function inLabelOrder(names: string[]): number[] {
  return names.map((_n, i) => i).sort((a, b) => naturalCompare(names[a], names[b]) || a - b);
}

/** The metric the view starts with: `loss` when logged, else the first key. */
export function defaultRankKey(keys: string[]): string {
  if (keys.includes('loss')) return 'loss';
  return [...keys].sort()[0] ?? '';
}

export function RanksView({ scope, state, keys, tick, runName, runState }: {
  scope: RankScope; state: AppState; keys: string[]; tick: number; runName?: (run: string) => string;
  /** A member run's state (group pages), to say which one crashed. */
  runState?: (run: string) => string | undefined;
}) {
  const key = state.rkey && keys.includes(state.rkey) ? state.rkey : defaultRankKey(keys);
  if (!keys.length) return <Empty>No metric logged yet: the Ranks view compares one metric across ranks.</Empty>;
  return (
    <div class="ranks" data-testid="ranks">
      <div class="section-head">
        <h2>Across ranks</h2>
        <label class="small">metric{' '}
          <select aria-label="rank metric" value={key} onChange={(e) => update({ rkey: (e.target as HTMLSelectElement).value }, true)}>
            {keys.map((k) => <option key={k} value={k}>{k}</option>)}
          </select>
        </label>
        {state.rank && <button type="button" class="link" data-testid="rank-clear" onClick={() => update({ rank: '' })}>show all ranks</button>}
      </div>
      <RankBandChart scope={scope} metric={key} tick={tick} isolated={state.rank} runName={runName} />
      <StragglerPanel scope={scope} metric={key} tick={tick} isolated={state.rank} runName={runName} runState={runState} />
    </div>
  );
}

/** The desynchronisation warning in words: which rank is behind, which ahead, and why when the
 * one behind stopped (crashed, killed, ...). */
export function desyncText(d: Stragglers, name: (i: number) => string, stateOf: (i: number) => string | undefined): string {
  const a = d.desync.ahead, b = d.desync.behind;
  if (a === null || a === undefined || b === null || b === undefined || !d.members[a] || !d.members[b]) {
    return d.desync.reason || `ranks are ${d.desync.step_gap} steps apart`;
  }
  const st = stateOf(b);
  const stopped = st && st !== 'running' ? ` (${st}: it stopped there)` : '';
  return `${name(b)} is at step ${fmtNum(d.members[b].last_step)}${stopped}, ${name(a)} at step ${fmtNum(d.members[a].last_step)}: ${fmtNum(d.desync.step_gap)} steps apart`;
}

function useWidth(): [preact.RefObject<HTMLDivElement>, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [w, setW] = useState(0);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    setW(el.clientWidth);
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(() => setW((cur) => (Math.abs(cur - el.clientWidth) > 8 ? el.clientWidth : cur)));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, w];
}

function RankBandChart({ scope, metric, tick, isolated, runName }: {
  scope: RankScope; metric: string; tick: number; isolated: string; runName?: (run: string) => string;
}) {
  const [box, width] = useWidth();
  const buckets = Math.max(10, width - AXIS_SPACE);
  const agg = useLoad((signal) => (width > 0 && metric
    ? api.ranksAggregate(scope, { key: metric, buckets, per_member: true }, signal)
    : Promise.resolve(null as RankAggregate | null)), [JSON.stringify(scope), metric], 0, [buckets, tick]);
  const [hover, setHover] = useState<BucketInfo | null>(null);
  const a = agg.data;
  const multiRun = a ? spansRuns(a.members) : false;
  const names = a ? a.members.map((m) => memberName(m, multiRun, runName)) : [];
  const ids = a ? a.members.map((m) => memberId(m, multiRun)) : [];
  const iso = ids.indexOf(isolated);

  const lines = useMemo<ChartLine[]>(() => {
    if (!a || !a.buckets.length) return [];
    const { mean, median } = rankBands(a);
    const out: ChartLine[] = [
      { id: 'mean', label: `mean of ${a.members.length} (band: min..max)`, color: '#4c78a8', band: mean },
      { id: 'median', label: 'median', color: '#f58518', band: median, noBand: true },
    ];
    if (iso >= 0) out.push({ id: `m:${ids[iso]}`, label: names[iso], color: '#d62728', band: memberBand(a, iso), emphasis: true, noBand: true });
    return out;
  }, [a, iso]);

  const isolate = (i: number | null) => update({ rank: i === null || ids[i] === isolated ? '' : ids[i] });
  const who = (i: number | null | undefined, what: string) => (i === null || i === undefined || !a?.members[i] ? null : (
    <button type="button" class="chip rank-chip" data-role={what} data-member={ids[i]} title="click: isolate this rank" onClick={() => isolate(i)}>
      {names[i]}{a.members[i].host ? <span class="muted small"> @{a.members[i].host}</span> : null}
    </button>
  ));

  return (
    <section class="panel rank-band" data-chart={`ranks:${metric}`} aria-busy={!a && !agg.error}>
      <header class="panel-head">
        {/* The metric of the data shown: while another one loads, say so rather than mix them. */}
        <h3 data-testid="rank-title">{a && a.key !== metric ? `${a.key} across ranks (loading ${metric}…)` : `${metric} across ranks`}</h3>
        <span class="panel-meta" data-testid="rank-meta">
          {a && `${a.members.length} rank${a.members.length === 1 ? '' : 's'} · ${a.buckets.length} buckets${a.exact ? ' (exact per step)' : ` of ${fmtNum(a.bucket_width)} steps`}`}
        </span>
      </header>
      <div ref={box}>
        {agg.error && !a ? <ErrorBox error={agg.error} retry={agg.reload} />
          : !a ? <Loading what="aggregate" />
            : a.members.length === 1 ? <Empty><span data-testid="one-writer">This run has one writer ({names[0]}): there are no ranks to compare. A shared run with several writers, or a group of runs, has them.</span></Empty>
            : !a.buckets.length ? <Empty>No points of {metric} yet.</Empty>
              : (
                <Chart lines={lines} xMode="step" log={false} smooth={0} zoom={null} height={240}
                  ariaLabel={`${metric} across ranks`}
                  onCursor={(x) => {
                    // Leaving the plot keeps the last bucket (its rank names stay clickable);
                    // the same bucket keeps the state (no re-render on every mouse move).
                    const next = x === null ? null : bucketAt(a, x);
                    if (next) setHover((prev) => (prev?.bucket === next.bucket ? prev : next));
                  }}
                  onPlotClick={() => { if (hover) isolate(hover.outlier?.member ?? hover.maxMember); }} />
              )}
      </div>
      {(!a || a.members.length > 1) && <div class="rank-hover small" data-testid="rank-hover" aria-live="polite">
        {hover ? (
          <>
            <span>steps {fmtNum(hover.bucket.step_min)}–{fmtNum(hover.bucket.step_max)}</span>
            <span> · min {fmtNum(hover.bucket.min)} </span>{who(hover.minMember, 'min')}
            <span> · max {fmtNum(hover.bucket.max)} </span>{who(hover.maxMember, 'max')}
            {hover.outlier ? <><span> · outlier </span>{who(hover.outlier.member, 'outlier')}<span> z {fmtNum(hover.outlier.z)}</span></> : null}
            <span class="muted"> (click the chart to isolate the outlier)</span>
          </>
        ) : <span class="muted">Hover the chart: which rank holds the min, the max and the outlier.</span>}
      </div>}
      {a && a.members.length > 1 && (
        <div class="rank-members" role="group" aria-label="ranks">
          {inLabelOrder(names).map((i) => (
            <button key={ids[i]} type="button" class={`chip rank-chip${ids[i] === isolated ? ' on' : ''}`} data-member={ids[i]}
              aria-pressed={ids[i] === isolated} title="click: isolate this rank over the band" onClick={() => isolate(i)}>
              {names[i]}
            </button>
          ))}
        </div>
      )}
    </section>
  );
}

function StragglerPanel({ scope, metric, tick, isolated, runName, runState }: {
  scope: RankScope; metric: string; tick: number; isolated: string; runName?: (run: string) => string; runState?: (run: string) => string | undefined;
}) {
  const [box, width] = useWidth();
  const columns = Math.max(10, Math.min(240, Math.floor((width - 180) / 10)));
  const s = useLoad((signal) => (width > 0 ? api.stragglers(scope, { columns, key: metric }, signal) : Promise.resolve(null as Stragglers | null)),
    [JSON.stringify(scope), metric], 0, [columns, tick]);
  const [by, setBy] = useState<'step_time' | 'gpu_util'>('step_time');
  const d = s.data;
  const multiRun = d ? spansRuns(d.members) : false;
  const rows = d ? ((by === 'step_time' ? d.matrix?.step_time_ms : d.matrix?.gpu_util) ?? []) : [];
  const range = useMemo(() => heatRange(rows), [rows]);
  const flags = d ? flagged(d) : [];
  const flaggedSet = new Set(flags.map((f) => f.index));
  const hasGpu = d ? (d.matrix?.gpu_util ?? []).some((r) => r.some((v) => v !== null)) : false;
  const unit = by === 'step_time' ? 'ms/step' : '% GPU';

  const nameOf = (i: number) => (d ? memberName(d.members[i], multiRun, runName) : '');
  const stateOf = (i: number) => (d ? d.members[i]?.state ?? (multiRun ? runState?.(d.members[i].run) : undefined) : undefined);
  return (
    <div ref={box} class="stragglers">
      {s.error && !d ? <ErrorBox error={s.error} retry={s.reload} /> : !d ? <Loading what="straggler analysis" />
        : d.members.length === 1 ? null : (
        <>
          <section data-testid="stragglers">
            <h2>Stragglers <span class="muted small">window: last {d.window} steps · key {d.key || '—'}</span></h2>
            {d.desync?.flagged && <div class="warn" data-testid="desync">Desynchronised: {desyncText(d, nameOf, stateOf)}</div>}
            {!flags.length ? <p class="muted" data-testid="no-stragglers">No straggler: every rank is within the thresholds (z ≥ {d.thresholds?.z}, {d.thresholds?.ratio}× the median).</p> : (
              <table class="table">
                <thead><tr><th>Rank</th><th>Host</th><th>State</th><th>Evidence</th><th /></tr></thead>
                <tbody>
                  {flags.map(({ index, reasons }) => {
                    const m = d.members[index];
                    const id = memberId(m, multiRun);
                    return (
                      <tr key={id} data-straggler={id}>
                        <td class="mono">{memberName(m, multiRun, runName)}</td>
                        <td>{m.host || '—'}</td>
                        <td>{m.state ? <StateBadge state={m.state} /> : '—'}</td>
                        <td class="evidence"><ul class="reasons">{reasons.map((r, k) => <li key={k}>{r}</li>)}</ul></td>
                        <td><button type="button" class="link" onClick={() => update({ rank: id === isolated ? '' : id })}>{id === isolated ? 'show all' : 'isolate'}</button></td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            )}
          </section>
          <section class="heatmap-box">
            <div class="section-head">
              <h2>Ranks × time</h2>
              <label class="small">colour by{' '}
                <select aria-label="heatmap colour" value={by} onChange={(e) => setBy((e.target as HTMLSelectElement).value as 'step_time' | 'gpu_util')}>
                  <option value="step_time">step time</option>
                  <option value="gpu_util" disabled={!hasGpu}>GPU utilisation{hasGpu ? '' : ' (no GPU data)'}</option>
                </select>
              </label>
              {range && <span class="muted small" data-testid="heat-scale">green {fmtNum(by === 'step_time' ? range[0] : range[1])} … red {fmtNum(by === 'step_time' ? range[1] : range[0])} {unit}</span>}
            </div>
            {!d.matrix?.times?.length ? <Empty>No timed steps yet.</Empty> : (
              <div class="heatmap" data-testid="heatmap" data-by={by} role="table" aria-label={`ranks by time, coloured by ${by === 'step_time' ? 'step time' : 'GPU utilisation'}`}
                style={{ gridTemplateColumns: `minmax(120px, max-content) repeat(${d.matrix.times.length}, minmax(3px, 1fr))` }}>
                {inLabelOrder(d.members.map((m) => memberName(m, multiRun, runName))).map((i) => {
                  const m = d.members[i];
                  const id = memberId(m, multiRun);
                  return [
                    <div key={`h${i}`} role="rowheader" class={`heat-label mono small${flaggedSet.has(i) ? ' flagged' : ''}${id === isolated ? ' on' : ''}`} data-member={id}
                      title={m.host ? `${memberName(m, multiRun, runName)} on ${m.host}` : undefined}>
                      {flaggedSet.has(i) ? '⚠ ' : ''}{memberName(m, multiRun, runName)}
                    </div>,
                    ...(rows[i] ?? []).map((v, j) => (
                      <div key={`c${i}-${j}`} role="cell" class="heat-cell" data-v={v ?? ''}
                        style={{ background: heatColor(v, range, by === 'step_time') }}
                        title={`${memberName(m, multiRun, runName)} · ${fmtTime(d.matrix.times[j])}: ${v === null ? 'no data' : `${fmtNum(v)} ${unit}`}`} />
                    )),
                  ];
                })}
              </div>
            )}
          </section>
        </>
      )}
    </div>
  );
}
