// Browser tests of alerts (docs/ui.md "Alerts"): a real `cohort server` (port 0), runs logged by
// the real Python SDK, one logging a NaN loss (the project's default rule opens an alert), and an
// alert raised by code through the server's route; checked in Debian's Chromium: the workspace
// marks the run and counts the open alerts, the alerts page lists them with their evidence,
// acknowledging one, the default rules, a rule the server refuses (its message names the field),
// a threshold rule created in the editor that then fires on new data, disabling a rule, the
// run page's Alerts tab, and webhooks (a real HTTP receiver started here: created in the page
// with a secret never shown back, a URL the server refuses, the Test button, an alert delivered
// and its delivery shown in the alert's details).
//
//   node --test tests/ui/alerts.test.mjs        (scripts/test-ui.sh runs it)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, openLoggedIn, ROOT, sdkEnvironment, startServer } from './harness.mjs';

const SHOTS = path.join(ROOT, 'artifacts/ui');

const PROJECT = 'alerts-demo';
let server, browser, page, entity, calmWriter;
const pageErrors = [];

const SEED = String.raw`
import os, sys
import cohort
run_id, loss = sys.argv[1], [float(x) for x in sys.argv[2].split(",")]
run = cohort.init(project=os.environ["COHORT_PROJECT"], id=run_id, name=run_id)
for step, v in enumerate(loss):
    run.log({"loss": v}, step=step)
run.finish()
`;

function logRun(id, values) {
  const { python, env } = sdkEnvironment(server, PROJECT);
  const script = path.join(server.dir, 'seed_alerts.py');
  writeFileSync(script, SEED);
  const r = spawnSync(python, [script, id, values.join(',')], { env, encoding: 'utf8', timeout: 120000 });
  if (r.status !== 0) throw new Error(`seed ${id}: ${r.stdout}\n${r.stderr}`);
}

const alertsPath = (q = '') => `/api/v1/alerts/${entity}/${PROJECT}${q}`;

async function waitAlerts(pred, what) {
  for (let i = 0; i < 200; i++) {
    const { alerts } = await api(server, 'GET', alertsPath('?limit=1000'));
    if (pred(alerts)) return alerts;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`alerts: ${what} did not happen`);
}

before(async () => {
  // The test's receiver listens on 127.0.0.1, which the server refuses to call by default.
  server = await startServer({ extraArgs: ['--webhook-allow-private'] });
  entity = (await api(server, 'GET', '/api/v1/viewer')).entity;
  try {
    logRun('nanrun', ['1.0', '0.5', '0.25', 'nan']);
    logRun('calm', ['1.0', '0.9']);
    await waitAlerts((as) => as.some((a) => a.run === 'nanrun'), 'the NaN alert');
    // A code alert names a writer of its run (the server refuses one that never joined).
    calmWriter = (await api(server, 'GET', `/api/v1/runs/${entity}/${PROJECT}/calm/writers`)).writers[0].label;
    await api(server, 'POST', `/api/v1/runs/${entity}/${PROJECT}/calm/writers/${calmWriter}/alerts`,
      { title: 'diverging', text: 'grad norm 1e6 at step 1\nsecond line', level: 'ERROR' });
  } catch (e) {
    server.dumpLogs('seed');
    throw e;
  }
  ({ browser, page } = await openLoggedIn(server, PROJECT, pageErrors));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe('alerts', () => {
  test('the workspace marks runs with open alerts and counts them', async () => {
    await page.goto(`${server.url}/?p=${entity}/${PROJECT}`);
    const mark = page.locator('tr[data-run="nanrun"] [data-testid="alert-mark"]');
    await mark.waitFor();
    assert.equal((await mark.textContent()).trim(), '⚠ 1');
    assert.match(await mark.getAttribute('title'), /1 open alert: .*loss/);
    assert.match(await mark.getAttribute('class'), /level-warn/);
    const calm = page.locator('tr[data-run="calm"] [data-testid="alert-mark"]');
    await calm.waitFor();
    assert.match(await calm.getAttribute('class'), /level-error/);
    await page.waitForFunction(() => document.querySelector('[data-testid="alerts-link"]')?.textContent === 'Alerts (2 open)');
  });

  test('the alerts page lists them with evidence; Ack marks one acknowledged', async () => {
    await page.getByTestId('alerts-link').click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('alerts') === '1');
    const rows = page.locator('[data-testid="alerts"] tbody tr[data-alert]');
    await rows.nth(1).waitFor();
    assert.equal(await rows.count(), 2);
    const nan = page.locator('[data-testid="alerts"] tr[data-alert]', { hasText: 'nanrun' });
    assert.match(await nan.locator('td.evidence').textContent(), /^loss = NaN at step 3$/);
    assert.equal(await nan.locator('[data-level]').textContent(), 'WARN');
    const code = page.locator('[data-testid="alerts"] tr[data-alert]', { hasText: 'diverging' });
    assert.equal(await code.locator('td.evidence').textContent(), 'grad norm 1e6 at step 1');
    assert.match(await code.textContent(), /from the code/);
    // The whole text and the evidence on a click of the title.
    await code.getByRole('button', { name: 'diverging', exact: true }).click();
    await page.getByText('second line').waitFor();
    await code.getByRole('button', { name: 'acknowledge diverging' }).click();
    await code.getByText(/acked by/).waitFor();
    const stored = (await api(server, 'GET', alertsPath('?state=open'))).alerts.find((a) => a.title === 'diverging');
    assert.ok(stored.acked_ms > 0, 'the ack reached the server');
    // The level filter asks the server.
    await page.getByLabel('level', { exact: true }).selectOption('ERROR');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="alerts"] tr[data-alert]').length === 1);
    await page.getByLabel('level', { exact: true }).selectOption('');
  });

  test('rules: the defaults, a refused rule names its field, a new threshold rule fires, disabling one', async () => {
    const rules = page.getByTestId('rules');
    await rules.locator('tr[data-rule]').nth(1).waitFor();
    const defaults = await rules.locator('tr[data-rule]').allTextContents();
    assert.equal(defaults.length, 2);
    assert.ok(defaults.every((t) => t.includes('(default)')), defaults.join(' | '));
    await page.getByRole('button', { name: 'New rule' }).click();
    const form = page.getByRole('form', { name: 'new rule' });
    await form.getByLabel('Name').fill('loss too high');
    await form.getByLabel('Value').fill('5');
    // No key: the server refuses, naming spec.key; nothing is created.
    await form.getByRole('button', { name: 'Create rule' }).click();
    await form.getByRole('alert').filter({ hasText: 'spec.key' }).waitFor();
    assert.equal((await api(server, 'GET', `/api/v1/alert-rules/${entity}/${PROJECT}`)).rules.length, 2);
    await form.getByLabel('Key').fill('loss');
    await form.getByLabel('op').selectOption('>=');
    await form.getByRole('button', { name: 'Create rule' }).click();
    const made = rules.locator('tr[data-rule="loss too high"]');
    await made.waitFor();
    assert.match(await made.textContent(), /loss >= 5/);

    // It fires on the next data (and the list refreshes by itself).
    logRun('spiky', ['1.0', '7.5']);
    const row = page.locator('[data-testid="alerts"] tr[data-alert]', { hasText: 'spiky' });
    await row.waitFor({ timeout: 20000 });
    assert.match(await row.locator('td.evidence').textContent(), /^loss = 7\.5 at step 1: >= 5$/);

    // Disabled in one click, on the server.
    await page.getByRole('checkbox', { name: 'disable loss too high' }).click();
    await page.getByRole('checkbox', { name: 'enable loss too high' }).waitFor();
    const stored = (await api(server, 'GET', `/api/v1/alert-rules/${entity}/${PROJECT}`)).rules.find((r) => r.name === 'loss too high');
    assert.equal(stored.enabled, false);
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, 'alerts.png'), fullPage: true });
    assert.deepEqual(stored.spec, { key: 'loss', op: '>=', value: 5 });
  });

  test("the run page counts the run's open alerts on its tab and lists them", async () => {
    await page.goto(`${server.url}/?p=${entity}/${PROJECT}&run=nanrun`);
    const tab = page.getByRole('tab', { name: 'Alerts (1 open)' });
    await tab.waitFor();
    await page.locator('.run-head [data-testid="alert-mark"]').click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('tab') === 'alerts');
    const rows = page.locator('[data-testid="alerts"] tr[data-alert]');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 1);
    assert.match(await rows.first().textContent(), /loss = NaN at step 3/);
    assert.deepEqual(pageErrors, []);
  });

  test('webhooks: created in the page, tested, and an alert delivered shows in its details', async () => {
    const calls = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => { calls.push({ headers: req.headers, body: JSON.parse(body) }); res.end('ok'); });
    });
    await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${receiver.address().port}/hook`;
    try {
      await page.goto(`${server.url}/?p=${entity}/${PROJECT}&alerts=1`);
      const section = page.getByRole('region', { name: 'alert webhooks' });
      await section.getByText('No webhooks.').waitFor();
      await section.getByRole('button', { name: 'New webhook' }).click();
      const form = section.getByRole('form', { name: 'new webhook' });
      await form.getByLabel('webhook name').fill('ops');
      await form.getByLabel('webhook url').fill('ftp://example.com/hook');
      await form.getByLabel('minimum level').selectOption('INFO');
      await form.getByLabel('webhook secret').fill('s3cret');
      // A URL the server refuses: its message names the field; nothing is created.
      await form.getByRole('button', { name: 'Create webhook' }).click();
      await form.getByRole('alert').filter({ hasText: 'url' }).waitFor();
      assert.deepEqual((await api(server, 'GET', `/api/v1/alert-webhooks/${entity}/${PROJECT}`)).webhooks, []);
      await form.getByLabel('webhook url').fill(url);
      await form.getByRole('button', { name: 'Create webhook' }).click();
      const row = section.locator('tr[data-webhook="ops"]');
      await row.waitFor();
      assert.match(await row.textContent(), /generic.*INFO.*set/);
      assert.ok(!(await page.content()).includes('s3cret'), 'the secret is never shown back');

      await row.getByRole('button', { name: 'test webhook ops' }).click();
      await section.getByTestId('webhook-test-result').filter({ hasText: 'the receiver answered 200' }).waitFor();
      const tests = calls.filter((c) => c.body.event === 'test');
      assert.equal(tests.length, 1);
      assert.match(tests[0].headers['x-cohort-signature'], /^sha256=[0-9a-f]{64}$/);

      // An alert raised now is delivered, and its details say so.
      await api(server, 'POST', `/api/v1/runs/${entity}/${PROJECT}/calm/writers/${calmWriter}/alerts`,
        { title: 'webhook check', level: 'WARN' });
      for (let i = 0; i < 200 && !calls.some((c) => c.body.event === 'opened'); i++) await new Promise((r) => setTimeout(r, 100));
      const opened = calls.find((c) => c.body.event === 'opened');
      assert.ok(opened, 'the alert reached the receiver');
      assert.equal(opened.body.alert.title, 'webhook check');
      const alertRow = page.locator('[data-testid="alerts"] tr[data-alert]', { hasText: 'webhook check' });
      await alertRow.waitFor({ timeout: 20000 });
      await alertRow.getByRole('button', { name: 'webhook check', exact: true }).click();
      const delivered = page.locator('[data-testid="deliveries"] tr[data-delivery-state="delivered"]');
      await delivered.first().waitFor({ timeout: 20000 });
      assert.match(await delivered.first().textContent(), /ops.*opened.*delivered \(200\)/);

      // The webhook's own log names the alert by its title (not an id) and has no column
      // repeating the webhook.
      await row.getByRole('button', { name: 'Log' }).click();
      const logged = section.locator('[data-testid="deliveries"] tr[data-delivery-state="delivered"]', { hasText: 'opened' });
      await logged.first().waitFor({ timeout: 20000 });
      const cells = await logged.first().locator('td').allTextContents();
      assert.equal(cells[0], 'webhook check');
      assert.equal(cells[1], 'opened');
      assert.ok(!cells.includes('ops'), `the webhook is not repeated: ${cells}`);
      assert.deepEqual(pageErrors, []);
    } finally {
      receiver.close();
    }
  });
});
