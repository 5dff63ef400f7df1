/**
 * Clones of a template through the App (docs/design.md#creating-guests-by-cloning): a pull request
 * that adds three clones is planned from its webhook, merged and applied, and planning again finds
 * nothing to do; and a worker process killed with SIGKILL while Proxmox copies a clone, then
 * replaced, converges with exactly one guest and one clone request — the clone task carries the
 * template's VMID, so the replacement finds the guest by its `lock: clone`, not by its tasks.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { planHasChanges } from '../../src/core/plan/plan-specs.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { PveClient } from '../../src/pve/client.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { expectApplyCheckRun, expectApplyComment, finishedComment } from './apply-flow.js';
import { type ApplyWorld, planOpened, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { rawConfig, watchWrites } from './sim-writes.js';
import { clusterDoc, newSha, type RepoFiles } from './spec-repo.js';
import { startWorkerProcess, type WorkerProcess } from './worker-process.js';

let world: ApplyWorld | undefined;
let workers: WorkerProcess[] = [];

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await Promise.all(workers.map((w) => w.signal('SIGKILL')));
  workers = [];
  await world?.close();
  world = undefined;
});

/** A cloud-image template on pve-01, kept outside git (no spec, no owner tag). */
const TEMPLATE = {
  vmid: 9000,
  type: 'qemu',
  node: 'pve-01',
  config: {
    name: 'debian-12-cloud',
    cores: 1,
    memory: 1024,
    net0: 'virtio=BC:24:11:00:90:00,bridge=vmbr0',
    scsi0: 'local-lvm:base-9000-disk-0,size=2G',
    ide2: 'local-lvm:vm-9000-cloudinit,media=cdrom',
    template: 1,
  },
} as const;

const cloneDoc = (name: string, vmid: number, ip: number): string =>
  [
    'kind: VM',
    `name: ${name}`,
    'cluster: lab',
    'node: pve-01',
    `vmid: ${vmid}`,
    'power: running',
    'create:',
    '  clone: { template: debian-12-cloud }',
    'config:',
    '  cores: 2',
    '  memory: 2048',
    '  scsi0: local-lvm:16',
    `  ipconfig0: ip=10.10.0.${ip}/24,gw=10.10.0.1`,
    '  ciuser: debian',
    '',
  ].join('\n');

/** Plans `files` against the simulator with a read-only token, as the next pull request would. */
async function planAgain(sim: RunningSimulator, files: RepoFiles): Promise<boolean> {
  const loaded = loadSpecs(Object.entries(files).map(([path, text]) => ({ path, text: String(text) })));
  expect(loaded.errors.map((e) => e.message)).toEqual([]);
  const client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 });
  try {
    const plan = await runPlan({ head: loaded.specs, readers: { lab: new PveClusterAdapter(client) } });
    return planHasChanges(plan);
  } finally {
    await client.close();
  }
}

/** Guests on the simulator named `name`. */
const named = (sim: RunningSimulator, name: string): number => sim.sim.sortedGuests().filter((g) => g.main.get('name') === name).length;

describe('clones through the App', () => {
  it('a pull request adding three clones is planned, merged and applied, and the plan after it is empty', async () => {
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [TEMPLATE] });
    const { github, repo } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    const head: RepoFiles = {
      ...base,
      'vms/web-01.yaml': cloneDoc('web-01', 100301, 11),
      'vms/web-02.yaml': cloneDoc('web-02', 100302, 12),
      'vms/web-03.yaml': cloneDoc('web-03', 100303, 13),
    };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 118;

    const { check: planCheck, comment: planned } = await planOpened(world, {
      pr,
      baseSha,
      base,
      headSha,
      head,
      checkId: 1181,
      commentId: 1182,
    });
    expect(planCheck).toMatchObject({ conclusion: 'success' });
    expect(planned).toContain('linked clone of template `debian-12-cloud` (VMID `9000`) on `pve-01` to node `pve-01`');
    expect(planned.match(/linked clone of template/g)).toHaveLength(3);
    github.verify();

    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 1183 });
    const comment = expectApplyComment(github, repo, { pr, id: 1184 });
    await world.merge({ number: pr, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '3 applied' } });
    await comment.until(finishedComment);
    for (const [vmid, ip] of [
      [100301, 11],
      [100302, 12],
      [100303, 13],
    ] as const) {
      const raw = rawConfig(sim, vmid);
      expect(raw).toContain(`ipconfig0: ip=10.10.0.${ip}/24,gw=10.10.0.1`);
      expect(raw).toContain(`scsi0: local-lvm:vm-${vmid}-disk-0,size=16G`);
      expect(raw).toContain('tags: pve-gitops');
      expect(sim.sim.getGuest(vmid)?.running).toBe(true);
    }
    expect(sim.sim.stats().requests.byRoute['POST /nodes/{node}/qemu/{vmid}/clone']).toBe(3);
    expect(await planAgain(sim, head)).toBe(false);
    github.verify();
  });

  it('a worker killed with SIGKILL mid-clone, then replaced, converges with exactly one guest and no second clone', async () => {
    const X = 100311;
    // Long enough that the kill lands while Proxmox copies the disk.
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), role: 'web', guests: [TEMPLATE], taskMs: 1500 });
    const { github, app, repo } = world;
    const sim = world.clusters.sims.lab!;
    const writes = watchWrites(sim);
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    const head: RepoFiles = { ...base, 'vms/web.yaml': cloneDoc('web-11', X, 21) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    await world.storePlan({ baseSha, base, pr: 119, headSha, head });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 1191 });
    const comment = expectApplyComment(github, repo, { pr: 119, id: 1192 });

    const first = await startWorkerProcess(app.env);
    workers.push(first);
    await world.merge({ number: 119, headSha, baseSha, mergeSha });
    // The clone is in Proxmox's hands (its write counts on the template, the path's VMID).
    await writes.until((all) => all.some((w) => w.vmid === TEMPLATE.vmid));
    // …and its task has written the new guest's temporary config, locked while the disk is copied.
    while (sim.sim.getGuest(X) === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(sim.sim.getGuest(X)?.rawConfig).toContain('lock: clone');
    await first.signal('SIGKILL');
    const replacement = await startWorkerProcess(app.env);
    workers.push(replacement);

    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    await comment.until(finishedComment);
    expect(sim.sim.stats().requests.byRoute['POST /nodes/{node}/qemu/{vmid}/clone']).toBe(1);
    expect(named(sim, 'web-11')).toBe(1);
    const raw = rawConfig(sim, X);
    expect(raw).not.toContain('lock:');
    expect(raw).toContain('cores: 2');
    expect(raw).toContain('ipconfig0: ip=10.10.0.21/24,gw=10.10.0.1');
    await replacement.until((line) => line.msg === 'guest applied' && line.guest === `lab/${X}`);
    expect(await planAgain(sim, head)).toBe(false);
    github.verify();
  }, 60_000);
});
