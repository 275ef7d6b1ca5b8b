// GET .../{run}/console/index: the route the log view's virtual scrolling is built on.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api, startServer } from './harness.mjs';

let server, base;

before(async () => {
  server = await startServer();
  const entity = (await api(server, 'GET', '/api/v1/viewer')).entity;
  const run = await api(server, 'POST', `/api/v1/runs/${entity}/logs`, { name: 'logs' });
  base = `/api/v1/runs/${entity}/logs/${run.id}`;
  for (const label of ['rank_0', 'rank_1', 'rank_2']) await api(server, 'POST', `${base}/writers`, { label });
  // 2,345 lines, interleaved over three labels, every 10th on stderr.
  const seq = { rank_0: 0, rank_1: 0, rank_2: 0 };
  for (let i0 = 0; i0 < 2345; i0 += 500) {
    for (const label of ['rank_0', 'rank_1', 'rank_2']) {
      const console = [];
      for (let i = i0; i < Math.min(2345, i0 + 500); i++) {
        if (`rank_${i % 3}` !== label) continue;
        console.push({ time: 1e12 + i, stream: i % 10 === 0 ? 'stderr' : 'stdout', text: `line ${i}` });
      }
      await api(server, 'POST', `${base}/writers/${label}/batches`, { seq: ++seq[label], console });
    }
  }
});

after(() => server?.stop());

test('the index counts the lines and gives the cursor of every stride-th line', async () => {
  const ix = await api(server, 'GET', `${base}/console/index?stride=1000`);
  assert.equal(ix.total, 2345);
  assert.equal(ix.stride, 1000);
  assert.equal(ix.cursors.length, 3);
  assert.equal(ix.cursors[0], 0);
  const all = [];
  for (let after = 0; ;) {
    const page = await api(server, 'GET', `${base}/console?after=${after}&limit=1000`);
    all.push(...page.lines);
    if (page.next_cursor === null) break;
    after = page.next_cursor;
  }
  assert.equal(all.length, 2345);
  for (let p = 0; p < ix.cursors.length; p++) {
    const page = await api(server, 'GET', `${base}/console?after=${ix.cursors[p]}&limit=5`);
    assert.equal(page.lines[0].id, all[p * 1000].id, `page ${p} starts at line ${p * 1000}`);
  }
  assert.equal(ix.last_id, all[all.length - 1].id);
});

test('the index applies the label, stream and text filters and extends from `after`', async () => {
  const r1 = await api(server, 'GET', `${base}/console/index?labels=rank_1&stride=100`);
  assert.equal(r1.total, 782); // i % 3 == 1 for i < 2345
  assert.equal(r1.cursors.length, 8);
  const err = await api(server, 'GET', `${base}/console/index?stream=stderr&stride=10`);
  assert.equal(err.total, 235);
  const text = await api(server, 'GET', `${base}/console/index?q=${encodeURIComponent('line 23')}&stride=10`);
  assert.equal(text.total, 1 + 10 + 45); // "line 23", "line 230".."line 239", "line 2300".."line 2344"
  const tail = await api(server, 'GET', `${base}/console/index?after=${r1.cursors[7]}&labels=rank_1&stride=100`);
  assert.equal(tail.total, 82);
  const none = await api(server, 'GET', `${base}/console/index?labels=nobody`);
  assert.deepEqual(none, { total: 0, stride: 1000, cursors: [], last_id: 0 });
});

test('under a filter, every cursor starts the page at its stride-th matching line', async () => {
  const q = `labels=rank_2&q=${encodeURIComponent('line 1')}`;
  const matching = [];
  for (let after = 0; ;) {
    const page = await api(server, 'GET', `${base}/console?${q}&after=${after}&limit=100`);
    matching.push(...page.lines);
    if (page.next_cursor === null) break;
    after = page.next_cursor;
  }
  assert.ok(matching.length > 100 && matching.every((l) => l.label === 'rank_2' && l.text.includes('line 1')));
  const ix = await api(server, 'GET', `${base}/console/index?${q}&stride=25`);
  assert.equal(ix.total, matching.length);
  assert.equal(ix.cursors.length, Math.ceil(matching.length / 25));
  for (let p = 0; p < ix.cursors.length; p++) {
    const page = await api(server, 'GET', `${base}/console?${q}&after=${ix.cursors[p]}&limit=1`);
    assert.equal(page.lines[0].id, matching[p * 25].id, `page ${p}`);
  }
  assert.equal(ix.last_id, matching[matching.length - 1].id);
});

test('a bad stride is rejected with a message naming it', async () => {
  await assert.rejects(api(server, 'GET', `${base}/console/index?stride=5`), /stride: expected 10\.\.10000/);
  await assert.rejects(api(server, 'GET', `${base}/console/index?stream=both`), /stream: expected stdout or stderr/);
});
