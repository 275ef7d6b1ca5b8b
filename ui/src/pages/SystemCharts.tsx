// System metrics of one run (the System tab) or of the runs of a group: one chart per metric
// (GPU temperature, CPU, ...) with a line per run, label and device, on a time axis; series that
// never changed (total memory, fixed clocks) are folded into a table of constants instead of
// flat charts.
import { useMemo } from 'preact/hooks';
import { api, type SeriesInfo } from '../lib/api';
import type { LineSource, LoadedLine } from '../lib/chartdata';
import { MAX_RUNS_PER_REQUEST } from '../lib/chartdata';
import { fmtNum, styleAt } from '../lib/format';
import { arrangeSystemMetrics, constantSeries, parseSystemKey, systemLineName, type ConstantSeries } from '../lib/system';
import type { AppState } from '../lib/url';
import { ErrorBox, Loading, useLoad } from '../components/common';
import { ChartPanel, type LineStyle } from '../components/ChartPanel';
import { settingsOf } from '../components/ChartToolbar';

export interface SystemRun {
  run: { id: string; name: string; entity: string; project: string; created_ms: number };
  /** The run's system series (keys with their "system/" prefix). */
  keys: SeriesInfo[];
  /** Labels to draw. */
  labels: string[];
}

const PREFIX = 'system/';
const byIndex = (_l: LoadedLine, i: number): LineStyle => styleAt(i);

export function SystemCharts({ runs, state, tick, syncKey, style }: {
  runs: SystemRun[]; state: AppState; tick: number; syncKey: string;
  style?: (l: LoadedLine, i: number) => LineStyle;
}) {
  const multiRun = runs.length > 1;
  const entity = runs[0]?.run.entity ?? '', project = runs[0]?.run.project ?? '';
  const ids = runs.map((r) => r.run.id);
  // One bucket per series over its whole life: min = max tells a constant.
  const constants = useLoad(async (signal) => {
    const out = new Map<string, ConstantSeries>();
    for (let i = 0; i < ids.length; i += MAX_RUNS_PER_REQUEST) {
      const res = await api.historyOfRuns(entity, project, true, ids.slice(i, i + MAX_RUNS_PER_REQUEST), [], [], { buckets: 1 }, signal);
      for (const [k, v] of constantSeries(res.series)) out.set(k, v);
    }
    return out;
  }, [entity, project], 0, [ids.join(','), tick]);

  const layout = useMemo(() => {
    const all = new Set<string>();
    for (const r of runs) for (const k of r.keys) if (k.key.startsWith(PREFIX)) all.add(k.key.slice(PREFIX.length));
    return arrangeSystemMetrics([...all]);
  }, [runs.map((r) => r.run.id + ':' + r.keys.length).join(',')]);

  if (constants.error && !constants.data) return <ErrorBox error={constants.error} retry={constants.reload} />;
  if (!constants.data) return <Loading what="system metrics" />;
  const consts = constants.data;
  const settings = { ...settingsOf(state), xMode: state.x === 'step' ? 'rel' as const : state.x };
  const folded: { title: string; rows: { name: string; value: number }[] }[] = [];
  const sections: { section: string; charts: { id: string; title: string; sources: LineSource[] }[] }[] = [];

  for (const sec of layout) {
    const charts: { id: string; title: string; sources: LineSource[] }[] = [];
    for (const c of sec.charts) {
      const sources: LineSource[] = [];
      const constRows: { name: string; value: number }[] = [];
      let allConstant = true;
      for (const r of runs) {
        const byKey = new Map<string, Set<string>>();
        for (const k of r.keys) {
          if (!k.key.startsWith(PREFIX) || !r.labels.includes(k.writer)) continue;
          const key = k.key.slice(PREFIX.length);
          if (!byKey.has(key)) byKey.set(key, new Set());
          byKey.get(key)!.add(k.writer);
        }
        const multiLabel = new Set(r.keys.filter((k) => k.key.startsWith(PREFIX)).map((k) => k.writer)).size > 1;
        const runName = r.run.name || r.run.id;
        for (const sk of c.keys) {
          const writers = byKey.get(sk.key);
          if (!writers?.size) continue;
          const name = (w: string) => systemLineName({ label: w, instance: parseSystemKey(sk.key).instance, multiRun, multiLabel, runName });
          for (const w of writers) {
            const cst = consts.get(`${r.run.id}|${sk.key}|${w}`);
            if (cst) constRows.push({ name: name(w), value: cst.value });
            else allConstant = false;
          }
          sources.push({
            entity: r.run.entity, project: r.run.project, run: r.run.id, key: sk.key, system: true,
            writers: [...writers], originMs: r.run.created_ms, name,
          });
        }
      }
      if (!sources.length) continue;
      if (allConstant) folded.push({ title: c.title, rows: constRows });
      else charts.push({ id: 'sys:' + c.metric, title: c.title, sources });
    }
    if (charts.length) sections.push({ section: sec.section, charts });
  }

  return (
    <div class="system-charts">
      {sections.map((s) => (
        <details open key={s.section} class="chart-section" data-section={s.section}>
          <summary><h2>{s.section} <span class="muted small">{s.charts.length}</span></h2></summary>
          <div class="grid">
            {s.charts.map((c) => (
              <ChartPanel key={c.id} id={c.id} title={c.title} settings={settings} tick={tick} syncKey={syncKey} height={180}
                chart={state.charts[c.id]} fullscreen={state.full === c.id} sources={c.sources}
                aggLabel={`mean of ${c.sources.length} series`} style={style ?? byIndex} />
            ))}
          </div>
        </details>
      ))}
      {folded.length > 0 && (
        <details class="chart-section constants" data-section="Constants" open>
          <summary><h2>Constants <span class="muted small">values that never changed, not charted</span></h2></summary>
          <table class="table kv-table" data-testid="constants">
            <tbody>
              {folded.map((f) => (
                <tr key={f.title} data-metric={f.title} data-lines={JSON.stringify(f.rows.map((r) => r.name))}>
                  <th scope="row">{f.title}</th>
                  <td>{summarizeConstants(f.rows)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </div>
  );
}

/** "81,920 (GPU 0, GPU 1)" when all lines share a value, else each line with its own. */
function summarizeConstants(rows: { name: string; value: number }[]): string {
  const values = new Set(rows.map((r) => r.value));
  if (values.size === 1) return `${fmtNum(rows[0].value)} (${rows.map((r) => r.name).join(', ')})`;
  return rows.map((r) => `${r.name}: ${fmtNum(r.value)}`).join(' · ');
}
