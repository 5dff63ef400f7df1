/**
 * The backup-job kind against the simulator over HTTP: the adapter's reads and writes, and the
 * kind's observe → plan → execute as the pipeline runs them, with real tokens. What a cluster
 * answers is the simulator's (docs/proxmox-behaviour.md, "Backup jobs"); nothing of our own is mocked.
 */
import { describe, expect, it } from 'vitest';
import { type BackupJobObserved, backupJobKind } from '../../src/core/kinds/backup/backup-job-kind.js';
import type { KindPlanInput } from '../../src/core/kinds/kind.js';
import type { GuestSpec, ObjectPlan, ObjectSpec } from '../../src/core/model.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { BackupJobAdapter } from '../../src/pve/kinds/backup-adapter.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { makeGuestSpec, makeSpecGuestPlan } from '../helpers/factories.js';
import { useKindSimulator } from './kind-simulator.js';
import { api, waitTask } from '../sim/helpers.js';

const SOURCE = { file: 'specs/lab.yaml', line: 1, col: 1 };
const LIMITED = 'ops@pve!limited=s3cret';

let sim: RunningSimulator;
let adapter: (token: string, readOnly?: boolean) => BackupJobAdapter;
let writer: BackupJobAdapter;
let reader: BackupJobAdapter;

useKindSimulator(
  {
    storages: ['local-lvm', { storage: 'backup-nfs', type: 'nfs', content: ['backup'] }],
    tokens: [{ id: 'ops@pve!limited', secret: 's3cret', role: 'admin', vmids: [100], guestsOnly: true }],
    guests: [
      { vmid: 100, type: 'qemu', node: 'pve-01', config: 'name: web-01\n' },
      { vmid: 101, type: 'qemu', node: 'pve-01', config: 'name: db-01\n' },
      { vmid: 102, type: 'qemu', node: 'pve-01', config: 'name: app-01\n' },
    ],
  },
  (client) => new BackupJobAdapter(client),
  (kit) => {
    ({ sim, writer, reader, adapter } = kit);
  },
);

/** A BackupJob document as the loader reads it. */
function job(name: string, fields: Record<string, unknown>): ObjectSpec {
  return backupJobKind.load({ kind: 'BackupJob', name, cluster: 'lab', ...fields }, SOURCE);
}

const NIGHTLY = {
  schedule: 'sun 01:00',
  storage: 'backup-nfs',
  mode: 'snapshot',
  compress: 'zstd',
  retention: { 'keep-last': 3, 'keep-weekly': 2 },
  'notes-template': '{{guestname}}',
  guests: ['web-01', 'db-01'],
};

function guest(vmid: number, name: string, state: 'present' | 'absent' = 'present'): GuestSpec {
  return makeGuestSpec({ vmid, name, state, source: SOURCE });
}

interface Scope {
  head?: ObjectSpec[];
  base?: ObjectSpec[];
  headGuests?: GuestSpec[];
  creating?: number[];
  full?: boolean;
}

async function planJobs(scope: Scope, port = reader): Promise<ObjectPlan[]> {
  const headGuests = scope.headGuests ?? [];
  const observed: BackupJobObserved = await backupJobKind.observe(port, {
    cluster: 'lab',
    head: scope.head ?? [],
    base: scope.base ?? [],
    headGuests,
    baseGuests: [],
  });
  const input: KindPlanInput<BackupJobObserved> = {
    cluster: 'lab',
    head: scope.head ?? [],
    ...(scope.base ? { base: scope.base } : {}),
    headGuests,
    baseGuests: [],
    guestPlans: headGuests.map((g) => makeSpecGuestPlan(g, scope.creating?.includes(g.vmid) ? 'create' : 'noop')),
    full: scope.full ?? false,
    observed,
  };
  return backupJobKind.plan(input);
}

function only(items: ObjectPlan[]): ObjectPlan {
  expect(items).toHaveLength(1);
  return items[0] as ObjectPlan;
}

async function apply(item: ObjectPlan, port = writer) {
  return backupJobKind.execute(item, port, {});
}

describe('the backup-job adapter over HTTP', () => {
  it('creates a job with its id and reads it back, with what Proxmox adds', async () => {
    expect(await reader.listJobs()).toEqual([]);
    await writer.createJob('nightly', { schedule: 'sun 01:00', vmid: '100', 'prune-backups': 'keep-last=3' });
    expect(await reader.readJob('nightly')).toEqual({
      id: 'nightly',
      type: 'vzdump',
      schedule: 'sun 01:00',
      vmid: '100',
      enabled: 1,
      'prune-backups': { 'keep-last': 3 },
    });
    expect(await reader.readJob('nope')).toBeUndefined();
  });

  it('refuses a job without a selection, in Proxmox words (raised inside the lock)', async () => {
    const err = await writer.createJob('empty', { schedule: 'sun 01:00' }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('400 Parameter verification failed.\nvmid: property is missing');
    expect(sim.sim.backupJobs.has('empty')).toBe(false);
  });
});

describe('the backup-job kind: plan and apply', () => {
  it('creates a job, resolving names through the specs and the cluster, and a re-plan has nothing to do', async () => {
    const scope = { head: [job('nightly', NIGHTLY)], headGuests: [guest(100, 'web-01')] };
    const created = only(await planJobs(scope));
    expect(created).toMatchObject({ key: 'lab/backup-job/nightly', action: 'create', errors: [] });
    expect(created.changes).toEqual([
      { key: 'schedule', to: 'sun 01:00', impact: 'live' },
      { key: 'enabled', to: '1', impact: 'live' },
      { key: 'storage', to: 'backup-nfs', impact: 'live' },
      { key: 'mode', to: 'snapshot', impact: 'live' },
      { key: 'compress', to: 'zstd', impact: 'live' },
      { key: 'prune-backups', to: 'keep-last=3,keep-weekly=2', impact: 'live' },
      { key: 'notes-template', to: '{{guestname}}', impact: 'live' },
      { key: 'guests', to: 'web-01 (100)', impact: 'live' },
      { key: 'guests', to: 'db-01 (101)', impact: 'live' },
    ]);
    expect(await apply(created)).toMatchObject({ status: 'applied' });
    expect(sim.sim.backupJobs.get('nightly')).toEqual({
      schedule: 'sun 01:00',
      enabled: '1',
      storage: 'backup-nfs',
      mode: 'snapshot',
      compress: 'zstd',
      'prune-backups': 'keep-last=3,keep-weekly=2',
      'notes-template': '{{guestname}}',
      vmid: '100,101',
    });
    expect(only(await planJobs(scope)).action).toBe('noop');
  });

  it('follows the guests it names that the same plan creates', async () => {
    const scope = {
      head: [job('nightly', { schedule: 'daily', guests: ['new-01'] })],
      headGuests: [guest(150, 'new-01')],
      creating: [150],
    };
    expect(only(await planJobs(scope)).after).toEqual(['lab/150']);
  });

  it('does not see what Proxmox assumes for an option the job leaves out as drift', async () => {
    await writer.createJob('nightly', { schedule: 'daily', vmid: '100' });
    const spec = job('nightly', { schedule: 'daily', mode: 'snapshot', compress: '0', enabled: true, guests: ['web-01'] });
    expect(only(await planJobs({ head: [spec], base: [spec], full: true })).action).toBe('noop');
  });

  it('changes a property and the selection, one row each, and applies them with one PUT', async () => {
    await writer.createJob('nightly', { schedule: 'sun 01:00', vmid: '100,101', storage: 'backup-nfs' });
    const head = [job('nightly', { schedule: 'sat 02:00', storage: 'backup-nfs', guests: ['web-01', 'app-01'] })];
    const updated = only(await planJobs({ head }));
    expect(updated.action).toBe('update');
    expect(updated.changes).toEqual([
      { key: 'schedule', from: 'sun 01:00', to: 'sat 02:00', impact: 'live' },
      { key: 'guests', from: 'db-01 (101)', impact: 'live' },
      { key: 'guests', to: 'app-01 (102)', impact: 'live' },
    ]);
    expect(updated.drift).toEqual([]);
    expect(updated.operations).toEqual([
      {
        op: 'update-backup-job',
        id: 'nightly',
        set: { schedule: 'sat 02:00', vmid: '100,102' },
        remove: [],
        reviewed: { schedule: 'sun 01:00', enabled: '1', storage: 'backup-nfs', vmid: '100,101' },
      },
    ]);
    expect(backupJobKind.describe(updated.operations[0] as ObjectPlan['operations'][number])).toBe(
      "update backup job 'nightly': schedule=sat 02:00, vmid=100,102",
    );
    expect(await apply(updated)).toMatchObject({ status: 'applied' });
    expect(sim.sim.backupJobs.get('nightly')).toMatchObject({ schedule: 'sat 02:00', vmid: '100,102' });
    expect(only(await planJobs({ head })).action).toBe('noop');
  });

  it('moves a job from its guests to all guests, dropping an exclude Proxmox would keep', async () => {
    await writer.createJob('weekly', { schedule: 'weekly', exclude: '101' });
    expect(sim.sim.backupJobs.get('weekly')).toMatchObject({ all: '1', exclude: '101' });
    const head = [job('weekly', { schedule: 'weekly', all: true })];
    const updated = only(await planJobs({ head }));
    expect(updated.changes).toEqual([{ key: 'selection', from: 'all guests except db-01 (101)', to: 'all guests', impact: 'live' }]);
    expect(await apply(updated)).toMatchObject({ status: 'applied' });
    expect(sim.sim.backupJobs.get('weekly')).toEqual({ schedule: 'weekly', enabled: '1', all: '1' });
  });

  it('destroys a job only with state: absent, and leaves it alone when its document goes', async () => {
    await writer.createJob('nightly', { schedule: 'daily', vmid: '100' });
    const removed = only(await planJobs({ head: [], base: [job('nightly', { schedule: 'daily', guests: ['web-01'] })] }));
    expect(removed.action).toBe('noop');
    expect(removed.warnings[0]).toContain("the BackupJob document of 'nightly' was removed");
    const destroy = only(await planJobs({ head: [job('nightly', { state: 'absent' })] }));
    expect(destroy).toMatchObject({ action: 'destroy', operations: [{ op: 'destroy-backup-job', id: 'nightly' }] });
    expect(await apply(destroy)).toMatchObject({ status: 'applied' });
    expect(sim.sim.backupJobs.has('nightly')).toBe(false);
    expect(only(await planJobs({ head: [job('nightly', { state: 'absent' })] })).action).toBe('noop');
  });

  it('writes nothing when the job moved since the review: a conflict naming what moved', async () => {
    await writer.createJob('nightly', { schedule: 'sun 01:00', vmid: '100' });
    const updated = only(await planJobs({ head: [job('nightly', { schedule: 'sat 02:00', guests: ['web-01', 'db-01'] })] }));
    // Someone adds a guest in the GUI between review and merge: the PUT would drop it.
    await writer.updateJob('nightly', { vmid: '100,102' }, []);
    const outcome = await apply(updated);
    expect(outcome).toMatchObject({ status: 'conflict', conflict: ["backup job 'nightly', vmid: reviewed '100', now '100,102'"] });
    expect(sim.sim.backupJobs.get('nightly')).toMatchObject({ schedule: 'sun 01:00', vmid: '100,102' });
  });

  it('reports a job changed outside git as drift when the spec did not change', async () => {
    const spec = job('nightly', { schedule: 'daily', compress: 'zstd', guests: ['web-01'] });
    await writer.createJob('nightly', { schedule: 'daily', compress: 'gzip', vmid: '100', enabled: '0' });
    const drifted = only(await planJobs({ head: [spec], base: [spec], full: true }));
    expect(drifted.action).toBe('update');
    expect(drifted.drift).toEqual([
      { key: 'enabled', expected: '1', actual: '0' },
      { key: 'compress', expected: 'zstd', actual: 'gzip' },
    ]);
    // In a pull request that does not touch it, the job is not planned at all.
    expect(await planJobs({ head: [spec], base: [spec] })).toEqual([]);
  });

  it('sees no drift in a guest that a destroy with purge took out of the job, once the spec no longer names it', async () => {
    await writer.createJob('nightly', { schedule: 'daily', vmid: '100,101' });
    await writer.createJob('db-only', { schedule: 'daily', vmid: '101' });
    const res = await api(sim, 'DELETE', '/nodes/pve-01/qemu/101?purge=1');
    await waitTask(sim, 'pve-01', (res.body?.data as string) ?? '');
    expect(sim.sim.backupJobs.get('nightly')).toMatchObject({ vmid: '100' });
    // remove_vmid_from_backup_jobs deletes a job whose list it empties.
    expect(sim.sim.backupJobs.has('db-only')).toBe(false);
    const spec = job('nightly', { schedule: 'daily', guests: ['web-01'] });
    expect(only(await planJobs({ head: [spec], base: [spec], full: true })).action).toBe('noop');
  });

  it('is a plan error when a guest name resolves to no guest', async () => {
    const failed = only(await planJobs({ head: [job('nightly', { schedule: 'daily', guests: ['web-01', 'ghost'] })] }));
    expect(failed).toMatchObject({ action: 'error', operations: [] });
    expect(failed.errors).toEqual([
      "backup job 'nightly': guest 'ghost' is neither a VM or Container document nor a guest on cluster 'lab'",
    ]);
  });

  it('says which privilege a token lacks, to read and to write', async () => {
    const unreadable = only(await planJobs({ head: [job('nightly', NIGHTLY)] }, adapter(LIMITED, true)));
    expect(unreadable.errors).toEqual(['cannot read backup jobs: the token lacks Sys.Audit on / (Permission check failed (/, Sys.Audit))']);
    const created = only(await planJobs({ head: [job('nightly', NIGHTLY)] }));
    const outcome = await apply(created, adapter(sim.auditToken));
    expect(outcome).toMatchObject({ status: 'failed', error: 'Permission check failed (/, Sys.Modify)' });
    expect(sim.sim.backupJobs.has('nightly')).toBe(false);
  });

  it('asks check for Sys.Audit to plan, and Sys.Modify, the storage and the pool to apply', () => {
    const objects = [job('nightly', NIGHTLY), job('pooled', { schedule: 'daily', pool: 'web' })];
    expect(backupJobKind.requiredPrivileges?.({ objects, guests: [] }, 'read')).toEqual([
      { path: '/', privilege: 'Sys.Audit', why: 'to read backup jobs' },
    ]);
    expect(backupJobKind.requiredPrivileges?.({ objects, guests: [] }, 'apply')?.map((p) => `${p.path} ${p.privilege}`)).toEqual([
      '/ Sys.Modify',
      '/storage/backup-nfs Datastore.Allocate',
      '/storage/local Datastore.Allocate',
      '/pool/web VM.Backup',
    ]);
  });
});

describe('BackupJob documents', () => {
  const file = (body: string) =>
    loadSpecs([
      {
        path: 'lab.yaml',
        text: `kind: Cluster\nname: lab\nvmids: { lower: 100, upper: 200 }\nnodes: [pve-01]\n---\nkind: BackupJob\nname: nightly\ncluster: lab\nschedule: daily\n${body}`,
      },
    ]);

  it('refuses the options only root@pam may set, with why', () => {
    const loaded = file('all: true\ntmpdir: /var/tmp\n');
    expect(loaded.errors.map((e) => e.message)).toEqual([
      "backup job 'nightly': 'tmpdir' is refused: Proxmox lets only root@pam set tmpdir, dumpdir, script (\"Only root may set this option.\", Backup.pm assert_param_permission_common), and pve-gitops writes with an API token",
    ]);
  });

  it('wants exactly one selection', () => {
    expect(
      file('all: true\npool: web\n')
        .errors.map((e) => e.message)
        .join('\n'),
    ).toContain('a backup job selects its guests with exactly one of guests, all or pool (found all, pool)');
    expect(file('guests: [a]\n').errors).toEqual([]);
  });
});
