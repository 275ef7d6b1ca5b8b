// The one-time login link (`?token=`) never signs the browser in by itself (login CSRF: anyone can
// send someone a link carrying their own token): the page takes the token out of the address bar
// and asks; only the "Sign in" click posts it to /api/v1/sessions. With a key already stored the
// question says who is signed in now, and Cancel keeps that session. A "Sign in" that fails (a
// used or expired link) always says so: on the card, with who is still signed in, when the stored
// key still works (never a silent return to that account), else on the sign-in form.
//
//   node --test tests/ui/login_link.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, launchBrowser, ROOT, signInWithLink, startServer } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');
const PROJECT = 'login-demo';
let server, browser, entity, admin;
const pageErrors = [];

/** `method path` with `key` as the bearer (none: no Authorization) -> { status, json }. */
async function call(key, method, p, body) {
  const headers = { 'Content-Type': 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  const resp = await fetch(server.url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  return { status: resp.status, json: text ? JSON.parse(text) : null };
}

/** A new one-time login token for `key` (default: the admin key). */
async function newToken(key = server.key) {
  const r = await call(key, 'POST', '/api/v1/login-tokens', {});
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.token;
}

/** Redeems `token` outside the browser: 201 while it is unused, 401 once used. */
const redeem = async (token) => (await call(null, 'POST', '/api/v1/sessions', { token })).status;

/** A page in a fresh browser context, and the POSTs to /api/v1/sessions it makes. */
async function freshPage() {
  const ctx = await browser.newContext({ viewport: { width: 1000, height: 700 }, colorScheme: 'light' });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => { pageErrors.push(e.message); console.error('page error:', e.message); });
  const sessionPosts = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/v1/sessions') sessionPosts.push(r.postData());
  });
  return { ctx, page, sessionPosts };
}

const storedKey = (page) => page.evaluate(() => localStorage.getItem('cohort.key'));

/** Waits until a token link's page shows the question or (a UI that signs in by itself) the
 * projects or the sign-in form, then a little longer for any request it would make on its own. */
async function settled(page) {
  await page.getByTestId('login-link')
    .or(page.getByRole('link', { name: PROJECT }))
    .or(page.getByRole('heading', { name: 'Sign in to Cohort' }))
    .first().waitFor({ timeout: 10000 });
  await page.waitForTimeout(500);
}

before(async () => {
  server = await startServer();
  admin = await api(server, 'GET', '/api/v1/viewer');
  entity = admin.entity;
  await api(server, 'POST', `/api/v1/runs/${entity}/${PROJECT}`, { name: 'r1' });
  browser = await launchBrowser();
  mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe('login link', () => {
  test('opening a link does not sign in: it asks, and only "Sign in" redeems the token', async () => {
    const { ctx, page, sessionPosts } = await freshPage();
    const token = await newToken();
    await page.goto(`${server.url}/?token=${token}`);
    const card = page.getByTestId('login-link');
    await settled(page);
    assert.equal(await storedKey(page), null, 'no key is stored before the click');
    assert.deepEqual(sessionPosts, [], 'the token is not posted before the click');
    assert.ok(!page.url().includes('token='), 'the token leaves the address bar at once');
    assert.ok(await card.isVisible(), 'the link asks first');
    assert.match(await card.textContent(), /signs this browser in to the Cohort server at/);
    assert.equal(await page.getByTestId('login-link-current').count(), 0, 'no session to mention');
    await page.screenshot({ path: path.join(SHOTS, 'login-link.png') });

    // "Not now" drops the token: the sign-in form, still no key, and the token was never used.
    await card.getByRole('button', { name: 'Not now' }).click();
    await page.getByRole('heading', { name: 'Sign in to Cohort' }).waitFor();
    assert.equal(await storedKey(page), null);
    assert.deepEqual(sessionPosts, []);
    assert.equal(await redeem(token), 201, 'the dismissed token is still unused');

    // The link `cohort server` printed, confirmed: signed in with a session key.
    await signInWithLink(page, server);
    await page.getByRole('link', { name: PROJECT }).waitFor();
    assert.match(await storedKey(page), /^cs_/, 'a session key is kept');
    assert.equal(sessionPosts.length, 1, 'the click posts the token once');
    assert.equal(JSON.parse(sessionPosts[0]).token, server.token);
    assert.equal(await redeem(server.token), 401, 'the link was used by the click');
    await ctx.close();
  });

  test('with a stored key, a link names who is signed in, and Cancel keeps that session', async () => {
    assert.equal(admin.role, 'admin');
    const { ctx, page, sessionPosts } = await freshPage();
    // Signed in with a session of the admin key (made outside the page).
    const mine = (await call(null, 'POST', '/api/v1/sessions', { token: await newToken() })).json.key;
    assert.match(mine, /^cs_/);
    await page.goto(server.url + '/');
    await page.evaluate((k) => localStorage.setItem('cohort.key', k), mine);
    await page.reload();
    await page.getByRole('link', { name: PROJECT }).waitFor();

    // Someone else's link (another key's token).
    const other = (await api(server, 'POST', '/api/v1/keys', { name: 'someone-else', role: 'member' })).key;
    const theirs = await newToken(other);
    await page.goto(`${server.url}/?token=${theirs}`);
    const card = page.getByTestId('login-link');
    await settled(page);
    assert.equal(await storedKey(page), mine, 'the stored key is untouched before the click');
    assert.deepEqual(sessionPosts, [], 'the token is not posted before the click');
    assert.ok(!page.url().includes('token='));
    assert.ok(await card.isVisible(), 'the link asks first');
    // The viewer of a session: its key's entity and role (its key_name is "browser-session").
    const current = await page.getByTestId('login-link-current').textContent();
    assert.ok(current.includes(`signed in as ${entity} (${admin.role}, from a login link)`), current);
    assert.match(current, /replaces that session/);
    await page.screenshot({ path: path.join(SHOTS, 'login-link-signed-in.png') });

    // Cancel: the same session, on the page.
    await card.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('link', { name: PROJECT }).waitFor();
    assert.equal(await page.locator('.who').textContent(), `${entity} · ${admin.role}`);
    assert.equal(await storedKey(page), mine, 'Cancel keeps the session');
    assert.deepEqual(sessionPosts, []);
    assert.equal(await redeem(theirs), 201, 'the cancelled token is still unused');

    // "Sign in" on such a link does replace the session.
    await signInWithLink(page, server, `${server.url}/?token=${await newToken(other)}`);
    await page.locator('.who', { hasText: `${entity} · member` }).waitFor();
    const now = await storedKey(page);
    assert.match(now, /^cs_/);
    assert.notEqual(now, mine);
    assert.equal(sessionPosts.length, 1);
    await ctx.close();
  });

  test('with a stored API key, the link names that key', async () => {
    const { ctx, page, sessionPosts } = await freshPage();
    await page.goto(server.url + '/');
    await page.evaluate((k) => localStorage.setItem('cohort.key', k), server.key);
    const token = await newToken();
    await page.goto(`${server.url}/?token=${token}`);
    const current = page.getByTestId('login-link-current');
    await current.waitFor({ timeout: 10000 });
    assert.ok((await current.textContent()).includes(`signed in as ${entity} (${admin.role}, key ${admin.key_name})`));
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('link', { name: PROJECT }).waitFor();
    assert.equal(await storedKey(page), server.key, 'Cancel keeps the stored API key');
    assert.deepEqual(sessionPosts, []);
    assert.equal(await redeem(token), 201);
    await ctx.close();
  });

  test('a used link still fails as before: the sign-in form says why', async () => {
    const { ctx, page } = await freshPage();
    const token = await newToken();
    assert.equal(await redeem(token), 201);
    await page.goto(`${server.url}/?token=${token}`);
    await page.getByTestId('login-link').getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByText(/The login link did not work/).waitFor();
    assert.ok(await page.getByRole('heading', { name: 'Sign in to Cohort' }).isVisible());
    assert.equal(await storedKey(page), null);
    await ctx.close();
  });

  test('with a stored key, "Sign in" on a used link says it did not work and keeps that key', async () => {
    const { ctx, page, sessionPosts } = await freshPage();
    const mine = (await call(null, 'POST', '/api/v1/sessions', { token: await newToken() })).json.key;
    await page.goto(server.url + '/');
    await page.evaluate((k) => localStorage.setItem('cohort.key', k), mine);
    // Another account's link, already used.
    const other = (await api(server, 'POST', '/api/v1/keys', { name: 'used-link-owner', role: 'member' })).key;
    const used = await newToken(other);
    assert.equal(await redeem(used), 201);
    await page.goto(`${server.url}/?token=${used}`);
    const card = page.getByTestId('login-link');
    await card.getByRole('button', { name: 'Sign in', exact: true }).click();

    // The card says that the link failed (not the projects of the old account, not the
    // "stored key" sign-in form) and who is still signed in; the token is spent: no "Sign in".
    await card.getByText(/did not work/).first().waitFor({ timeout: 10000 });
    const error = await page.getByTestId('login-link-error').textContent();
    assert.match(error, /^The login link did not work: .+\. It is valid once; open the newest link `cohort server` printed\.$/, error);
    const current = await page.getByTestId('login-link-current').textContent();
    assert.ok(current.includes(`still signed in as ${entity} (${admin.role}, from a login link)`), current);
    assert.equal(await card.getByRole('button', { name: 'Sign in', exact: true }).count(), 0, 'no Sign in with a spent token');
    assert.equal(await page.getByText(/did not accept the stored key/).count(), 0);
    assert.equal(await page.getByRole('heading', { name: 'Sign in to Cohort' }).count(), 0);
    assert.equal(await storedKey(page), mine, 'the stored key is unchanged');
    assert.equal(sessionPosts.length, 1, 'the click posted the token once');
    await page.screenshot({ path: path.join(SHOTS, 'login-link-failed.png') });

    // Going on: the old account, as the card said.
    await card.getByRole('button', { name: `Continue as ${entity}` }).click();
    await page.getByRole('link', { name: PROJECT }).waitFor();
    assert.equal(await page.locator('.who').textContent(), `${entity} · ${admin.role}`);
    assert.equal(await storedKey(page), mine);
    assert.equal(sessionPosts.length, 1);
    await ctx.close();
  });

  test('a stored key that stopped working and a used link: the sign-in form says the link did not work', async () => {
    const { ctx, page } = await freshPage();
    const mine = (await call(null, 'POST', '/api/v1/sessions', { token: await newToken() })).json.key;
    await page.goto(server.url + '/');
    await page.evaluate((k) => localStorage.setItem('cohort.key', k), mine);
    const used = await newToken();
    assert.equal(await redeem(used), 201);
    await page.goto(`${server.url}/?token=${used}`);
    await page.getByTestId('login-link-current').waitFor({ timeout: 10000 });
    // The session ends (logout elsewhere) while the card is open.
    assert.equal((await call(mine, 'DELETE', '/api/v1/sessions')).status, 200);
    await page.getByTestId('login-link').getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in to Cohort' }).waitFor({ timeout: 10000 });
    const notice = await page.locator('.login .notice').textContent();
    assert.match(notice, /^The login link did not work: .+, or paste an API key\.$/, notice);
    assert.equal(await storedKey(page), null, 'the key the server no longer accepts is dropped');
    await ctx.close();
  });

  test('no page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});
