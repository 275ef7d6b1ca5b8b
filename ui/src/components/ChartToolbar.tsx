// Chart options shared by every chart of a page, kept in the URL: x axis, log scale, smoothing,
// line (bucket mean or last value), and the aggregate across processes where it applies. A chart
// can override log scale and smoothing for itself (ChartPanel).
import { update } from '../lib/nav';
import type { AppState, ChartState } from '../lib/url';
import type { ChartSettings } from './ChartPanel';

export function settingsOf(s: AppState): ChartSettings {
  return { xMode: s.x, log: s.log, smooth: s.smooth, line: s.line, agg: s.agg };
}

/** Zooms are in x units: a new x axis drops them (and keeps the charts' other settings). */
export function withoutZooms(charts: Record<string, ChartState>): Record<string, ChartState> {
  return Object.fromEntries(Object.entries(charts).map(([k, v]) => [k, { ...v, z: undefined }]));
}

export function ChartToolbar({ state, aggregate, aggLabel, timeOnly, label = 'chart options' }: {
  state: AppState; aggregate?: boolean; aggLabel?: string;
  /** Charts on a time axis only (system metrics): no "step". */
  timeOnly?: boolean;
  label?: string;
}) {
  return (
    <div class="toolbar" role="toolbar" aria-label={label}>
      <label>x axis{' '}
        <select aria-label="x axis" value={timeOnly && state.x === 'step' ? 'rel' : state.x}
          onChange={(e) => update({ x: (e.target as HTMLSelectElement).value as AppState['x'], charts: withoutZooms(state.charts) })}>
          {!timeOnly && <option value="step">step</option>}
          <option value="rel">relative time</option>
          <option value="wall">wall time</option>
        </select>
      </label>
      <label>line{' '}
        <select aria-label="line" value={state.line} onChange={(e) => update({ line: (e.target as HTMLSelectElement).value as AppState['line'] })}>
          <option value="mean">bucket mean</option>
          <option value="last">bucket last</option>
        </select>
      </label>
      <label><input type="checkbox" checked={state.log} onChange={(e) => update({ log: (e.target as HTMLInputElement).checked })} /> log scale</label>
      <label title="exponential moving average drawn over the faded raw line; the min/max band stays">smoothing{' '}
        <input type="range" min="0" max="0.99" step="0.01" value={state.smooth} aria-label="smoothing"
          onInput={(e) => update({ smooth: Number((e.target as HTMLInputElement).value) }, true)} />
        <span class="mono">{state.smooth.toFixed(2)}</span>
      </label>
      {aggregate && (
        <label><input type="checkbox" data-testid="agg-toggle" checked={state.agg} onChange={(e) => update({ agg: (e.target as HTMLInputElement).checked })} /> {aggLabel ?? 'min/max band + mean across processes'}</label>
      )}
    </div>
  );
}
