// Seeds artifacts through the HTTP API (docs/artifacts.md), for the browser tests of the
// Artifacts tab and page: a blob uploaded in one part and completed, a version logged by one run
// (with aliases, metadata and a description), and used by another run.
import { createHash } from 'node:crypto';
import { api } from './harness.mjs';

/** Uploads `bytes` as a blob of `entity` (one part: the bytes are small). Returns its SHA-256. */
export async function uploadBlob(server, entity, bytes) {
  const sha = createHash('sha256').update(bytes).digest('hex');
  const resp = await fetch(`${server.url}/api/v1/blobs/${entity}/${sha}/parts/0?size=${bytes.length}`, {
    method: 'PUT', headers: { Authorization: `Bearer ${server.key}`, 'Content-Type': 'application/octet-stream' }, body: bytes,
  });
  if (!resp.ok) throw new Error(`PUT part 0 of ${sha}: ${resp.status} ${await resp.text()}`);
  const done = await api(server, 'POST', `/api/v1/blobs/${entity}/${sha}/complete`, { size: bytes.length });
  if (!done.stored) throw new Error(`blob ${sha} not stored: ${JSON.stringify(done)}`);
  return sha;
}

/**
 * In `project`: a run "producer" that logs `name` v0 (model.bin and config/params.json, aliases
 * "best", metadata, description) and v1, and a run "consumer" that uses v0. Returns the run ids,
 * the files' bytes and the versions as the API answered them.
 */
export async function seedArtifacts(server, entity, project, name = 'mnist-model') {
  const producer = await api(server, 'POST', `/api/v1/runs/${entity}/${project}`, { name: 'producer', job_type: 'train' });
  const consumer = await api(server, 'POST', `/api/v1/runs/${entity}/${project}`, { name: 'consumer', job_type: 'eval' });
  const model = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7 + 3) % 256));
  const params = Buffer.from('{"lr": 0.001, "layers": 4}\n');
  const files = [];
  for (const [path, bytes] of [['model.bin', model], ['config/params.json', params]]) {
    files.push({ path, sha256: await uploadBlob(server, entity, bytes), size: bytes.length });
  }
  const base = `/api/v1/artifacts/${entity}/${project}/${name}`;
  const v0 = await api(server, 'POST', base, {
    type: 'model', run: producer.id, files, aliases: ['best'], description: 'epoch 3 checkpoint',
    metadata: { epoch: 3, accuracy: 0.9812345, optimizer: { name: 'adam', betas: [0.9, 0.999] } },
  });
  const extra = Buffer.from('notes for v1\n');
  const v1 = await api(server, 'POST', base, {
    type: 'model', run: producer.id, description: 'epoch 4 checkpoint',
    files: [...files, { path: 'NOTES.txt', sha256: await uploadBlob(server, entity, extra), size: extra.length }],
  });
  await api(server, 'POST', `${base}/v0/use`, { run: consumer.id });
  return { producer: producer.id, consumer: consumer.id, model, params, v0, v1 };
}
