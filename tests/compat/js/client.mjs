// The vendor's JS SDK as a plain client of a Cohort server (WANDB_BASE_URL, WANDB_API_KEY from
// the environment): init with group, job type and config, log steps, finish.
// Usage: node client.mjs <project> <run id> <steps>
import wandb from '@wandb/sdk';

const [project, id, stepsArg] = process.argv.slice(2);
const steps = Number(stepsArg || 10);
const run = await wandb.init({
  project,
  id,
  name: 'js-run',
  group: 'js-group',
  jobType: 'js-job',
  config: {lr: 0.01, layers: [64, 32], optimizer: {name: 'adam'}},
});
for (let i = 0; i < steps; i++) {
  run.log({loss: 1 / (i + 1), acc: i / steps});
}
await run.finish();
console.log(JSON.stringify({id: run.id, entity: run.entity, project: run.project, name: run.name}));
