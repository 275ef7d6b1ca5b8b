// Alerts in the UI (pages/Alerts.tsx): the one-line evidence of an alert, the open alerts of each
// run (the workspace table's marks), and the rule editor's draft <-> the API's rule JSON
// (docs/api.md "Alerts", "Rules"). Pure functions.
import type { Alert, AlertDelivery, AlertLevel, AlertRule, AlertRuleInput, AlertRuleKind } from './api';
import { fmtDuration, fmtNum, fmtTime } from './format';

export const LEVELS: AlertLevel[] = ['INFO', 'WARN', 'ERROR'];
export const RULE_KINDS: { kind: AlertRuleKind; label: string }[] = [
  { kind: 'metric_threshold', label: 'Metric threshold' },
  { kind: 'metric_nonfinite', label: 'NaN or Inf in a metric' },
  { kind: 'stale_metric', label: 'No new point' },
  { kind: 'hung', label: 'Hung writer' },
  { kind: 'straggler', label: 'Straggler or desync' },
  { kind: 'gpu_underused', label: 'GPUs underused' },
  { kind: 'writer_state', label: 'Writer ended badly' },
];
export const WRITER_END_STATES = ['crashed', 'failed', 'preempted', 'killed'];
export const THRESHOLD_OPS = ['>', '>=', '<', '<='];

export function levelRank(l: string): number {
  return Math.max(0, LEVELS.indexOf(l as AlertLevel));
}

const num = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'string' ? v : null);
const minutes = (ms: unknown) => (typeof ms === 'number' ? fmtDuration(ms) : '?');

/** What the alert saw, in one line: the metric's value, the writer's end, the stall. */
export function evidenceSummary(a: Alert): string {
  const e = a.evidence ?? {};
  if (a.source === 'code') return a.text ? a.text.split('\n')[0] : 'raised by the training code';
  if ('key' in e && 'value' in e) {
    const at = e.step === null || e.step === undefined ? '' : ` at step ${e.step}`;
    const value = fmtNum(num(e.value));
    if ('op' in e) {
      const after = e.after_step !== undefined && e.after_step !== null ? ` (after step ${e.after_step})` : '';
      return `${e.key} = ${value}${at}: ${e.op} ${fmtNum(num(e.threshold))}${after}`;
    }
    return `${e.key} = ${value}${at}`;
  }
  if ('state' in e) {
    const parts = [String(e.state)];
    if (e.exit_code !== null && e.exit_code !== undefined) parts.push(`exit code ${e.exit_code}`);
    if (typeof e.last_heartbeat_ms === 'number') parts.push(`last heartbeat ${fmtTime(e.last_heartbeat_ms)}`);
    return parts.join(', ');
  }
  if ('stalled_ms' in e) {
    const parts = [`no step for ${minutes(e.stalled_ms)} (limit ${minutes(e.threshold_ms)})`];
    if (typeof e.step_time_ms === 'number') parts.push(`step time ${fmtDuration(e.step_time_ms)}`);
    const suspects = Array.isArray(e.suspects) ? e.suspects.map(String) : [];
    if (suspects.length) parts.push(`behind: ${suspects.join(', ')}`);
    return parts.join('; ');
  }
  if ('reasons' in e) {  // straggler
    const parts: string[] = [];
    if (typeof e.step_time_ms === 'number') {
      const median = typeof e.median_step_time_ms === 'number' ? ` (median ${fmtNum(Math.round(e.median_step_time_ms))} ms)` : '';
      parts.push(`${fmtNum(Math.round(e.step_time_ms))} ms/step${median}`);
    }
    if (typeof e.ratio === 'number') parts.push(`×${fmtNum(Number(e.ratio.toFixed(2)))}`);
    if (typeof e.z === 'number') parts.push(`z ${fmtNum(Number(e.z.toFixed(1)))}`);
    if (typeof e.lag_ms === 'number') parts.push(`lag ${fmtNum(Math.round(e.lag_ms))} ms`);
    const d = e.desync as Record<string, unknown> | null | undefined;
    if (d && typeof d === 'object') parts.push(`${d.step_gap} steps behind ${d.ahead}`);
    return parts.join('; ');
  }
  if ('others_median' in e) {  // gpu_underused
    const pct = (v: unknown) => (typeof v === 'number' ? `${Math.round(v)}%` : '?');
    return `GPUs at ${pct(e.gpu_util)}, the other writers ${pct(e.others_median)}`;
  }
  if ('last_point_ms' in e) return `${e.key}: no point since ${fmtTime(e.last_point_ms as number)} (${e.minutes} min)`;
  return a.text ? a.text.split('\n')[0] : '';
}

export interface RunAlerts { count: number; level: AlertLevel; titles: string[] }

/** The open alerts of each run: how many, the highest level, their titles (for the mark's tooltip). */
export function openAlertsByRun(alerts: Alert[]): Map<string, RunAlerts> {
  const out = new Map<string, RunAlerts>();
  for (const a of alerts) {
    if (a.state !== 'open') continue;
    const cur = out.get(a.run) ?? { count: 0, level: 'INFO' as AlertLevel, titles: [] };
    cur.count++;
    if (levelRank(a.level) > levelRank(cur.level)) cur.level = a.level;
    cur.titles.push(a.writer ? `${a.title} (${a.writer})` : a.title);
    out.set(a.run, cur);
  }
  return out;
}

/** The rule editor's fields, all as typed (strings), whatever the kind. */
export interface RuleDraft {
  name: string; kind: AlertRuleKind; level: AlertLevel; enabled: boolean;
  key: string; op: string; value: string; afterStep: string; minutes: string;
  factor: string; minMinutes: string; states: string[];
  // straggler (empty: the server's defaults) and gpu_underused
  z: string; ratio: string; lagRatio: string; window: string; minWriters: string; desync: boolean;
  minUtil: string; forMinutes: string;
}

export function emptyDraft(kind: AlertRuleKind = 'metric_threshold'): RuleDraft {
  return {
    name: '', kind, level: kind === 'writer_state' ? 'ERROR' : 'WARN', enabled: true,
    key: kind === 'metric_nonfinite' ? '*' : '', op: '>', value: '', afterStep: '', minutes: '30',
    factor: '5', minMinutes: '10', states: ['crashed', 'failed', 'preempted'],
    z: '', ratio: kind === 'gpu_underused' ? '0.5' : '', lagRatio: '', window: '', minWriters: '', desync: true,
    minUtil: '50', forMinutes: kind === 'gpu_underused' ? '5' : '1',
  };
}

export function ruleToDraft(r: AlertRule): RuleDraft {
  const s = r.spec ?? {};
  const str = (v: unknown, dflt = '') => (v === undefined || v === null ? dflt : String(v));
  return {
    ...emptyDraft(r.kind as AlertRuleKind), name: r.name, kind: r.kind as AlertRuleKind, level: r.level, enabled: r.enabled,
    key: str(s.key), op: str(s.op, '>'), value: str(s.value), afterStep: str(s.after_step), minutes: str(s.minutes, '30'),
    factor: str(s.factor, '5'), minMinutes: str(s.min_minutes, '10'),
    states: Array.isArray(s.states) ? s.states.map(String) : ['crashed', 'failed', 'preempted'],
    z: str(s.z), ratio: str(s.ratio, r.kind === 'gpu_underused' ? '0.5' : ''), lagRatio: str(s.lag_ratio),
    window: str(s.window), minWriters: str(s.min_writers), desync: s.desync !== false,
    minUtil: str(s.min_util, '50'), forMinutes: str(s.for_minutes, r.kind === 'gpu_underused' ? '5' : '1'),
  };
}

/** A number as typed, or the text itself when it is not one (the server then names the field). */
function numberOrText(v: string): number | string {
  const t = v.trim();
  if (t === '') return t;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}

/** The API's rule body for a draft: only the fields of its kind; optional ones left out when empty. */
export function draftToInput(d: RuleDraft): AlertRuleInput {
  let spec: Record<string, unknown> = {};
  switch (d.kind) {
    case 'metric_threshold':
      spec = { key: d.key.trim(), op: d.op, value: numberOrText(d.value) };
      if (d.afterStep.trim()) spec.after_step = numberOrText(d.afterStep);
      break;
    case 'metric_nonfinite':
      spec = { key: d.key.trim() };
      break;
    case 'stale_metric':
      spec = { key: d.key.trim(), minutes: numberOrText(d.minutes) };
      break;
    case 'hung':
      if (d.factor.trim()) spec.factor = numberOrText(d.factor);
      if (d.minMinutes.trim()) spec.min_minutes = numberOrText(d.minMinutes);
      break;
    case 'writer_state':
      spec = { states: d.states };
      break;
    case 'straggler':
      if (d.z.trim()) spec.z = numberOrText(d.z);
      if (d.ratio.trim()) spec.ratio = numberOrText(d.ratio);
      if (d.lagRatio.trim()) spec.lag_ratio = numberOrText(d.lagRatio);
      if (d.window.trim()) spec.window = numberOrText(d.window);
      if (d.minWriters.trim()) spec.min_writers = numberOrText(d.minWriters);
      if (!d.desync) spec.desync = false;
      if (d.forMinutes.trim()) spec.for_minutes = numberOrText(d.forMinutes);
      break;
    case 'gpu_underused':
      if (d.ratio.trim()) spec.ratio = numberOrText(d.ratio);
      if (d.minUtil.trim()) spec.min_util = numberOrText(d.minUtil);
      if (d.minWriters.trim()) spec.min_writers = numberOrText(d.minWriters);
      if (d.forMinutes.trim()) spec.for_minutes = numberOrText(d.forMinutes);
      break;
  }
  return { name: d.name.trim(), kind: d.kind, spec, level: d.level, enabled: d.enabled };
}

/** A rule's condition in words: "loss > 10 after step 1000", "no point of eval/* for 30 min". */
export function describeRule(r: Pick<AlertRule, 'kind' | 'spec'>): string {
  const s = r.spec ?? {};
  switch (r.kind) {
    case 'metric_threshold':
      return `${s.key} ${s.op} ${fmtNum(num(s.value))}${s.after_step !== undefined ? ` after step ${s.after_step}` : ''}`;
    case 'metric_nonfinite':
      return `NaN or Inf in ${s.key === '*' ? 'any metric' : s.key}`;
    case 'stale_metric':
      return `no point of ${s.key} for ${s.minutes} min`;
    case 'hung':
      return `no step for ${s.factor ?? 5}× the step time and ${s.min_minutes ?? 10} min`;
    case 'straggler': {
      const t = [s.z !== undefined ? `z ${s.z}` : '', s.ratio !== undefined ? `×${s.ratio} slower` : ''].filter(Boolean);
      const what = s.desync === false ? 'a straggling writer' : 'a straggling writer or desync';
      return `${what}${t.length ? ` (${t.join(', ')})` : ''} for ${s.for_minutes ?? 1} min`;
    }
    case 'gpu_underused':
      return `a writer's GPUs under ${s.ratio ?? 0.5}× the others' (at least ${s.min_util ?? 50}%) for ${s.for_minutes ?? 5} min`;
    case 'writer_state':
      return `a writer ends ${Array.isArray(s.states) ? s.states.join(', ') : 'crashed, failed, preempted'}`;
    default:
      return JSON.stringify(s);
  }
}

/** One delivery of an alert event to a webhook, in words: "delivered (200)", "pending: attempt 3
 * failed (503), next in 20s", "failed after 10 attempts: connection refused". */
export function deliveryText(d: AlertDelivery, now = Date.now()): string {
  const status = d.last_status === null ? '' : ` (${d.last_status})`;
  const tries = `${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`;
  if (d.state === 'delivered') return `delivered${status}${d.attempts > 1 ? ` after ${tries}` : ''}`;
  const why = d.last_error ? `: ${d.last_error}` : status;
  if (d.state === 'failed') return `failed after ${tries}${why}`;
  if (!d.attempts) return 'pending';
  const next = d.next_attempt_ms === null ? '' : `, next in ${fmtDuration(Math.max(0, d.next_attempt_ms - now))}`;
  return `pending: attempt ${d.attempts} failed${why}${next}`;
}

/** Whether `url` can be a webhook's (http or https with a host), for the form's hint; the
 * server decides. */
export function isWebhookUrl(url: string): boolean {
  try {
    const u = new URL(url.trim());
    return (u.protocol === 'http:' || u.protocol === 'https:') && !!u.hostname;
  } catch {
    return false;
  }
}
