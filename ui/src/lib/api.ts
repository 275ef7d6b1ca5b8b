// The JSON API client (docs/api.md). Every call carries the browser's key; errors carry the
// server's message so that screens can show it as it is.

import type { Clause, Run, ViewSpec } from './filters';
import { toApiQuery } from './filters';
import { withSharedEdges, type ApiHistogram } from './histograms';
import { listParam } from './listParam';
import type { ApiSeries } from './series';

const KEY_STORAGE = 'cohort.key';

export class ApiError extends Error {
  /** `retryAfterMs`: how long the server asked to wait before trying again (its Retry-After, on a
   * 429 or 503), when it said. */
  constructor(public status: number, public code: string, message: string, public retryAfterMs?: number) {
    super(message);
  }
}

/** A Retry-After header in milliseconds: delay-seconds or an HTTP date; undefined when absent or
 * unreadable. */
export function parseRetryAfter(v: string | null | undefined, now = Date.now()): number | undefined {
  if (!v) return undefined;
  const t = v.trim();
  if (/^\d+$/.test(t)) return Number(t) * 1000;
  const at = Date.parse(t);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

export interface Writer {
  label: string;
  primary: boolean;
  update_finish_state: boolean;
  host: string;
  pid: number;
  gpu_ids: number[];
  state: string;
  exit_code: number | null;
  created_ms: number;
  heartbeat_ms: number;
  finished_ms: number | null;
  next_step: number;
  last_seq: number;
}

export interface RunDetail extends Run {
  writers: Writer[];
  metadata?: Record<string, unknown>;
}

export type AlertLevel = 'INFO' | 'WARN' | 'ERROR';
/** An alert (docs/api.md "Alerts"): raised by a rule of the project or by the training code. */
export interface Alert {
  id: number; entity: string; project: string; run: string; writer: string; rule_id: number | null;
  source: 'rule' | 'code'; condition: string; level: AlertLevel; title: string; text: string;
  evidence: Record<string, unknown>; state: 'open' | 'resolved'; opened_ms: number; resolved_ms: number | null;
  acked_ms: number | null; acked_by: string | null; last_seen_ms: number; count: number;
}
export type AlertRuleKind = 'writer_state' | 'metric_nonfinite' | 'metric_threshold' | 'stale_metric' | 'hung' | 'straggler' | 'gpu_underused';
export interface AlertRule {
  id: number; name: string; kind: AlertRuleKind | string; spec: Record<string, unknown>; level: AlertLevel;
  enabled: boolean; builtin: boolean; created_ms: number; updated_ms: number;
}
export type AlertRuleInput = Pick<AlertRule, 'name' | 'kind' | 'spec' | 'level' | 'enabled'>;
/** A webhook of the project's alerts (docs/api.md "Alert webhooks"); the secret is never shown. */
export interface AlertWebhook {
  id: number; name: string; url: string; format: 'generic' | 'slack' | 'discord'; min_level: AlertLevel;
  enabled: boolean; has_secret: boolean; created_ms: number;
}
export interface AlertWebhookInput {
  name: string; url: string; format: AlertWebhook['format']; min_level: AlertLevel; enabled: boolean;
  /** Absent: kept; '' or null: removed. */
  secret?: string | null;
}
export interface AlertDelivery {
  id: number; webhook_id: number; event_id: number; alert_id: number; event: 'opened' | 'resolved';
  state: 'pending' | 'delivered' | 'failed'; attempts: number; next_attempt_ms: number | null;
  last_status: number | null; last_error: string | null; delivered_ms: number | null; created_ms: number;
}
export interface WebhookTestResult { ok: boolean; status: number | null; error: string | null }
export interface AlertQuery { state?: 'open' | 'resolved'; level?: AlertLevel; run?: string; limit?: number }

export interface Project { entity: string; project: string; runs: number; created_ms: number; updated_ms: number }
export interface GroupInfo { group: string; runs: number; states: Record<string, number>; job_types: Record<string, number>; created_ms: number; updated_ms: number }
export interface SeriesInfo { key: string; writer: string; type?: 'scalar' | 'histogram' | 'image' | 'audio' | 'video' | 'table' | 'html' | string; count: number; min_step: number; max_step: number }
export interface View { id: number; name: string; spec: ViewSpec; created_ms: number; updated_ms: number }
export interface ConsoleLine { id: number; label: string; stream: 'stdout' | 'stderr'; time: number; text: string }
export interface ConsoleIndex { total: number; stride: number; cursors: number[]; last_id: number }
export type MediaType = 'image' | 'audio' | 'video' | 'html' | 'table';
export const MEDIA_TYPES: MediaType[] = ['image', 'audio', 'video', 'html', 'table'];
/** One media row (GET .../media): a blob of the run with its place and shape. */
export interface MediaRow {
  key: string; writer: string; step: number; index: number; time_ms: number; type: MediaType; mime: string;
  sha256: string; size: number; caption: string; uploaded: boolean; url: string;
  width?: number; height?: number; duration_ms?: number; nrows?: number; ncols?: number;
}
/** A page of a logged table (GET .../tables/{key}). */
export interface TablePage {
  key: string; writer: string; step: number; columns: string[]; nrows: number; ncols: number;
  offset: number; limit: number; data: unknown[][]; caption: string;
}
export interface RunFile { name: string; size: number; content_type: string; updated_ms: number; url: string }
/** Rank aggregation (docs/api.md "Rank aggregation"): a member is one (run, writer) series. */
export interface RankMember { run: string; writer: string; host: string; state?: string }
export interface RankBucket {
  step_min: number; step_max: number; time_min: number; time_max: number;
  count: number; members: number;
  min: number | string | null; max: number | string | null; mean: number | string | null; median: number | string | null; spread: number | string | null;
  min_member: number | null; max_member: number | null;
  outlier: { member: number; z: number | string } | null;
  values?: (number | string | null)[];
}
export interface RankAggregate { key: string; members: RankMember[]; bucket_width: number; exact: boolean; buckets: RankBucket[] }
export interface RankSignal { value: number | null; source?: string; n: number; z: number | null; ratio: number | null }
export interface StragglerMember extends RankMember {
  last_step: number | null; last_time: number | null;
  step_time: RankSignal | null; lag: RankSignal | null; gpu_util: RankSignal | null; throughput: RankSignal | null;
  flagged: boolean; reasons: string[];
}
export interface Stragglers {
  key: string; window: number;
  thresholds: Record<string, number>;
  members: StragglerMember[];
  stragglers: number[];
  desync: { flagged: boolean; step_gap: number; start_gap: number; reason: string; ahead?: number | null; behind?: number | null };
  matrix: { time_min: number; bucket_ms: number; times: number[]; step_time_ms: (number | null)[][]; gpu_util: (number | null)[][] | null };
}
/** Where rank routes look: one shared run's writers, or the writers of a group's runs. */
export type RankScope = { entity: string; project: string; run: string } | { entity: string; project: string; group: string };

export interface Viewer { entity: string; role: string; key_name: string }

/** Artifacts (docs/artifacts.md): a version of a collection, as listed. */
export interface ArtifactVersion {
  entity: string; project: string; name: string; type: string; version: string; index: number;
  digest: string; size: number; file_count: number; aliases: string[]; metadata: Record<string, unknown>;
  created_ms: number; description: string | null; run: string | null; writer: string | null;
}
/** A file of a version: a stored blob (`sha256`, `url` a server path) or a reference (`ref`). */
export interface ArtifactFile { path: string; size: number | null; sha256?: string; url?: string; ref?: string; digest?: string | null }
export interface LineageEdge { project: string; run: string; writer: string | null; used_ms: number }
export interface ArtifactDetail extends ArtifactVersion {
  files: ArtifactFile[];
  produced_by: LineageEdge | null;
  used_by: LineageEdge[];
}
export interface ArtifactCollection { name: string; type: string; version_count: number; created_ms: number; updated_ms: number; latest: ArtifactVersion | null }
/** A version a run logged (`output`) or used (`input`). */
export interface RunArtifact extends ArtifactVersion { direction: 'output' | 'input'; used_ms: number; used_by_writer: string | null }

export interface RangeQuery {
  min_step?: number;
  max_step?: number;
  min_time?: number;
  max_time?: number;
  buckets?: number;
}

type Listener = () => void;

export class Api {
  private key: string | null;
  private unauthListeners = new Set<Listener>();
  /** Requests made (for tests and the bench). */
  requests = 0;

  constructor(private base = '') {
    this.key = readKey();
  }

  hasKey(): boolean { return !!this.key; }

  setKey(key: string | null) {
    this.key = key;
    try {
      if (key) localStorage.setItem(KEY_STORAGE, key); else localStorage.removeItem(KEY_STORAGE);
    } catch { /* storage disabled: the key lives for this page only */ }
  }

  onUnauthenticated(l: Listener): () => void {
    this.unauthListeners.add(l);
    return () => this.unauthListeners.delete(l);
  }

  request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    return this.send<T>(method, path, body, signal, true);
  }

  /** One call. `withKey`: it carries the stored key, and a 401 is that key's (onUnauthenticated
   * fires); false for the login exchange, which needs no key and whose 401 is about the token. */
  private async send<T>(method: string, path: string, body: unknown, signal: AbortSignal | undefined, withKey: boolean): Promise<T> {
    const headers: Record<string, string> = {};
    if (withKey && this.key) headers.Authorization = `Bearer ${this.key}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    this.requests++;
    let resp: Response;
    try {
      resp = await fetch(this.base + path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal,
      });
    } catch (e) {
      if ((e as Error).name === 'AbortError') throw e;
      throw new ApiError(0, 'unavailable', `cannot reach the server (${(e as Error).message})`);
    }
    const text = await resp.text();
    let json: any = null;
    if (text) {
      try { json = JSON.parse(text); } catch { /* not JSON: reported below */ }
    }
    if (!resp.ok) {
      const err = json?.error;
      const e = new ApiError(resp.status, err?.code ?? 'error', err?.message ?? `${resp.status} ${resp.statusText}`,
        resp.status === 429 || resp.status === 503 ? parseRetryAfter(resp.headers.get('Retry-After')) : undefined);
      if (resp.status === 401 && withKey) this.unauthListeners.forEach((l) => l());
      throw e;
    }
    if (json === null) throw new ApiError(resp.status, 'invalid_response', `${path}: the server did not answer JSON`);
    return json as T;
  }

  get<T>(path: string, signal?: AbortSignal) { return this.request<T>('GET', path, undefined, signal); }

  /** Exchanges the one-time token of `cohort server`'s link for a session key, and keeps it (only
   * once the user confirmed the link: App.tsx's ConfirmLink). The exchange sends no key, and its
   * 401 (a used, expired or unknown token) says nothing about the stored key: onUnauthenticated
   * does not fire and the stored key stays; the caller says that the link failed. */
  async login(token: string): Promise<void> {
    const r = await this.send<{ key: string }>('POST', '/api/v1/sessions', { token }, undefined, false);
    this.setKey(r.key);
  }

  viewer() { return this.get<Viewer>('/api/v1/viewer'); }
  projects() { return this.get<{ projects: Project[] }>('/api/v1/projects').then((r) => r.projects); }

  runsPage(entity: string, project: string, q: { filters?: Clause[]; sort?: string; limit?: number; cursor?: string }, signal?: AbortSignal) {
    let qs = toApiQuery({ filters: q.filters ?? [], sort: q.sort, limit: q.limit });
    if (q.cursor) qs += (qs ? '&' : '') + 'cursor=' + encodeURIComponent(q.cursor);
    return this.get<{ runs: Run[]; next_cursor: string | null; total: number }>(
      `/api/v1/runs/${enc(entity)}/${enc(project)}${qs ? '?' + qs : ''}`, signal);
  }

  run(entity: string, project: string, run: string, signal?: AbortSignal) {
    return this.get<RunDetail>(runPath(entity, project, run), signal);
  }

  groups(entity: string, project: string) {
    return this.get<{ groups: GroupInfo[] }>(`/api/v1/groups/${enc(entity)}/${enc(project)}`).then((r) => r.groups);
  }

  keys(entity: string, project: string, run: string, signal?: AbortSignal) {
    // Scalar series only: histogram and media keys (other types) are not line charts.
    return this.allKeys(entity, project, run, signal).then((ks) => ks.filter((k) => (k.type ?? 'scalar') === 'scalar'));
  }

  /** Every key of the run per writer, with its type (scalar, histogram, image, audio, video, html, table; readers skip others). */
  allKeys(entity: string, project: string, run: string, signal?: AbortSignal) {
    return this.get<{ keys: SeriesInfo[] }>(runPath(entity, project, run) + '/keys', signal).then((r) => r.keys);
  }

  /** Histograms of a run over a step range, neighbouring steps merged into at most `buckets`. */
  histograms(entity: string, project: string, run: string, keys: string[], writers: string[], range: RangeQuery, signal?: AbortSignal) {
    const p = rangeParams(range);
    if (keys.length) p.set('keys', listParam(keys));
    if (writers.length) p.set('writers', listParam(writers));
    return this.get<{ histograms: ApiHistogram[] }>(`${runPath(entity, project, run)}/histograms?${p}`, signal).then((r) => r.histograms.map(withSharedEdges));
  }

  /** Media keys per writer (types image, audio, video, html, table). */
  mediaKeys(entity: string, project: string, run: string, signal?: AbortSignal) {
    return this.get<{ keys: SeriesInfo[] }>(runPath(entity, project, run) + '/keys', signal).then((r) =>
      r.keys.filter((k) => MEDIA_TYPES.includes(k.type as MediaType)),
    );
  }

  /** The media rows of `key` (every step and writer), in writer, step, index order; `truncated`:
   * the server cut the list at its row limit (later rows are missing). Rows of another key (none
   * from a server that reads `keys=` as listParam writes it) are dropped. */
  async media(entity: string, project: string, run: string, key: string, signal?: AbortSignal) {
    const qs = new URLSearchParams({ keys: listParam([key]) });
    const r = await this.get<{ media: MediaRow[]; truncated: boolean }>(`${runPath(entity, project, run)}/media?${qs}`, signal);
    return { media: r.media.filter((m) => m.key === key), truncated: !!r.truncated };
  }

  /** Rows [offset, offset + limit) of the table `key` at `step` of `writer`. */
  table(entity: string, project: string, run: string, key: string, step: number, writer: string, offset: number, limit: number, signal?: AbortSignal) {
    const p = new URLSearchParams({ step: String(step), writers: listParam([writer]), offset: String(offset), limit: String(limit) });
    return this.get<TablePage>(`${runPath(entity, project, run)}/tables/${key.split('/').map(enc).join('/')}?${p}`, signal);
  }

  history(entity: string, project: string, run: string, keys: string[], writers: string[], range: RangeQuery, signal?: AbortSignal) {
    const p = rangeParams(range);
    p.set('keys', listParam(keys));
    if (writers.length) p.set('writers', listParam(writers));
    return this.get<{ series: ApiSeries[] }>(`${runPath(entity, project, run)}/history?${p}`, signal).then((r) => r.series);
  }

  /** The series of several runs of a project at once (`GET /api/v1/series/...`). */
  seriesOfRuns(entity: string, project: string, runs: string[], signal?: AbortSignal) {
    const p = new URLSearchParams({ runs: listParam(runs) });
    return this.get<{ runs: { run: string; keys: SeriesInfo[] }[]; missing: string[] }>(
      `/api/v1/series/${enc(entity)}/${enc(project)}?${p}`, signal);
  }

  /** History (or system metrics) of several runs of a project in one request; each series names
   * its run. `keys` empty: every user key (system: every system key). */
  historyOfRuns(entity: string, project: string, system: boolean, runs: string[], keys: string[], writers: string[], range: RangeQuery, signal?: AbortSignal) {
    const p = rangeParams(range);
    p.set('runs', listParam(runs));
    if (keys.length) p.set('keys', listParam(keys));
    if (writers.length) p.set(system ? 'labels' : 'writers', listParam(writers));
    return this.get<{ series: ApiSeries[]; missing: string[] }>(`/api/v1/${system ? 'system' : 'history'}/${enc(entity)}/${enc(project)}?${p}`, signal);
  }

  system(entity: string, project: string, run: string, keys: string[], labels: string[], range: RangeQuery, signal?: AbortSignal) {
    const p = rangeParams(range);
    if (keys.length) p.set('keys', listParam(keys));
    if (labels.length) p.set('labels', listParam(labels));
    return this.get<{ series: ApiSeries[] }>(`${runPath(entity, project, run)}/system?${p}`, signal).then((r) => r.series);
  }

  console(entity: string, project: string, run: string, f: ConsoleFilter & { after?: number; limit?: number }, signal?: AbortSignal) {
    const p = consoleParams(f);
    if (f.after) p.set('after', String(f.after));
    if (f.limit) p.set('limit', String(f.limit));
    return this.get<{ lines: ConsoleLine[]; next_cursor: number | null }>(`${runPath(entity, project, run)}/console?${p}`, signal);
  }

  consoleIndex(entity: string, project: string, run: string, f: ConsoleFilter & { after?: number; stride: number }, signal?: AbortSignal) {
    const p = consoleParams(f);
    if (f.after) p.set('after', String(f.after));
    p.set('stride', String(f.stride));
    return this.get<ConsoleIndex>(`${runPath(entity, project, run)}/console/index?${p}`, signal);
  }

  files(entity: string, project: string, run: string, signal?: AbortSignal) {
    return this.get<{ files: RunFile[] }>(runPath(entity, project, run) + '/files', signal).then((r) => r.files);
  }

  /** A run file's bytes, fetched with the browser's key (a plain link carries no key). */
  fileBlob(entity: string, project: string, run: string, name: string): Promise<Blob> {
    return this.blobAt(`${runPath(entity, project, run)}/files/${name.split('/').map(enc).join('/')}`);
  }

  /** The bytes at a server path (a file's `url`), fetched with the browser's key. */
  async blobAt(path: string): Promise<Blob> {
    const headers: Record<string, string> = {};
    if (this.key) headers.Authorization = `Bearer ${this.key}`;
    this.requests++;
    const resp = await fetch(`${this.base}${path}`, { headers });
    if (!resp.ok) {
      let msg = `${resp.status} ${resp.statusText}`, code = 'error';
      try { const j = JSON.parse(await resp.text()); msg = j?.error?.message ?? msg; code = j?.error?.code ?? code; } catch { /* not JSON */ }
      if (resp.status === 401) this.unauthListeners.forEach((l) => l());
      throw new ApiError(resp.status, code, msg);
    }
    return resp.blob();
  }

  ranksAggregate(scope: RankScope, q: { key: string; buckets: number; writers?: string[]; min_step?: number; max_step?: number; per_member?: boolean }, signal?: AbortSignal) {
    const p = new URLSearchParams({ key: q.key, buckets: String(Math.max(1, Math.min(10000, Math.round(q.buckets)))) });
    if (q.writers?.length) p.set('writers', listParam(q.writers));
    if (q.min_step !== undefined) p.set('min_step', String(Math.floor(q.min_step)));
    if (q.max_step !== undefined) p.set('max_step', String(Math.ceil(q.max_step)));
    if (q.per_member) p.set('per_member', '1');
    return this.get<RankAggregate>(`${rankBase(scope)}/aggregate?${rankScopeParams(scope, p)}`, signal);
  }

  stragglers(scope: RankScope, q: { key?: string; columns?: number; window?: number } = {}, signal?: AbortSignal) {
    const p = new URLSearchParams();
    if (q.key) p.set('key', q.key);
    if (q.columns) p.set('columns', String(q.columns));
    if (q.window) p.set('window', String(q.window));
    return this.get<Stragglers>(`${rankBase(scope)}/stragglers?${rankScopeParams(scope, p)}`, signal);
  }

  artifactCollections(entity: string, project: string, signal?: AbortSignal) {
    return this.get<{ collections: ArtifactCollection[] }>(`/api/v1/artifacts/${enc(entity)}/${enc(project)}`, signal).then((r) => r.collections);
  }
  artifactVersions(entity: string, project: string, name: string, signal?: AbortSignal) {
    return this.get<{ versions: ArtifactVersion[] }>(`${artifactPath(entity, project, name)}/versions`, signal).then((r) => r.versions);
  }
  /** One version, by `v<N>` or an alias. */
  artifact(entity: string, project: string, name: string, version: string, signal?: AbortSignal) {
    return this.get<ArtifactDetail>(`${artifactPath(entity, project, name)}/${enc(version)}`, signal);
  }
  runArtifacts(entity: string, project: string, run: string, signal?: AbortSignal) {
    return this.get<{ artifacts: RunArtifact[] }>(runPath(entity, project, run) + '/artifacts', signal).then((r) => r.artifacts);
  }

  alerts(entity: string, project: string, q: AlertQuery = {}, signal?: AbortSignal) {
    const p = new URLSearchParams();
    if (q.state) p.set('state', q.state);
    if (q.level) p.set('level', q.level);
    if (q.run) p.set('run', q.run);
    if (q.limit) p.set('limit', String(q.limit));
    const qs = p.toString();
    return this.get<{ alerts: Alert[] }>(`/api/v1/alerts/${enc(entity)}/${enc(project)}${qs ? `?${qs}` : ''}`, signal).then((r) => r.alerts);
  }
  ackAlert(entity: string, project: string, id: number) {
    return this.request<Alert>('POST', `/api/v1/alerts/${enc(entity)}/${enc(project)}/${id}/ack`);
  }
  alertRules(entity: string, project: string, signal?: AbortSignal) {
    return this.get<{ rules: AlertRule[] }>(`/api/v1/alert-rules/${enc(entity)}/${enc(project)}`, signal).then((r) => r.rules);
  }
  createAlertRule(entity: string, project: string, rule: AlertRuleInput) {
    return this.request<AlertRule>('POST', `/api/v1/alert-rules/${enc(entity)}/${enc(project)}`, rule);
  }
  updateAlertRule(entity: string, project: string, id: number, rule: AlertRuleInput) {
    return this.request<AlertRule>('PUT', `/api/v1/alert-rules/${enc(entity)}/${enc(project)}/${id}`, rule);
  }
  deleteAlertRule(entity: string, project: string, id: number) {
    return this.request<{ deleted: boolean }>('DELETE', `/api/v1/alert-rules/${enc(entity)}/${enc(project)}/${id}`);
  }

  alertWebhooks(entity: string, project: string, signal?: AbortSignal) {
    return this.get<{ webhooks: AlertWebhook[] }>(`/api/v1/alert-webhooks/${enc(entity)}/${enc(project)}`, signal).then((r) => r.webhooks);
  }
  createAlertWebhook(entity: string, project: string, w: AlertWebhookInput) {
    return this.request<AlertWebhook>('POST', `/api/v1/alert-webhooks/${enc(entity)}/${enc(project)}`, w);
  }
  updateAlertWebhook(entity: string, project: string, id: number, w: AlertWebhookInput) {
    return this.request<AlertWebhook>('PUT', `/api/v1/alert-webhooks/${enc(entity)}/${enc(project)}/${id}`, w);
  }
  deleteAlertWebhook(entity: string, project: string, id: number) {
    return this.request<{ deleted: boolean }>('DELETE', `/api/v1/alert-webhooks/${enc(entity)}/${enc(project)}/${id}`);
  }
  testAlertWebhook(entity: string, project: string, id: number) {
    return this.request<WebhookTestResult>('POST', `/api/v1/alert-webhooks/${enc(entity)}/${enc(project)}/${id}/test`);
  }
  /** The deliveries of one webhook, or (webhookId null) the project's, of one alert when `alert` is given. */
  alertDeliveries(entity: string, project: string, webhookId: number | null, alert?: number, signal?: AbortSignal) {
    const base = `/api/v1/alert-webhooks/${enc(entity)}/${enc(project)}`;
    const path = webhookId === null ? `${base}/deliveries${alert !== undefined ? `?alert=${alert}` : ''}` : `${base}/${webhookId}/deliveries`;
    return this.get<{ deliveries: AlertDelivery[] }>(path, signal).then((r) => r.deliveries);
  }

  views(entity: string, project: string) {
    return this.get<{ views: View[] }>(`/api/v1/views/${enc(entity)}/${enc(project)}`).then((r) => r.views);
  }
  createView(entity: string, project: string, name: string, spec: ViewSpec) {
    return this.request<View>('POST', `/api/v1/views/${enc(entity)}/${enc(project)}`, { name, spec });
  }
  /** Saves `spec` over the version `updatedMs` of the view (its updated_ms as loaded): 409 when another edit came first. */
  updateView(entity: string, project: string, id: number, name: string, spec: ViewSpec, updatedMs: number) {
    return this.request<View>('PUT', `/api/v1/views/${enc(entity)}/${enc(project)}/${id}`, { name, spec, updated_ms: updatedMs });
  }
  deleteView(entity: string, project: string, id: number) {
    return this.request<{ deleted: boolean }>('DELETE', `/api/v1/views/${enc(entity)}/${enc(project)}/${id}`);
  }
}

export interface ConsoleFilter { labels?: string[]; stream?: string; q?: string }

function consoleParams(f: ConsoleFilter): URLSearchParams {
  const p = new URLSearchParams();
  if (f.labels?.length) p.set('labels', listParam(f.labels));
  if (f.stream) p.set('stream', f.stream);
  if (f.q) p.set('q', f.q);
  return p;
}

function rangeParams(r: RangeQuery): URLSearchParams {
  const p = new URLSearchParams();
  for (const k of ['min_step', 'max_step', 'min_time', 'max_time', 'buckets'] as const) {
    const v = r[k];
    if (v !== undefined && Number.isFinite(v)) p.set(k, String(Math.round(v)));
  }
  return p;
}

function rankBase(s: RankScope): string {
  return 'run' in s ? `${runPath(s.entity, s.project, s.run)}/ranks` : `/api/v1/groups/${enc(s.entity)}/${enc(s.project)}/ranks`;
}

function rankScopeParams(s: RankScope, p: URLSearchParams): string {
  if ('group' in s) p.set('group', s.group);
  return p.toString();
}

const enc = encodeURIComponent;
function runPath(e: string, p: string, r: string) { return `/api/v1/runs/${enc(e)}/${enc(p)}/${enc(r)}`; }
function artifactPath(e: string, p: string, n: string) { return `/api/v1/artifacts/${enc(e)}/${enc(p)}/${enc(n)}`; }

function readKey(): string | null {
  try { return localStorage.getItem(KEY_STORAGE); } catch { return null; }
}

export const api = new Api();
