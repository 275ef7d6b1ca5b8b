// The app shell: the login link of `cohort server` (redeemed only once the user confirms), the
// pasted-key login for remote users, the header with breadcrumbs, and the page the URL names.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Viewer } from './lib/api';
import { navigate, useAppState } from './lib/nav';
import { encodeState, linkTo, pageOf } from './lib/url';
import { Empty, ErrorBox, Link, Loading } from './components/common';
import { ProjectsPage } from './pages/Projects';
import { WorkspacePage } from './pages/Workspace';
import { GroupPage } from './pages/Group';
import { RunPage } from './pages/Run';
import { ArtifactPage } from './pages/Artifacts';
import { ProjectAlertsPage } from './pages/Alerts';
import { ComparePage } from './pages/Compare';

type Auth =
  | { kind: 'checking' }
  | { kind: 'ok'; viewer: Viewer }
  | { kind: 'login'; message?: string }
  // A `?token=` link waiting for the user's click: `signedIn` when the browser holds a key the
  // server accepted (or could not check), `current` who that key is (when the server said).
  // `failed`: "Sign in" was clicked and the link did not work (the message); the stored key
  // still does, and the card offers to go on with it.
  | { kind: 'link'; token: string; signedIn: boolean; current?: Viewer; failed?: string };

/** Takes the login token out of the address bar (at once, before anything else). */
function takeToken(): string | null {
  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  if (token === null) return null;
  params.delete('token');
  const rest = params.toString();
  history.replaceState(null, '', location.pathname + (rest ? `?${rest}` : '') + location.hash);
  return token || null;
}

export function App() {
  const [auth, setAuth] = useState<Auth>({ kind: 'checking' });

  // The stored key: show the page at once and check the key alongside (a 401 from any call
  // brings the login screen back), saving a round trip before the first data request.
  const enter = async (known?: Viewer, wait = false) => {
    if (!api.hasKey()) { setAuth({ kind: 'login' }); return; }
    if (known) { setAuth({ kind: 'ok', viewer: known }); return; }
    if (!wait) setAuth({ kind: 'ok', viewer: { entity: '', role: '', key_name: '' } });
    try {
      setAuth({ kind: 'ok', viewer: await api.viewer() });
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) api.setKey(null);
      setAuth({ kind: 'login', message: (e as Error).message });
    }
  };

  useEffect(() => {
    const off = api.onUnauthenticated(() => setAuth({ kind: 'login', message: 'The server did not accept the stored key. Paste an API key, or open the link `cohort server` printed.' }));
    const token = takeToken();
    if (!token) { void enter(); return off; }
    // A login link never signs in by itself (anyone can send one: login CSRF): it asks first,
    // saying who is signed in now, if anyone.
    (async () => {
      let current: Viewer | undefined;
      if (api.hasKey()) {
        try {
          current = await api.viewer();
        } catch (e) {
          if (e instanceof ApiError && e.status === 401) api.setKey(null);
        }
      }
      setAuth({ kind: 'link', token, signedIn: api.hasKey(), current });
    })();
    return off;
  }, []);

  // "Sign in" on the card. A failure always says so (never a silent return to the stored key's
  // account, which the user just chose to replace): on the card with who is still signed in when
  // the stored key still works, else on the sign-in form.
  const redeem = async (token: string) => {
    try {
      await api.login(token);
    } catch (e) {
      const why = `The login link did not work: ${(e as Error).message.replace(/\.$/, '')}. It is valid once; open the newest link \`cohort server\` printed`;
      let current: Viewer | undefined;
      if (api.hasKey()) {
        try {
          current = await api.viewer();
        } catch (e2) {
          if (e2 instanceof ApiError && e2.status === 401) api.setKey(null);
        }
      }
      if (api.hasKey()) setAuth({ kind: 'link', token, signedIn: true, current, failed: `${why}.` });
      else setAuth({ kind: 'login', message: `${why}, or paste an API key.` });
      return;
    }
    await enter(undefined, true);
  };

  if (auth.kind === 'checking') return <Shell><Loading /></Shell>;
  if (auth.kind === 'link') {
    return (
      <Shell>
        <ConfirmLink signedIn={auth.signedIn} current={auth.current} failed={auth.failed}
          onSignIn={() => redeem(auth.token)} onCancel={() => void enter(auth.current)} />
      </Shell>
    );
  }
  if (auth.kind === 'login') return <Shell><Login message={auth.message} onDone={(viewer) => setAuth({ kind: 'ok', viewer })} /></Shell>;
  return <Main viewer={auth.viewer} onSignOut={() => { api.setKey(null); setAuth({ kind: 'login' }); }} />;
}

function Shell({ children }: { children: preact.ComponentChildren }) {
  return (
    <div class="app">
      <header class="topbar"><a class="brand" href="/">Cohort</a></header>
      <main class="main">{children}</main>
    </div>
  );
}

/** The question a `?token=` link asks before it signs this browser in (only the click redeems it);
 * after a failed "Sign in" (`failed`), the failure, who is still signed in, and a button to go on
 * as that account (no "Sign in" any more: the token is spent or bad). */
function ConfirmLink({ signedIn, current, failed, onSignIn, onCancel }: {
  signedIn: boolean; current?: Viewer; failed?: string; onSignIn: () => Promise<void>; onCancel: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const signIn = async (e: Event) => {
    e.preventDefault();
    if (failed) { onCancel(); return; }
    setBusy(true);
    try { await onSignIn(); } finally { setBusy(false); }
  };
  const who = current && (
    <><b>{current.entity}</b> ({current.role}, {current.key_name === 'browser-session' ? 'from a login link' : <>key <b>{current.key_name}</b></>})</>
  );
  if (failed) {
    return (
      <form class="login card" data-testid="login-link" onSubmit={signIn}>
        <h1>The login link did not work</h1>
        <p class="error" role="alert" data-testid="login-link-error">{failed}</p>
        <p class="notice" data-testid="login-link-current">
          {who ? <>This browser is still signed in as {who}.</> : <>This browser is still signed in with the key it had.</>}
        </p>
        <div class="actions">
          <button type="submit" class="primary">{current ? `Continue as ${current.entity}` : 'Continue'}</button>
        </div>
      </form>
    );
  }
  return (
    <form class="login card" data-testid="login-link" onSubmit={signIn}>
      <h1>Sign in with this link?</h1>
      <p>This link signs this browser in to the Cohort server at <code>{location.host}</code>, as the account it was made for.
        Continue only if you opened a link that <code>cohort server</code> or <code>cohort login-link</code> printed for you.</p>
      {signedIn && (
        <p class="notice" data-testid="login-link-current">
          {who ? <>This browser is signed in as {who}.</> : <>This browser is already signed in.</>}
          {' '}Signing in with the link replaces that session.
        </p>
      )}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>Sign in</button>
        <button type="button" disabled={busy} onClick={onCancel}>{signedIn ? 'Cancel' : 'Not now'}</button>
      </div>
    </form>
  );
}

function Login({ message, onDone }: { message?: string; onDone: (v: Viewer) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    api.setKey(key.trim());
    try {
      onDone(await api.viewer());
    } catch (err) {
      api.setKey(null);
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="login card" onSubmit={submit}>
      <h1>Sign in to Cohort</h1>
      {message && <p class="notice">{message}</p>}
      <p>On the machine that runs the server, open the link <code>cohort server</code> printed ("Open the web UI: …") and confirm with "Sign in".
        From elsewhere, paste an API key (<code>cohort keys create</code>); it is kept in this browser.</p>
      <label>API key <input type="password" autoComplete="off" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} placeholder="ck_…" autoFocus /></label>
      <button type="submit" class="primary" disabled={!key.trim() || busy}>Sign in</button>
      {error ? <ErrorBox error={error} /> : null}
    </form>
  );
}

/** The page for a link into an entity other than the viewer's (the workspace's wording for a
 * project nobody logged to). */
function NoSuchProject({ entity, project, viewer }: { entity: string; project: string; viewer: Viewer }) {
  return (
    <div class="page">
      <Empty>
        <span data-testid="no-such-project">No such project: <strong>{entity}/{project}</strong>.</span>{' '}
        This browser is signed in as <strong>{viewer.entity}</strong>, whose projects do not include it.{' '}
        <Link href="/">All projects</Link>
      </Empty>
    </div>
  );
}

function Main({ viewer, onSignOut }: { viewer: Viewer; onSignOut: () => void }) {
  const s = useAppState();
  const page = pageOf(s);
  // A key reads only its own entity's projects (the API answers 404 for any other): a link to
  // another entity's project or run (a W&B URL naming another entity, a link from another
  // account) says at once that there is no such project, once the viewer is known.
  const foreign = !!(s.entity && viewer.entity && s.entity !== viewer.entity);
  // A bare URL opens the viewer's projects.
  useEffect(() => {
    document.title = ['Cohort', s.project, s.group, s.run, s.art && `${s.art}:${s.ver || 'latest'}`].filter(Boolean).reverse().join(' · ');
  }, [s.project, s.group, s.run, s.art, s.ver]);
  return (
    <div class="app">
      <header class="topbar">
        {/* The first tab stop: straight to the runs (the table takes the arrow keys from there). */}
        {page === 'workspace' && (
          <a class="skip-link" href="#runs" onClick={(e) => { e.preventDefault(); window.dispatchEvent(new Event('cohort:focus-runs')); }}>Skip to the runs table</a>
        )}
        <Link class="brand" href="/">Cohort</Link>
        <nav class="crumbs" aria-label="breadcrumbs">
          {s.entity && <span class="crumb">{s.entity}</span>}
          {s.project && <Link href={linkTo(s, { run: '', group: '', project: s.project })}>{s.project}</Link>}
          {s.group && <span class="crumb">group <Link href={linkTo(s, { run: '', group: s.group })}>{s.group}</Link></span>}
          {s.run && !s.art && <span class="crumb">run {s.run}</span>}
          {s.alerts && !s.run && !s.group && <span class="crumb">alerts</span>}
          {page === 'compare' && <span class="crumb">compare {s.cmp.length} runs</span>}
          {s.art && <span class="crumb">artifact <Link href={linkTo(s, { art: s.art, ver: '' })}>{s.art}</Link></span>}
        </nav>
        <span class="spacer" />
        <span class="who" title={`key ${viewer.key_name}`}>{viewer.entity} · {viewer.role}</span>
        <button type="button" class="small" onClick={onSignOut}>Sign out</button>
      </header>
      <main class="main">
        {foreign ? <NoSuchProject entity={s.entity} project={s.project} viewer={viewer} /> : <>
        {page === 'projects' && <ProjectsPage viewer={viewer} />}
        {page === 'workspace' && <WorkspacePage key={`${s.entity}/${s.project}`} state={s} />}
        {page === 'group' && <GroupPage key={`${s.entity}/${s.project}/${s.group}`} state={s} />}
        {page === 'run' && <RunPage key={`${s.entity}/${s.project}/${s.run}`} state={s} />}
        {page === 'alerts' && <ProjectAlertsPage key={`${s.entity}/${s.project}`} state={s} />}
        {page === 'artifact' && <ArtifactPage key={`${s.entity}/${s.project}/${s.art}`} state={s} />}
        {page === 'compare' && <ComparePage key={`${s.entity}/${s.project}`} state={s} />}
        </>}
      </main>
    </div>
  );
}

export { navigate, encodeState };
