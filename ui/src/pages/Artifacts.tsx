// Artifacts (docs/artifacts.md, docs/ui.md): a run's Artifacts tab (the versions it logged and
// used), the artifact page (a collection's versions; the selected version's files with downloads,
// metadata, description and lineage: producing run -> version -> runs that used it), and the
// project's collections for the workspace sidebar.
import { useState } from 'preact/hooks';
import {
  api, type ArtifactCollection, type ArtifactDetail, type ArtifactFile, type ArtifactVersion, type LineageEdge, type RunArtifact, type RunDetail,
} from '../lib/api';
import { flatten, fmtAgo, fmtBytes, fmtTime, naturalCompare } from '../lib/format';
import { fullText } from '../lib/rundiff';
import { linkTo, type AppState } from '../lib/url';
import { Empty, ErrorBox, Link, Loading, useLoad } from '../components/common';

/** Link to a version's page (`ver` '' shows the latest). */
export function artifactHref(state: AppState, project: string, name: string, ver: string): string {
  return linkTo(state, { project, run: '', group: '', art: name, ver });
}

function runHref(state: AppState, project: string, run: string): string {
  return linkTo(state, { project, run, group: '', art: '', ver: '' });
}

/** `cohort artifact get` of one version (the version, never an alias that may move). */
export function getCommand(v: { entity: string; project: string; name: string; version: string }): string {
  return `cohort artifact get ${v.entity}/${v.project}/${v.name}:${v.version}`;
}

function Aliases({ aliases }: { aliases: string[] }) {
  if (!aliases?.length) return <span class="muted">—</span>;
  return <>{aliases.map((a) => <span key={a} class={a === 'latest' ? 'chip alias alias-latest' : 'chip alias'} data-alias={a}>{a}</span>)}</>;
}

// ---- the run page's Artifacts tab ------------------------------------------------------------

export function RunArtifactsTab({ r, state, tick }: { r: RunDetail; state: AppState; tick: number }) {
  const list = useLoad((signal) => api.runArtifacts(r.entity, r.project, r.id, signal), [r.entity, r.project, r.id], 0, [tick]);
  if (list.error && !list.data) return <ErrorBox error={list.error} retry={list.reload} />;
  if (!list.data) return <Loading what="artifacts" />;
  const outputs = list.data.filter((a) => a.direction === 'output');
  const inputs = list.data.filter((a) => a.direction === 'input');
  if (!outputs.length && !inputs.length) {
    return <Empty>This run has logged and used no artifacts (<code>run.log_artifact(…)</code>, <code>run.use_artifact(…)</code>).</Empty>;
  }
  return (
    <div class="run-artifacts" data-testid="run-artifacts">
      <RunArtifactTable title="Logged by this run" rows={outputs} state={state} direction="output" />
      <RunArtifactTable title="Used by this run" rows={inputs} state={state} direction="input" />
    </div>
  );
}

function RunArtifactTable({ title, rows, state, direction }: { title: string; rows: RunArtifact[]; state: AppState; direction: 'output' | 'input' }) {
  const sorted = [...rows].sort((a, b) => naturalCompare(a.name, b.name) || a.index - b.index);
  return (
    <section data-testid={`run-artifacts-${direction}`}>
      <h2>{title} <span class="muted small">{rows.length}</span></h2>
      {!rows.length ? <Empty>None.</Empty> : (
        <table class="table artifacts">
          <thead><tr><th>Artifact</th><th>Type</th><th>Aliases</th><th class="num">Files</th><th class="num">Size</th><th>Digest</th><th>{direction === 'output' ? 'Logged' : 'Used'}</th><th>Writer</th></tr></thead>
          <tbody>
            {sorted.map((a) => (
              <tr key={`${a.project}/${a.name}:${a.version}`} data-artifact={`${a.name}:${a.version}`} data-direction={a.direction}>
                <td class="mono"><Link href={artifactHref(state, a.project, a.name, a.version)}>{a.name}:{a.version}</Link>
                  {a.project !== state.project ? <span class="muted small"> in {a.project}</span> : null}</td>
                <td>{a.type}</td>
                <td><Aliases aliases={a.aliases} /></td>
                <td class="num">{a.file_count}</td>
                <td class="num">{fmtBytes(a.size)}</td>
                <td class="mono muted" title={a.digest}>{a.digest.slice(0, 12)}</td>
                <td title={fmtTime(a.used_ms)}>{fmtAgo(a.used_ms)}</td>
                <td class="mono">{a.used_by_writer ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

// ---- the workspace's list of collections -----------------------------------------------------

export function ProjectArtifacts({ state }: { state: AppState }) {
  const list = useLoad((signal) => api.artifactCollections(state.entity, state.project, signal), [state.entity, state.project]);
  const cols: ArtifactCollection[] = list.data ?? [];
  return (
    <section class="sidebar-artifacts" data-testid="artifact-collections">
      <h2>Artifacts</h2>
      {list.error && !list.data ? <ErrorBox error={list.error} retry={list.reload} /> : !list.data ? <Loading /> : !cols.length ? (
        <div class="muted">No artifacts. Versions logged with <code>run.log_artifact(…)</code> appear here.</div>
      ) : (
        <ul class="groups">
          {[...cols].sort((a, b) => naturalCompare(a.name, b.name)).map((c) => (
            <li key={c.name} class="group-item" data-collection={c.name}>
              <div class="group-row">
                <Link href={artifactHref(state, state.project, c.name, '')} class="group-name">{c.name}</Link>
                <span class="muted small">{c.type}</span>
                <span class="count">{c.version_count} version{c.version_count === 1 ? '' : 's'}</span>
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

// ---- the artifact page ----------------------------------------------------------------------

export function ArtifactPage({ state }: { state: AppState }) {
  const { entity, project, art } = state;
  const ver = state.ver || 'latest';
  const versions = useLoad((signal) => api.artifactVersions(entity, project, art, signal), [entity, project, art]);
  const detail = useLoad((signal) => api.artifact(entity, project, art, ver, signal), [entity, project, art, ver]);
  const d = detail.data;
  // Run names for the versions' and the lineage's runs (ids are shown until they come, and when a
  // run cannot be read); at most 50 runs are looked up.
  const runs = new Map<string, { project: string; run: string }>();
  for (const v of versions.data ?? []) if (v.run) runs.set(`${v.project}/${v.run}`, { project: v.project, run: v.run });
  for (const e of d ? [...(d.produced_by ? [d.produced_by] : []), ...d.used_by] : []) runs.set(`${e.project}/${e.run}`, e);
  const runKeys = [...runs.keys()].sort().slice(0, 50);
  const names = useLoad(async (signal) => {
    const out: RunNames = {};
    await Promise.all(runKeys.map(async (k) => {
      const { project: p, run } = runs.get(k)!;
      try { const r = await api.run(entity, p, run, signal); out[k] = r.name || r.id; } catch { /* shown by id */ }
    }));
    return out;
  }, [entity, runKeys.join(',')]).data ?? {};
  return (
    <div class="page artifact-page" data-testid="artifact-page">
      <header class="run-head">
        <h1><span class="artifact-title"><span class="mono">{art}</span>{d ? <span class="mono" data-testid="artifact-version">:{d.version}</span> : null}</span>
          {d ? <><span class="chip" title="type">{d.type}</span><span><Aliases aliases={d.aliases} /></span></> : null}</h1>
        {d ? <VersionFacts d={d} state={state} names={names} /> : null}
      </header>
      <div class="artifact-layout">
        <VersionList state={state} names={names} versions={versions.data} error={versions.error} reload={versions.reload} shown={d?.version ?? ''} />
        <div class="artifact-main">
          {detail.error ? <ErrorBox error={detail.error} retry={detail.reload} /> : !d ? <Loading what="version" /> : <VersionDetail d={d} state={state} names={names} />}
        </div>
      </div>
    </div>
  );
}

/** Run names by `project/run`. */
type RunNames = Record<string, string>;

function RunLink({ state, project, run, names }: { state: AppState; project: string; run: string; names: RunNames }) {
  return <Link href={runHref(state, project, run)} title={`run ${run}`}>{names[`${project}/${run}`] ?? run}</Link>;
}

function VersionFacts({ d, state, names }: { d: ArtifactDetail; state: AppState; names: RunNames }) {
  return (
    <dl class="facts">
      <div><dt>digest</dt><dd class="mono" title={d.digest}>{d.digest.slice(0, 16)}…</dd></div>
      <div><dt>size</dt><dd data-testid="artifact-size">{fmtBytes(d.size)}</dd></div>
      <div><dt>files</dt><dd>{d.file_count}</dd></div>
      <div><dt>created</dt><dd title={fmtTime(d.created_ms)}>{fmtTime(d.created_ms)}</dd></div>
      <div><dt>logged by</dt><dd data-testid="artifact-logged-by">{d.produced_by ? <RunLink state={state} project={d.produced_by.project} run={d.produced_by.run} names={names} /> : d.run ? <RunLink state={state} project={d.project} run={d.run} names={names} /> : '—'}
        {d.writer ? <span class="muted small"> ({d.writer})</span> : null}</dd></div>
    </dl>
  );
}

function VersionList({ state, names, versions, error, reload, shown }: { state: AppState; names: RunNames; versions: ArtifactVersion[] | null; error: unknown; reload: () => void; shown: string }) {
  return (
    <aside class="artifact-versions" aria-label="versions">
      <h2>Versions {versions ? <span class="muted small">{versions.length}</span> : null}</h2>
      {error && !versions ? <ErrorBox error={error} retry={reload} /> : !versions ? <Loading /> : !versions.length ? <Empty>No versions.</Empty> : (
        <table class="table versions" data-testid="artifact-versions">
          <thead><tr><th>Version</th><th>Aliases</th><th class="num">Size</th><th>Run</th><th>Created</th></tr></thead>
          <tbody>
            {versions.map((v) => (
              <tr key={v.version} data-version={v.version} class={v.version === shown ? 'selected' : ''} aria-current={v.version === shown ? 'true' : undefined}>
                <td class="mono"><Link href={artifactHref(state, v.project, v.name, v.version)}>{v.version}</Link></td>
                <td><Aliases aliases={v.aliases} /></td>
                <td class="num">{fmtBytes(v.size)}</td>
                <td data-run={v.run ?? ''}>{v.run ? <RunLink state={state} project={v.project} run={v.run} names={names} /> : '—'}</td>
                <td title={fmtTime(v.created_ms)}>{fmtAgo(v.created_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </aside>
  );
}

function VersionDetail({ d, state, names }: { d: ArtifactDetail; state: AppState; names: RunNames }) {
  const meta = flatten(d.metadata ?? {}).sort((a, b) => naturalCompare(a[0], b[0]));
  return (
    <>
      {d.description ? <section><h2>Description</h2><p class="notes" data-testid="artifact-description">{d.description}</p></section> : null}
      <Lineage d={d} state={state} names={names} />
      <Files d={d} />
      <section class="kv" data-testid="artifact-metadata">
        <h2>Metadata</h2>
        {!meta.length ? <Empty>No metadata.</Empty> : (
          <table class="table kv-table">
            <tbody>{meta.map(([k, v]) => <tr key={k} data-key={k}><th scope="row" class="mono">{k}</th><td class="mono">{fullText(v)}</td></tr>)}</tbody>
          </table>
        )}
      </section>
    </>
  );
}

/** Saves a blob under `name` through a temporary object URL. */
function saveBlob(blob: Blob, name: string) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function Files({ d }: { d: ArtifactDetail }) {
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState('');
  const cmd = getCommand(d);
  const download = async (e: MouseEvent, f: ArtifactFile) => {
    // The file's url needs the browser's key, which a plain link does not send.
    e.preventDefault();
    if (!f.url) return;
    setErr(null);
    setBusy(f.path);
    try {
      saveBlob(await api.blobAt(f.url), f.path.split('/').pop() || f.path);
    } catch (x) { setErr(x); } finally { setBusy(''); }
  };
  const files = [...d.files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return (
    <section data-testid="artifact-files">
      <h2>Files <span class="muted small">{d.files.length}</span></h2>
      <p class="muted small">Download one file below (up to 64 MB in the browser), or the whole version, each file checked against its SHA-256:
        {' '}<code data-testid="artifact-get-command" class="copyable">{cmd}</code>
        {' '}<button type="button" class="small" onClick={() => navigator.clipboard?.writeText(cmd)}>Copy</button></p>
      {err ? <ErrorBox error={err} /> : null}
      {!files.length ? <Empty>This version has no files.</Empty> : (
        <table class="table files">
          <thead><tr><th>Path</th><th class="num">Size</th><th>SHA-256 or reference</th></tr></thead>
          <tbody>
            {files.map((f) => (
              <tr key={f.path} data-file={f.path}>
                <td class="mono">{f.url
                  ? <a href={f.url} download={f.path.split('/').pop()} onClick={(e) => download(e as MouseEvent, f)}>{f.path}</a>
                  : f.path}{busy === f.path ? <span class="muted small"> downloading…</span> : null}</td>
                <td class="num" data-size={f.size ?? ''}>{fmtBytes(f.size)}</td>
                <td class="mono muted" title={f.sha256 ?? f.digest ?? ''}>{f.ref ? <>{f.ref}{f.digest ? ` (${f.digest})` : ''}</> : (f.sha256 ?? '').slice(0, 16)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Producing run -> this version -> the runs that used it, as boxes and arrows, each run box a
 * link to its run (by name once looked up). */
function Lineage({ d, state, names }: { d: ArtifactDetail; state: AppState; names: RunNames }) {
  const runBox = (e: LineageEdge, role: 'producer' | 'consumer') => {
    const name = names[`${e.project}/${e.run}`];
    return (
      <div key={`${e.project}/${e.run}/${e.writer ?? ''}`} class="lineage-node lineage-run card" data-role={role} data-run={e.run}>
        <div class="muted small">run{e.project !== d.project ? ` in ${e.project}` : ''}</div>
        <Link href={runHref(state, e.project, e.run)}>{name ?? e.run}</Link>
        {name && name !== e.run ? <div class="mono muted small">{e.run}</div> : null}
        <div class="muted small" title={fmtTime(e.used_ms)}>{role === 'producer' ? 'logged' : 'used'} {fmtAgo(e.used_ms)}{e.writer ? ` by ${e.writer}` : ''}</div>
      </div>
    );
  };
  return (
    <section data-testid="lineage">
      <h2>Lineage</h2>
      <div class="lineage">
        <div class="lineage-col">
          {d.produced_by ? runBox(d.produced_by, 'producer') : <div class="lineage-node card muted" data-role="producer">logged outside a run</div>}
        </div>
        <div class="lineage-arrow" aria-hidden="true">→</div>
        <div class="lineage-col">
          <div class="lineage-node lineage-version card" data-role="version">
            <div class="muted small">{d.type}</div>
            <strong class="mono">{d.name}:{d.version}</strong>
            <div><Aliases aliases={d.aliases} /></div>
          </div>
        </div>
        <div class="lineage-arrow" aria-hidden="true">→</div>
        <div class="lineage-col">
          {d.used_by.length ? d.used_by.map((e) => runBox(e, 'consumer')) : <div class="lineage-node card muted" data-role="none">no run has used it</div>}
        </div>
      </div>
    </section>
  );
}
