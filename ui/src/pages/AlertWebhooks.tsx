// Alert webhooks (docs/api.md "Alert webhooks"), on the project's alerts page: the list with its
// format, minimum level and whether a secret is set (never the secret), create / edit / enable /
// delete, a Test button that shows the receiver's answer, each webhook's delivery log, and the
// deliveries of one alert (shown in the alert's details). Webhook routes need an admin key: a
// 403 is shown as the server says it.
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { api, type AlertDelivery, type AlertLevel, type AlertWebhook, type AlertWebhookInput, type WebhookTestResult } from '../lib/api';
import { deliveryText, isWebhookUrl, LEVELS } from '../lib/alerts';
import { fmtAgo, fmtTime } from '../lib/format';
import type { AppState } from '../lib/url';
import { Empty, ErrorBox, Loading, useLoad } from '../components/common';

const FORMATS: AlertWebhook['format'][] = ['generic', 'slack', 'discord'];

export function WebhooksSection({ state }: { state: AppState }) {
  const { entity, project } = state;
  const hooks = useLoad((signal) => api.alertWebhooks(entity, project, signal), [entity, project]);
  const [editing, setEditing] = useState<number | 'new' | null>(null);
  const [log, setLog] = useState<number | null>(null);
  const [tested, setTested] = useState<Record<number, WebhookTestResult | { error: string; ok: false; status: null }>>({});
  const [err, setErr] = useState<unknown>(null);
  const act = async (fn: () => Promise<unknown>) => {
    try { await fn(); setErr(null); hooks.reload(); } catch (e) { setErr(e); }
  };
  const test = async (w: AlertWebhook) => {
    try {
      const r = await api.testAlertWebhook(entity, project, w.id);
      setTested({ ...tested, [w.id]: r });
      setErr(null);
    } catch (e) { setErr(e); }
  };
  return (
    <section class="card rules" aria-label="alert webhooks">
      <h2>Webhooks</h2>
      <p class="muted small">Every alert opened or resolved is posted to each enabled webhook whose minimum level it meets (retried with backoff).</p>
      {err ? <ErrorBox error={err} /> : null}
      {hooks.error && !hooks.data ? <ErrorBox error={hooks.error} retry={hooks.reload} /> : !hooks.data ? <Loading what="webhooks" /> : !hooks.data.length && editing !== 'new' ? (
        <Empty>No webhooks. Add one to hear of alerts in Slack, Discord or your own service.</Empty>
      ) : (
        <table class="table" data-testid="webhooks">
          <thead><tr><th>On</th><th>Name</th><th>URL</th><th>Format</th><th>Min level</th><th>Secret</th><th /></tr></thead>
          <tbody>
            {hooks.data.map((w) => (editing === w.id
              ? <tr key={w.id}><td colSpan={7}><WebhookForm state={state} initial={w} onDone={() => { setEditing(null); hooks.reload(); }} /></td></tr>
              : (
                <Fragment key={w.id}>
                  <tr data-webhook={w.name}>
                    <td><input type="checkbox" checked={w.enabled} aria-label={`${w.enabled ? 'disable' : 'enable'} webhook ${w.name}`}
                      onChange={() => act(() => api.updateAlertWebhook(entity, project, w.id, { name: w.name, url: w.url, format: w.format, min_level: w.min_level, enabled: !w.enabled }))} /></td>
                    <td>{w.name}</td>
                    <td class="mono small">{w.url}</td>
                    <td>{w.format}</td>
                    <td>{w.min_level}</td>
                    <td>{w.has_secret ? 'set' : <span class="muted">none</span>}</td>
                    <td>
                      <button type="button" class="small" onClick={() => test(w)} aria-label={`test webhook ${w.name}`}>Test</button>{' '}
                      <button type="button" class="small" aria-expanded={log === w.id} onClick={() => setLog(log === w.id ? null : w.id)}>Log</button>{' '}
                      <button type="button" class="small" onClick={() => setEditing(w.id)}>Edit</button>{' '}
                      <button type="button" class="small danger" aria-label={`delete webhook ${w.name}`} onClick={() => act(() => api.deleteAlertWebhook(entity, project, w.id))}>Delete</button>
                      {tested[w.id] && <TestResult r={tested[w.id]} />}
                    </td>
                  </tr>
                  {log === w.id && <tr class="alert-detail"><td colSpan={7}><DeliveryLog state={state} webhookId={w.id} /></td></tr>}
                </Fragment>
              )))}
          </tbody>
        </table>
      )}
      {editing === 'new'
        ? <WebhookForm state={state} onDone={() => { setEditing(null); hooks.reload(); }} />
        : <button type="button" class="small primary" onClick={() => setEditing('new')}>New webhook</button>}
    </section>
  );
}

function TestResult({ r }: { r: WebhookTestResult }) {
  return (
    <div class={r.ok ? 'small' : 'small error-text'} data-testid="webhook-test-result" role="status">
      {r.ok ? `Test sent: the receiver answered ${r.status}.` : `Test failed: ${r.error ?? `the receiver answered ${r.status}`}`}
    </div>
  );
}

function WebhookForm({ state, initial, onDone }: { state: AppState; initial?: AlertWebhook; onDone: () => void }) {
  const [name, setName] = useState(initial?.name ?? '');
  const [url, setUrl] = useState(initial?.url ?? '');
  const [format, setFormat] = useState<AlertWebhook['format']>(initial?.format ?? 'generic');
  const [level, setLevel] = useState<AlertLevel>(initial?.min_level ?? 'WARN');
  const [enabled, setEnabled] = useState(initial?.enabled ?? true);
  // The secret is write-only: empty leaves it as it is (an edit), "remove" clears it.
  const [secret, setSecret] = useState('');
  const [removeSecret, setRemoveSecret] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    const body: AlertWebhookInput = { name: name.trim(), url: url.trim(), format, min_level: level, enabled };
    if (secret) body.secret = secret;
    else if (removeSecret) body.secret = null;
    try {
      if (initial) await api.updateAlertWebhook(state.entity, state.project, initial.id, body);
      else await api.createAlertWebhook(state.entity, state.project, body);
      setErr(null);
      onDone();
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="rule-form builder-form" onSubmit={submit} aria-label={initial ? 'edit webhook' : 'new webhook'}>
      <label>Name <input type="text" aria-label="webhook name" value={name} placeholder="ops" onInput={(e) => setName((e.target as HTMLInputElement).value)} /></label>
      <label>URL <input type="text" aria-label="webhook url" value={url} size={40} placeholder="https://hooks.slack.com/services/…" onInput={(e) => setUrl((e.target as HTMLInputElement).value)} /></label>
      {url.trim() && !isWebhookUrl(url) && <span class="muted small">an http:// or https:// URL</span>}
      <label>Format{' '}
        <select aria-label="webhook format" value={format} onChange={(e) => setFormat((e.target as HTMLSelectElement).value as AlertWebhook['format'])}>
          {FORMATS.map((f) => <option key={f} value={f}>{f}</option>)}
        </select>
      </label>
      <label>Min level{' '}
        <select aria-label="minimum level" value={level} onChange={(e) => setLevel((e.target as HTMLSelectElement).value as AlertLevel)}>
          {LEVELS.map((l) => <option key={l} value={l}>{l}</option>)}
        </select>
      </label>
      {format === 'generic' && (
        <label>Secret <input type="password" autoComplete="off" aria-label="webhook secret" value={secret}
          placeholder={initial?.has_secret ? 'set (type to replace)' : 'optional: signs the payload'} onInput={(e) => setSecret((e.target as HTMLInputElement).value)} /></label>
      )}
      {initial?.has_secret && !secret && <label><input type="checkbox" checked={removeSecret} onChange={() => setRemoveSecret(!removeSecret)} /> remove the secret</label>}
      <label><input type="checkbox" checked={enabled} onChange={() => setEnabled(!enabled)} /> enabled</label>
      <button type="submit" class="small primary" disabled={busy || !name.trim() || !url.trim()}>{initial ? 'Save webhook' : 'Create webhook'}</button>
      <button type="button" class="small" onClick={onDone}>Cancel</button>
      {err ? <ErrorBox error={err} /> : null}
    </form>
  );
}

function DeliveryLog({ state, webhookId }: { state: AppState; webhookId: number }) {
  const log = useLoad((signal) => api.alertDeliveries(state.entity, state.project, webhookId, undefined, signal), [state.entity, state.project, webhookId], 5000);
  // The alerts by title (the newest 1,000; an older one is shown by its id).
  const alerts = useLoad((signal) => api.alerts(state.entity, state.project, { limit: 1000 }, signal), [state.entity, state.project, webhookId]);
  const titles = new Map((alerts.data ?? []).map((a) => [a.id, a.title]));
  return <Deliveries list={log.data} error={log.error} empty="Nothing sent yet." titles={titles} names={null} />;
}

/** The deliveries of one alert, for its details row: state per webhook. */
export function AlertDeliveries({ state, alertId }: { state: AppState; alertId: number }) {
  const log = useLoad((signal) => api.alertDeliveries(state.entity, state.project, null, alertId, signal), [state.entity, state.project, alertId], 5000);
  const hooks = useLoad((signal) => api.alertWebhooks(state.entity, state.project, signal), [state.entity, state.project]);
  const names = new Map((hooks.data ?? []).map((w) => [w.id, w.name]));
  return <Deliveries list={log.data} error={log.error} empty="Sent to no webhook." titles={null} names={names} />;
}

/** A delivery log: with `titles`, an Alert column (one webhook's log); with `names`, a Webhook
 * column (one alert's deliveries). */
function Deliveries({ list, error, empty, titles, names }: {
  list: AlertDelivery[] | null; error: unknown; empty: string;
  titles: Map<number, string> | null; names: Map<number, string> | null;
}) {
  // Webhook routes need an admin key: a viewer sees the alerts without their delivery state.
  if (error && !list) return <div class="muted small">Deliveries: <ErrorBox error={error} /></div>;
  if (!list) return <Loading what="deliveries" />;
  if (!list.length) return <div class="muted small" data-testid="deliveries-empty">{empty}</div>;
  const now = Date.now();
  return (
    <table class="table small" data-testid="deliveries">
      <thead><tr>{titles && <th>Alert</th>}{names && <th>Webhook</th>}<th>Event</th><th>State</th><th>When</th></tr></thead>
      <tbody>
        {list.map((d) => (
          <tr key={d.id} data-delivery-state={d.state}>
            {titles && <td>{titles.get(d.alert_id) ?? `alert #${d.alert_id}`}</td>}
            {names && <td>{names.get(d.webhook_id) ?? `webhook #${d.webhook_id}`}</td>}
            <td>{d.event}</td>
            <td>{deliveryText(d, now)}</td>
            <td title={fmtTime(d.delivered_ms ?? d.created_ms)}>{fmtAgo(d.delivered_ms ?? d.created_ms, now)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
