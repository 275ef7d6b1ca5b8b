import { describe, expect, it } from 'vitest';
import type { Alert, AlertDelivery, AlertRule } from './api';
import { deliveryText, describeRule, draftToInput, emptyDraft, evidenceSummary, isWebhookUrl, openAlertsByRun, ruleToDraft } from './alerts';

function alert(p: Partial<Alert>): Alert {
  return {
    id: 1, entity: 'e', project: 'p', run: 'r1', writer: 'rank0', rule_id: 2, source: 'rule', condition: 'rule:2:loss',
    level: 'WARN', title: 't', text: '', evidence: {}, state: 'open', opened_ms: 1, resolved_ms: null, acked_ms: null,
    acked_by: null, last_seen_ms: 1, count: 1, ...p,
  };
}

describe('alerts', () => {
  it('says what each kind of alert saw', () => {
    expect(evidenceSummary(alert({ evidence: { key: 'loss', step: 812, value: 'NaN' } }))).toBe('loss = NaN at step 812');
    expect(evidenceSummary(alert({ evidence: { key: 'loss', step: null, value: 'Infinity' } }))).toBe('loss = Infinity');
    expect(evidenceSummary(alert({ evidence: { key: 'loss', step: 1500, value: 12.5, op: '>', threshold: 10, after_step: 1000 } })))
      .toBe('loss = 12.5 at step 1500: > 10 (after step 1000)');
    expect(evidenceSummary(alert({ evidence: { state: 'crashed', exit_code: null, last_heartbeat_ms: null } }))).toBe('crashed');
    expect(evidenceSummary(alert({ evidence: { state: 'failed', exit_code: 3 } }))).toBe('failed, exit code 3');
    expect(evidenceSummary(alert({ evidence: { stalled_ms: 720_000, threshold_ms: 600_000, step_time_ms: 2000, suspects: ['rank3'] } })))
      .toBe('no step for 12m 00s (limit 10m 00s); step time 2s; behind: rank3');
    expect(evidenceSummary(alert({ evidence: { step_time_ms: 300, median_step_time_ms: 100, ratio: 3, z: 12.345, lag_ms: 2999.6, reasons: ['slow'], desync: null } })))
      .toBe('300 ms/step (median 100 ms); ×3; z 12.3; lag 3000 ms');
    expect(evidenceSummary(alert({ evidence: { step_time_ms: null, lag_ms: null, z: null, ratio: null, reasons: ['behind'], desync: { step_gap: 25, ahead: 'r0', behind: 'r1' } } })))
      .toBe('25 steps behind r0');
    expect(evidenceSummary(alert({ evidence: { gpu_util: 15.2, others_median: 95, ratio: 0.16 } }))).toBe('GPUs at 15%, the other writers 95%');
    expect(evidenceSummary(alert({ source: 'code', rule_id: null, text: 'diverging\nmore', evidence: { time_ms: 5 } }))).toBe('diverging');
  });

  it('marks each run with its open alerts and their highest level', () => {
    const m = openAlertsByRun([
      alert({ run: 'a', level: 'INFO', title: 'x' }),
      alert({ run: 'a', level: 'ERROR', title: 'crashed', writer: 'rank1' }),
      alert({ run: 'b', level: 'WARN', state: 'resolved' }),
      alert({ run: 'c', level: 'WARN', title: 'y', writer: '' }),
    ]);
    expect(m.get('a')).toEqual({ count: 2, level: 'ERROR', titles: ['x (rank0)', 'crashed (rank1)'] });
    expect(m.has('b')).toBe(false);
    expect(m.get('c')).toEqual({ count: 1, level: 'WARN', titles: ['y'] });
  });

  it('turns a draft into the fields of its kind only, numbers as numbers', () => {
    const d = { ...emptyDraft('metric_threshold'), name: ' loss high ', key: 'loss', op: '>=', value: '10', afterStep: '' };
    expect(draftToInput(d)).toEqual({ name: 'loss high', kind: 'metric_threshold', spec: { key: 'loss', op: '>=', value: 10 }, level: 'WARN', enabled: true });
    expect(draftToInput({ ...d, afterStep: '1000' }).spec).toEqual({ key: 'loss', op: '>=', value: 10, after_step: 1000 });
    // What is not a number goes as typed: the server's 400 names the field.
    expect(draftToInput({ ...d, value: 'ten' }).spec.value).toBe('ten');
    expect(draftToInput({ ...emptyDraft('stale_metric'), key: 'eval/*', minutes: '30' }).spec).toEqual({ key: 'eval/*', minutes: 30 });
    expect(draftToInput({ ...emptyDraft('hung'), factor: '', minMinutes: '20' }).spec).toEqual({ min_minutes: 20 });
    expect(draftToInput(emptyDraft('straggler')).spec).toEqual({ for_minutes: 1 });
    expect(draftToInput({ ...emptyDraft('straggler'), z: '3', ratio: '1.5', window: '20', minWriters: '2', desync: false, forMinutes: '0' }).spec)
      .toEqual({ z: 3, ratio: 1.5, window: 20, min_writers: 2, desync: false, for_minutes: 0 });
    expect(draftToInput(emptyDraft('gpu_underused')).spec).toEqual({ ratio: 0.5, min_util: 50, for_minutes: 5 });
    expect(draftToInput({ ...emptyDraft('gpu_underused'), minUtil: 'half' }).spec.min_util).toBe('half');
    expect(draftToInput(emptyDraft('writer_state'))).toMatchObject({ level: 'ERROR', spec: { states: ['crashed', 'failed', 'preempted'] } });
  });

  it('edits a rule through a draft without changing it', () => {
    const r: AlertRule = { id: 3, name: 'acc', kind: 'metric_threshold', spec: { key: 'eval/acc', op: '<', value: 0.5, after_step: 1000 }, level: 'ERROR', enabled: false, builtin: false, created_ms: 1, updated_ms: 1 };
    expect(draftToInput(ruleToDraft(r))).toEqual({ name: 'acc', kind: 'metric_threshold', spec: r.spec, level: 'ERROR', enabled: false });
    expect(describeRule(r)).toBe('eval/acc < 0.5 after step 1000');
    expect(describeRule({ kind: 'metric_nonfinite', spec: { key: '*' } })).toBe('NaN or Inf in any metric');
    expect(describeRule({ kind: 'writer_state', spec: { states: ['crashed'] } })).toBe('a writer ends crashed');
    const g: AlertRule = { ...r, kind: 'gpu_underused', spec: { ratio: 0.3, min_util: 60, min_writers: 4, for_minutes: 2 } };
    expect(draftToInput(ruleToDraft(g)).spec).toEqual(g.spec);
    expect(describeRule(g)).toBe("a writer's GPUs under 0.3× the others' (at least 60%) for 2 min");
    const st: AlertRule = { ...r, kind: 'straggler', spec: { z: 3, lag_ratio: 0.5, desync: false, for_minutes: 1 } };
    expect(draftToInput(ruleToDraft(st)).spec).toEqual(st.spec);
    expect(describeRule(st)).toBe('a straggling writer (z 3) for 1 min');
    expect(describeRule({ kind: 'straggler', spec: {} })).toBe('a straggling writer or desync for 1 min');
  });

  it('says where each delivery stands', () => {
    const d = (p: Partial<AlertDelivery>): AlertDelivery => ({
      id: 1, webhook_id: 2, event_id: 3, alert_id: 4, event: 'opened', state: 'pending', attempts: 0, next_attempt_ms: null,
      last_status: null, last_error: null, delivered_ms: null, created_ms: 0, ...p,
    });
    expect(deliveryText(d({}))).toBe('pending');
    expect(deliveryText(d({ state: 'delivered', attempts: 1, last_status: 200 }))).toBe('delivered (200)');
    expect(deliveryText(d({ state: 'delivered', attempts: 3, last_status: 204 }))).toBe('delivered (204) after 3 attempts');
    expect(deliveryText(d({ attempts: 2, last_status: 503, next_attempt_ms: 20_000 }), 0)).toBe('pending: attempt 2 failed (503), next in 20s');
    expect(deliveryText(d({ attempts: 1, last_error: 'connection refused', next_attempt_ms: 5_000 }), 0)).toBe('pending: attempt 1 failed: connection refused, next in 5s');
    expect(deliveryText(d({ state: 'failed', attempts: 10, last_error: 'timeout' }))).toBe('failed after 10 attempts: timeout');
  });

  it('hints at webhook URLs the server would refuse', () => {
    expect(isWebhookUrl('https://hooks.slack.com/services/T/B/X')).toBe(true);
    expect(isWebhookUrl('http://127.0.0.1:9000/hook')).toBe(true);
    expect(isWebhookUrl('ftp://example.com/x')).toBe(false);
    expect(isWebhookUrl('hooks.example.com')).toBe(false);
  });
});
