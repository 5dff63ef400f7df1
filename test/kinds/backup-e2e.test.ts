/**
 * Backup jobs end to end through the product's own pipeline against the simulator over HTTP:
 * specs loaded from YAML, `runPlan` (observe + plan), `executePlan` (guests, then the job that
 * names them), and a re-plan that finds nothing to do; a pull request that adds a guest to a job;
 * a job edited on the cluster reported as drift.
 */
import { describe, expect, it } from 'vitest';
import type { SpecSet } from '../../src/core/model.js';
import { renderPlanText } from '../../src/core/render/render-text.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { changed, labSpecs, usePipelineLab } from './pipeline-lab.js';

function specs(opts: { schedule: string; guests: string[] }): SpecSet {
  return labSpecs([
    'kind: VM\nname: web-01\ncluster: lab\nnode: pve-01\nvmid: 200\nconfig: { memory: 512 }\n',
    'kind: VM\nname: db-01\ncluster: lab\nnode: pve-01\nvmid: 201\nconfig: { memory: 512 }\n',
    `kind: BackupJob\nname: nightly\ncluster: lab\nschedule: "${opts.schedule}"\nstorage: local\ncompress: zstd\nretention: { keep-last: 3 }\nguests: [${opts.guests.join(', ')}]\n`,
  ]);
}

const lab = usePipelineLab();

describe('backup jobs through the pipeline', () => {
  it('creates the guests, then the job that names them; a re-plan has nothing to do', async () => {
    const head = specs({ schedule: 'sun 01:00', guests: ['web-01'] });
    const plan = await runPlan({ head, readers: { lab: lab.reader } });
    expect(plan.errors).toEqual([]);
    const job = plan.objects.find((o) => o.key === 'lab/backup-job/nightly');
    expect(job).toMatchObject({ action: 'create', after: ['lab/200'] });
    expect(renderPlanText(plan)).toContain('backup job nightly');
    expect((await lab.apply(plan)).sort()).toEqual(['lab/200: applied', 'lab/201: applied', 'lab/backup-job/nightly: applied']);
    expect(lab.sim.sim.backupJobs.get('nightly')).toMatchObject({ vmid: '200', schedule: 'sun 01:00', 'prune-backups': 'keep-last=3' });
    expect(changed(await runPlan({ head, readers: { lab: lab.reader } }))).toEqual([]);
  });

  it('adds a guest in a pull request: only the job is planned, then applied', async () => {
    const base = specs({ schedule: 'sun 01:00', guests: ['web-01'] });
    await lab.apply(await runPlan({ head: base, readers: { lab: lab.reader } }));
    const head = specs({ schedule: 'sat 02:00', guests: ['web-01', 'db-01'] });
    const pr = await runPlan({ head, base, readers: { lab: lab.reader } });
    expect(pr.errors).toEqual([]);
    expect(changed(pr)).toEqual(['lab/backup-job/nightly: update']);
    expect(pr.objects.find((o) => o.key === 'lab/backup-job/nightly')?.changes).toEqual([
      { key: 'schedule', from: 'sun 01:00', to: 'sat 02:00', impact: 'live' },
      { key: 'guests', to: 'db-01 (201)', impact: 'live' },
    ]);
    expect((await lab.apply(pr)).filter((line) => line.includes('backup'))).toEqual(['lab/backup-job/nightly: applied']);
    expect(lab.sim.sim.backupJobs.get('nightly')).toMatchObject({ vmid: '200,201', schedule: 'sat 02:00' });
    expect(changed(await runPlan({ head, readers: { lab: lab.reader } }))).toEqual([]);
  });

  it('reports a job edited on the cluster as drift, and nothing else', async () => {
    const head = specs({ schedule: 'sun 01:00', guests: ['web-01'] });
    await lab.apply(await runPlan({ head, readers: { lab: lab.reader } }));
    await lab.client.request('PUT', '/cluster/backup/nightly', { schedule: 'daily', vmid: '200,201' });
    const { drifted, report } = await lab.drift(head);
    expect(drifted).toEqual([
      [
        'lab/backup-job/nightly',
        [
          { key: 'schedule', expected: 'sun 01:00', actual: 'daily' },
          { key: 'guests', actual: 'db-01 (201)' },
        ],
      ],
    ]);
    expect(report.problems).toEqual([]);
    expect(report.objects?.map((o) => o.key)).toEqual(['lab/backup-job/nightly']);
  });
});
