/**
 * Backup jobs end to end through the product's own pipeline against the simulator over HTTP:
 * specs loaded from YAML, `runPlan` (observe + plan), `executePlan` (guests, then the job that
 * names them), and a re-plan that finds nothing to do; a pull request that adds a guest to a job;
 * a job edited on the cluster reported as drift.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildDriftReport } from '../../src/core/drift/drift-report.js';
import type { Plan, SpecSet } from '../../src/core/model.js';
import { renderPlanText } from '../../src/core/render/render-text.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { observeDrift, runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { type RunningSimulator, startSimulator } from '../../src/pve/sim/index.js';

const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100, upper: 1000 }\nnodes: [pve-01]\n';

function specs(opts: { schedule: string; guests: string[] }): SpecSet {
  const yaml = [
    CLUSTER,
    'kind: VM\nname: web-01\ncluster: lab\nnode: pve-01\nvmid: 200\nconfig: { memory: 512 }\n',
    'kind: VM\nname: db-01\ncluster: lab\nnode: pve-01\nvmid: 201\nconfig: { memory: 512 }\n',
    `kind: BackupJob\nname: nightly\ncluster: lab\nschedule: "${opts.schedule}"\nstorage: local\ncompress: zstd\nretention: { keep-last: 3 }\nguests: [${opts.guests.join(', ')}]\n`,
  ].join('---\n');
  const loaded = loadSpecs([{ path: 'lab.yaml', text: yaml }]);
  expect(loaded.errors.map((e) => e.message)).toEqual([]);
  return loaded.specs;
}

let sim: RunningSimulator;
let clients: PveClient[];
let reader: PveClusterAdapter;
let writer: PveClusterAdapter;

beforeEach(async () => {
  sim = await startSimulator({ port: 0, nodes: ['pve-01'], taskMs: 1, clusterName: 'lab' });
  const read = new PveClient({ cluster: 'lab', url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 });
  const write = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
  clients = [read, write];
  reader = new PveClusterAdapter(read, { wait: { intervalMs: 5 } });
  writer = new PveClusterAdapter(write, { wait: { intervalMs: 5 } });
});
afterEach(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await sim.close();
});

function changed(plan: Plan): string[] {
  return [...plan.guests, ...plan.objects].filter((item) => item.action !== 'noop').map((item) => `${item.key}: ${item.action}`);
}

async function apply(plan: Plan): Promise<string[]> {
  const result = await executePlan(plan, { lab: writer });
  return [...result.guests.map((g) => `lab/${g.vmid}: ${g.status}`), ...(result.objects ?? []).map((o) => `${o.key}: ${o.status}`)];
}

describe('backup jobs through the pipeline', () => {
  it('creates the guests, then the job that names them; a re-plan has nothing to do', async () => {
    const head = specs({ schedule: 'sun 01:00', guests: ['web-01'] });
    const plan = await runPlan({ head, readers: { lab: reader } });
    expect(plan.errors).toEqual([]);
    const job = plan.objects.find((o) => o.key === 'lab/backup-job/nightly');
    expect(job).toMatchObject({ action: 'create', after: ['lab/200'] });
    expect(renderPlanText(plan)).toContain('backup job nightly');
    expect((await apply(plan)).sort()).toEqual(['lab/200: applied', 'lab/201: applied', 'lab/backup-job/nightly: applied']);
    expect(sim.sim.backupJobs.get('nightly')).toMatchObject({ vmid: '200', schedule: 'sun 01:00', 'prune-backups': 'keep-last=3' });
    expect(changed(await runPlan({ head, readers: { lab: reader } }))).toEqual([]);
  });

  it('adds a guest in a pull request: only the job is planned, then applied', async () => {
    const base = specs({ schedule: 'sun 01:00', guests: ['web-01'] });
    await apply(await runPlan({ head: base, readers: { lab: reader } }));
    const head = specs({ schedule: 'sat 02:00', guests: ['web-01', 'db-01'] });
    const pr = await runPlan({ head, base, readers: { lab: reader } });
    expect(pr.errors).toEqual([]);
    expect(changed(pr)).toEqual(['lab/backup-job/nightly: update']);
    expect(pr.objects.find((o) => o.key === 'lab/backup-job/nightly')?.changes).toEqual([
      { key: 'schedule', from: 'sun 01:00', to: 'sat 02:00', impact: 'live' },
      { key: 'guests', to: 'db-01 (201)', impact: 'live' },
    ]);
    expect((await apply(pr)).filter((line) => line.includes('backup'))).toEqual(['lab/backup-job/nightly: applied']);
    expect(sim.sim.backupJobs.get('nightly')).toMatchObject({ vmid: '200,201', schedule: 'sat 02:00' });
    expect(changed(await runPlan({ head, readers: { lab: reader } }))).toEqual([]);
  });

  it('reports a job edited on the cluster as drift, and nothing else', async () => {
    const head = specs({ schedule: 'sun 01:00', guests: ['web-01'] });
    await apply(await runPlan({ head, readers: { lab: reader } }));
    const writes = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
    clients.push(writes);
    await writes.request('PUT', '/cluster/backup/nightly', { schedule: 'daily', vmid: '200,201' });
    const { plan, observed } = await observeDrift({ head, readers: { lab: reader } });
    const drifted = [...plan.guests, ...plan.objects].filter((item) => item.drift.length > 0);
    expect(drifted.map((item) => [item.key, item.drift])).toEqual([
      [
        'lab/backup-job/nightly',
        [
          { key: 'schedule', expected: 'sun 01:00', actual: 'daily' },
          { key: 'guests', actual: 'db-01 (201)' },
        ],
      ],
    ]);
    const report = buildDriftReport({ plan, observed, specs: head, now: new Date(), ref: 'main' });
    expect(report.problems).toEqual([]);
    expect(report.objects?.map((o) => o.key)).toEqual(['lab/backup-job/nightly']);
  });
});
