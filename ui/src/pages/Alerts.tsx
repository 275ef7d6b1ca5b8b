// Alerts (docs/api.md "Alerts"): the project's alerts page (the list with its filters, and the
// rule editor), the run page's Alerts tab, and the mark of a run's open alerts in the workspace
// table. Acknowledging an alert is one click; rules are created, edited, disabled and deleted
// here, and a rule the server refuses shows its message naming the field.
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { api, type Alert, type AlertLevel, type AlertRule, type AlertRuleKind } from '../lib/api';
import {
  describeRule, draftToInput, emptyDraft, evidenceSummary, LEVELS, ruleToDraft, RULE_KINDS, THRESHOLD_OPS, WRITER_END_STATES,
  type RuleDraft, type RunAlerts,
} from '../lib/alerts';
import { update } from '../lib/nav';
import { fmtAgo, fmtTime } from '../lib/format';
import { linkTo, type AlertStateFilter, type AppState } from '../lib/url';
import { Empty, ErrorBox, Link, Loading, useLoad } from '../components/common';
import { AlertDeliveries, WebhooksSection } from './AlertWebhooks';

/** How often the lists refresh (alerts open and resolve while jobs run). */
export const ALERTS_REFRESH_MS = 5000;

export function LevelBadge({ level }: { level: string }) {
  return <span class={`level level-${level.toLowerCase()}`} data-level={level}>{level}</span>;
}

/** The workspace table's mark of a run with open alerts: count, coloured by the highest level. */
export function AlertMark({ info, href }: { info: RunAlerts; href: string }) {
  const title = `${info.count} open alert${info.count === 1 ? '' : 's'}: ${info.titles.join('; ')}`;
  return (
    <Link href={href} class={`alert-mark level-${info.level.toLowerCase()}`} title={title} tabIndex={-1} data-testid="alert-mark">
      ⚠ {info.count}
    </Link>
  );
}

export function ProjectAlertsPage({ state }: { state: AppState }) {
  const { entity, project } = state;
  // The filters are in the URL (`ast`, `alv`): a reload or a shared link shows the same list.
  const filter = state.ast;
  const level = state.alv;
  const alerts = useLoad((signal) => api.alerts(entity, project, { state: filter === 'all' ? undefined : filter, level: level || undefined, limit: 500 }, signal),
    [entity, project, filter, level], ALERTS_REFRESH_MS);
  return (
    <div class="page alerts-page">
      <header class="run-head">
        <h1>Alerts · {project}</h1>
        <Link href={linkTo(state, { alerts: false })}>Back to the runs</Link>
      </header>
      <div class="alert-filters" role="group" aria-label="alert filters">
        {(['open', 'resolved', 'all'] as AlertStateFilter[]).map((f) => (
          <button key={f} type="button" class={filter === f ? 'small primary' : 'small'} aria-pressed={filter === f}
            onClick={() => update({ ast: f })}>{f === 'open' ? 'Open' : f === 'resolved' ? 'Resolved' : 'All'}</button>
        ))}
        <label>Level{' '}
          <select aria-label="level" value={level} onChange={(e) => update({ alv: (e.target as HTMLSelectElement).value as AlertLevel | '' })}>
            <option value="">any</option>
            {LEVELS.map((l) => <option key={l} value={l}>{l}</option>)}
          </select>
        </label>
      </div>
      <AlertsList state={state} alerts={alerts.data} error={alerts.error} onChanged={alerts.reload} showRun
        empty={filter === 'open' ? 'No open alerts. Rules below raise them; so does run.alert(...) in the training code.' : 'No alerts.'} />
      <RulesSection state={state} />
      <WebhooksSection state={state} />
    </div>
  );
}

/** The run page's tab: every alert of the run, open ones first. */
export function RunAlertsTab({ state, tick }: { state: AppState; tick: number }) {
  const { entity, project, run } = state;
  const alerts = useLoad((signal) => api.alerts(entity, project, { run, limit: 500 }, signal), [entity, project, run], 0, [tick]);
  const sorted = alerts.data ? [...alerts.data].sort((a, b) => (a.state === b.state ? b.id - a.id : a.state === 'open' ? -1 : 1)) : null;
  return (
    <section class="card">
      <h2>Alerts</h2>
      <AlertsList state={state} alerts={sorted} error={alerts.error} onChanged={alerts.reload} showRun={false}
        empty="No alerts for this run." />
      <p class="muted small"><Link href={linkTo(state, { run: '', alerts: true })}>All alerts and rules of {project}</Link></p>
    </section>
  );
}

function AlertsList({ state, alerts, error, onChanged, showRun, empty }: {
  state: AppState; alerts: Alert[] | null; error: unknown; onChanged: () => void; showRun: boolean; empty: string;
}) {
  const [ackError, setAckError] = useState<unknown>(null);
  const [open, setOpen] = useState<number | null>(null);
  if (error && !alerts) return <ErrorBox error={error} retry={onChanged} />;
  if (!alerts) return <Loading what="alerts" />;
  if (!alerts.length) return <Empty>{empty}</Empty>;
  const ack = async (a: Alert) => {
    try { await api.ackAlert(state.entity, state.project, a.id); setAckError(null); onChanged(); } catch (e) { setAckError(e); }
  };
  const now = Date.now();
  return (
    <>
      {ackError ? <ErrorBox error={ackError} /> : null}
      <table class="table alerts" data-testid="alerts">
        <thead>
          <tr>
            <th>Level</th><th>Alert</th>{showRun && <th>Run</th>}<th>Writer</th><th>Evidence</th><th>Opened</th><th class="num">Seen</th><th>State</th><th />
          </tr>
        </thead>
        <tbody>
          {alerts.map((a) => (
            <Fragment key={a.id}>
              <tr data-alert={a.id} data-state={a.state} class={a.state === 'open' ? 'alert-open' : 'alert-resolved'}>
                <td><LevelBadge level={a.level} /></td>
                <td>
                  <button type="button" class="link" aria-expanded={open === a.id} onClick={() => setOpen(open === a.id ? null : a.id)}>{a.title}</button>
                  {a.source === 'code' && <span class="muted small"> (from the code)</span>}
                </td>
                {showRun && <td><Link href={linkTo(state, { run: a.run, group: '', alerts: false, tab: 'alerts' })}>{a.run}</Link></td>}
                <td>{a.writer || <span class="muted">run</span>}</td>
                <td class="evidence">{evidenceSummary(a)}</td>
                <td title={fmtTime(a.opened_ms)}>{fmtAgo(a.opened_ms, now)}</td>
                <td class="num" title={`last seen ${fmtTime(a.last_seen_ms)}`}>{a.count}</td>
                <td>
                  {a.state === 'open' ? 'open' : <span title={fmtTime(a.resolved_ms)}>resolved {fmtAgo(a.resolved_ms, now)}</span>}
                  {a.acked_ms ? <span class="muted small" title={fmtTime(a.acked_ms)}> · acked by {a.acked_by}</span> : null}
                </td>
                <td>{!a.acked_ms && a.state === 'open' && <button type="button" class="small" onClick={() => ack(a)} aria-label={`acknowledge ${a.title}`}>Ack</button>}</td>
              </tr>
              {open === a.id && (
                <tr class="alert-detail">
                  <td colSpan={showRun ? 9 : 8}>
                    {a.text && <pre class="alert-text">{a.text}</pre>}
                    <pre class="mono small" data-testid="alert-evidence">{JSON.stringify(a.evidence, null, 2)}</pre>
                    <AlertDeliveries state={state} alertId={a.id} />
                    <div class="muted small">condition {a.condition}{a.rule_id !== null ? ` · rule ${a.rule_id}` : ''} · last seen {fmtTime(a.last_seen_ms)}</div>
                  </td>
                </tr>
              )}
            </Fragment>
          ))}
        </tbody>
      </table>
    </>
  );
}

// ---- rules ---------------------------------------------------------------------------------

function RulesSection({ state }: { state: AppState }) {
  const { entity, project } = state;
  const rules = useLoad((signal) => api.alertRules(entity, project, signal), [entity, project]);
  const [editing, setEditing] = useState<number | 'new' | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const toggle = async (r: AlertRule) => {
    try {
      await api.updateAlertRule(entity, project, r.id, { name: r.name, kind: r.kind, spec: r.spec, level: r.level, enabled: !r.enabled });
      setErr(null);
      rules.reload();
    } catch (e) { setErr(e); }
  };
  const del = async (r: AlertRule) => {
    try { await api.deleteAlertRule(entity, project, r.id); setErr(null); rules.reload(); } catch (e) { setErr(e); }
  };
  return (
    <section class="card rules" aria-label="alert rules">
      <h2>Rules</h2>
      <p class="muted small">Evaluated as data arrives. One alert stays open per rule, run and writer until the condition clears.</p>
      {err ? <ErrorBox error={err} /> : null}
      {rules.error && !rules.data ? <ErrorBox error={rules.error} retry={rules.reload} /> : !rules.data ? <Loading what="rules" /> : (
        <table class="table" data-testid="rules">
          <thead><tr><th>On</th><th>Name</th><th>Condition</th><th>Level</th><th /></tr></thead>
          <tbody>
            {rules.data.map((r) => (editing === r.id
              ? <tr key={r.id}><td colSpan={5}><RuleForm state={state} initial={ruleToDraft(r)} id={r.id} onDone={() => { setEditing(null); rules.reload(); }} /></td></tr>
              : (
                <tr key={r.id} data-rule={r.name}>
                  <td><input type="checkbox" checked={r.enabled} aria-label={`${r.enabled ? 'disable' : 'enable'} ${r.name}`} onChange={() => toggle(r)} /></td>
                  <td>{r.name}{r.builtin && <span class="muted small"> (default)</span>}</td>
                  <td>{describeRule(r)}</td>
                  <td><LevelBadge level={r.level} /></td>
                  <td>
                    <button type="button" class="small" onClick={() => setEditing(r.id)}>Edit</button>{' '}
                    <button type="button" class="small danger" onClick={() => del(r)} aria-label={`delete rule ${r.name}`}>Delete</button>
                  </td>
                </tr>
              )))}
          </tbody>
        </table>
      )}
      {editing === 'new'
        ? <RuleForm state={state} initial={emptyDraft()} onDone={() => { setEditing(null); rules.reload(); }} />
        : <button type="button" class="small primary" onClick={() => setEditing('new')}>New rule</button>}
    </section>
  );
}

function RuleForm({ state, initial, id, onDone }: { state: AppState; initial: RuleDraft; id?: number; onDone: () => void }) {
  const [d, setD] = useState<RuleDraft>(initial);
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const set = (patch: Partial<RuleDraft>) => setD({ ...d, ...patch });
  const text = (field: keyof RuleDraft, label: string, placeholder = '') => (
    <label>{label}{' '}
      <input type="text" aria-label={label} value={d[field] as string} placeholder={placeholder}
        onInput={(e) => set({ [field]: (e.target as HTMLInputElement).value } as Partial<RuleDraft>)} />
    </label>
  );
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const body = draftToInput(d);
      if (id === undefined) await api.createAlertRule(state.entity, state.project, body);
      else await api.updateAlertRule(state.entity, state.project, id, body);
      setErr(null);
      onDone();
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="rule-form builder-form" onSubmit={submit} aria-label={id === undefined ? 'new rule' : 'edit rule'}>
      {text('name', 'Name', 'loss too high')}
      <label>Kind{' '}
        <select aria-label="kind" value={d.kind} onChange={(e) => {
          const kind = (e.target as HTMLSelectElement).value as AlertRuleKind;
          setD({ ...emptyDraft(kind), name: d.name, enabled: d.enabled });
        }}>
          {RULE_KINDS.map((k) => <option key={k.kind} value={k.kind}>{k.label}</option>)}
        </select>
      </label>
      {(d.kind === 'metric_threshold' || d.kind === 'metric_nonfinite' || d.kind === 'stale_metric') && text('key', 'Key', 'loss, eval/*')}
      {d.kind === 'metric_threshold' && (
        <>
          <label>Op{' '}
            <select aria-label="op" value={d.op} onChange={(e) => set({ op: (e.target as HTMLSelectElement).value })}>
              {THRESHOLD_OPS.map((o) => <option key={o} value={o}>{o}</option>)}
            </select>
          </label>
          {text('value', 'Value', '10')}
          {text('afterStep', 'After step', 'optional')}
        </>
      )}
      {d.kind === 'stale_metric' && text('minutes', 'Minutes')}
      {d.kind === 'hung' && <>{text('factor', 'Factor')}{text('minMinutes', 'Min minutes')}</>}
      {d.kind === 'straggler' && (
        <>
          {text('z', 'z', 'server default')}
          {text('ratio', 'Ratio', 'server default')}
          {text('lagRatio', 'Lag ratio', 'server default')}
          {text('window', 'Window (steps)', 'server default')}
          {text('minWriters', 'Min writers', '3')}
          <label><input type="checkbox" checked={d.desync} onChange={() => set({ desync: !d.desync })} /> desync</label>
          {text('forMinutes', 'For minutes')}
        </>
      )}
      {d.kind === 'gpu_underused' && (
        <>
          {text('ratio', 'Ratio')}
          {text('minUtil', 'Min util %')}
          {text('minWriters', 'Min writers', '2')}
          {text('forMinutes', 'For minutes')}
        </>
      )}
      {d.kind === 'writer_state' && (
        <fieldset class="states">
          <legend>When a writer ends</legend>
          {WRITER_END_STATES.map((s) => (
            <label key={s}><input type="checkbox" checked={d.states.includes(s)}
              onChange={() => set({ states: d.states.includes(s) ? d.states.filter((x) => x !== s) : [...d.states, s] })} /> {s}</label>
          ))}
        </fieldset>
      )}
      <label>Level{' '}
        <select aria-label="rule level" value={d.level} onChange={(e) => set({ level: (e.target as HTMLSelectElement).value as AlertLevel })}>
          {LEVELS.map((l) => <option key={l} value={l}>{l}</option>)}
        </select>
      </label>
      <label><input type="checkbox" checked={d.enabled} onChange={() => set({ enabled: !d.enabled })} /> enabled</label>
      <button type="submit" class="small primary" disabled={busy || !d.name.trim()}>{id === undefined ? 'Create rule' : 'Save rule'}</button>
      <button type="button" class="small" onClick={onDone}>Cancel</button>
      {err ? <ErrorBox error={err} /> : null}
    </form>
  );
}

/** The workspace header's link to the alerts page, with the open count. */
export function AlertsLink({ open }: { open: number }) {
  return (
    <button type="button" class={open ? 'small alerts-link has-open' : 'small alerts-link'} data-testid="alerts-link"
      onClick={() => update({ alerts: true })}>
      Alerts{open ? ` (${open} open)` : ''}
    </button>
  );
}
