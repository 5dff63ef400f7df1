/**
 * The backup-job kind's pure parts: the document's schema, how a job Proxmox returns reads into
 * the managed values, what a PUT must send, the checks across documents, a stored item's check,
 * and plans made from what observe would have read. The reads and writes themselves run against
 * the simulator in test/kinds/backup.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { GuestSpec, ObjectPlan, ObjectSpec, SpecSet } from '../../model.js';
import type { KindPlanInput } from '../kind.js';
import { type BackupJobObserved, backupJobKind } from './backup-job-kind.js';
import { BackupJobDocument, holds, jobUpdate, liveValues, moved, retentionString, wantedValues } from './job.js';

const AT = { file: 'lab.yaml', line: 3, col: 1 };
const CLUSTER = { name: 'lab', vmids: { lower: 100, upper: 1000 }, ownerTag: 'pve-gitops', nodes: ['pve-01'], prune: false, source: AT };

function job(name: string, fields: Record<string, unknown>): ObjectSpec {
  return backupJobKind.load({ kind: 'BackupJob', name, cluster: 'lab', ...fields }, AT);
}

function guest(vmid: number, name: string, state: 'present' | 'absent' = 'present'): GuestSpec {
  return {
    kind: 'VM',
    type: 'qemu',
    name,
    cluster: 'lab',
    node: 'pve-01',
    vmid,
    vmidDerived: false,
    power: 'ignore',
    state,
    adopt: false,
    ignore: [],
    config: {},
    source: AT,
  };
}

function plan(head: ObjectSpec[], observed: BackupJobObserved, headGuests: GuestSpec[] = []): ObjectPlan[] {
  const input: KindPlanInput<BackupJobObserved> = {
    cluster: 'lab',
    head,
    headGuests,
    baseGuests: [],
    guestPlans: [],
    full: true,
    observed,
  };
  return backupJobKind.plan(input);
}

describe('a job as Proxmox returns it', () => {
  it('reads into the managed values: lists sorted, booleans and retention in one spelling, the rest left out', () => {
    expect(
      liveValues({
        id: 'nightly',
        type: 'vzdump',
        'next-run': 1700000000,
        schedule: 'sun 01:00',
        enabled: 1,
        vmid: '101,100',
        'prune-backups': { 'keep-weekly': '2', 'keep-last': 3 },
        all: 0,
      }),
    ).toEqual({ schedule: 'sun 01:00', enabled: '1', vmid: '100,101', 'prune-backups': 'keep-last=3,keep-weekly=2' });
    expect(retentionString('keep-weekly=2,keep-last=3')).toBe('keep-last=3,keep-weekly=2');
  });

  it('sends only what differs, with the schema defaults taken for what the job leaves out', () => {
    const spec = job('nightly', { schedule: 'daily', mode: 'snapshot', compress: 'zstd', guests: ['a'] });
    const want = wantedValues(spec, [101, 100]);
    expect(want).toEqual({ schedule: 'daily', enabled: '1', mode: 'snapshot', compress: 'zstd', vmid: '100,101' });
    expect(jobUpdate(want, { schedule: 'daily', vmid: '100,101' })).toEqual({ set: { compress: 'zstd' }, remove: [] });
    expect(jobUpdate(want, { schedule: 'daily', pool: 'web' })).toEqual({ set: { compress: 'zstd', vmid: '100,101' }, remove: [] });
    const all = wantedValues(job('weekly', { schedule: 'weekly', all: true }), []);
    expect(jobUpdate(all, { schedule: 'weekly', enabled: '1', all: '1', exclude: '101' })).toEqual({
      set: { all: '1' },
      remove: ['exclude'],
    });
  });

  it('tells whether a re-read holds what was sent, and what moved between two reads', () => {
    expect(holds({ schedule: 'daily' }, { schedule: 'daily', enabled: '1' }, [])).toBe(true);
    expect(holds({ schedule: 'daily', exclude: '1' }, {}, ['exclude'])).toBe(false);
    expect(moved({ vmid: '100' }, { vmid: '100,102', comment: 'x' })).toEqual([
      "comment: reviewed none, now 'x'",
      "vmid: reviewed '100', now '100,102'",
    ]);
  });
});

describe('BackupJob documents', () => {
  it('accepts the issue example and refuses what Proxmox would', () => {
    const ok = BackupJobDocument.safeParse({
      kind: 'BackupJob',
      name: 'nightly',
      cluster: 'lab',
      schedule: 'sun 01:00',
      storage: 'backup-nfs',
      mode: 'snapshot',
      compress: 'zstd',
      retention: { 'keep-last': 3, 'keep-weekly': 2 },
      'notes-template': '{{guestname}}',
      enabled: true,
      guests: ['db-01', 'web-01'],
    });
    expect(ok.success).toBe(true);
    const bad = (extra: Record<string, unknown>) =>
      BackupJobDocument.safeParse({ kind: 'BackupJob', name: 'nightly', cluster: 'lab', schedule: 'daily', all: true, ...extra }).success;
    expect(bad({ name: '1st' })).toBe(false);
    expect(bad({ mode: 'fast' })).toBe(false);
    expect(bad({ retention: { 'keep-all': true, 'keep-last': 1 } })).toBe(false);
    expect(bad({ 'notes-template': '{{vmid}}' })).toBe(false);
    expect(bad({ schedule: undefined })).toBe(false);
    expect(bad({ bwlimit: 10 })).toBe(false);
    expect(BackupJobDocument.safeParse({ kind: 'BackupJob', name: 'old', cluster: 'lab', state: 'absent' }).success).toBe(true);
  });

  it('refuses a guest named twice, and one the specs destroy', () => {
    const specs: SpecSet = {
      clusters: [CLUSTER],
      guests: [guest(100, 'web-01'), guest(101, 'db-01', 'absent')],
      objects: [job('nightly', { schedule: 'daily', guests: ['web-01', 'web-01', 'db-01'] })],
    };
    expect(backupJobKind.validate(specs).map((e) => e.message)).toEqual([
      "backup job 'nightly' names web-01 more than once",
      "backup job 'nightly' names db-01 (101), which has state: absent: drop it from the job (destroying a guest with purge removes it from every job)",
    ]);
  });
});

describe('planning a job', () => {
  it('is an error for a name two guests of the cluster carry', () => {
    const [item] = plan([job('nightly', { schedule: 'daily', guests: ['twin'] })], {
      jobs: { nightly: null },
      guests: [
        { vmid: 100, name: 'twin' },
        { vmid: 101, name: 'twin' },
      ],
    });
    expect(item?.errors).toEqual(["backup job 'nightly': guest 'twin' is ambiguous on cluster 'lab': VMIDs 100, 101 carry that name"]);
  });

  it('shows a move from a pool to guests as one selection row', () => {
    const [item] = plan(
      [job('nightly', { schedule: 'daily', guests: ['web-01'] })],
      { jobs: { nightly: { schedule: 'daily', pool: 'web' } } },
      [guest(100, 'web-01')],
    );
    expect(item?.changes).toEqual([{ key: 'selection', from: "pool 'web'", to: 'guests web-01 (100)', impact: 'live' }]);
  });

  it('makes every item of the cluster an error when the jobs could not be read', () => {
    const [item] = plan([job('nightly', { schedule: 'daily', all: true })], { jobs: {}, error: 'cannot read backup jobs: boom' });
    expect(item).toMatchObject({ action: 'error', errors: ['cannot read backup jobs: boom'], operations: [] });
  });
});

describe('a stored item', () => {
  const stored = (operations: ObjectPlan['operations']): ObjectPlan => ({
    kind: 'backup-job',
    key: 'lab/backup-job/nightly',
    cluster: 'lab',
    name: 'nightly',
    action: 'update',
    changes: [],
    operations,
    drift: [],
    errors: [],
    warnings: [],
    severity: 'configuration',
    payload: { id: 'nightly' },
  });

  it('is refused when an operation names another job or holds values that are not strings', () => {
    expect(() => backupJobKind.checkStored(stored([{ op: 'destroy-backup-job', id: 'other', reviewed: {} }]))).toThrow('names another job');
    expect(() =>
      backupJobKind.checkStored(stored([{ op: 'update-backup-job', id: 'nightly', set: { vmid: 100 }, remove: [], reviewed: {} }])),
    ).toThrow('update-backup-job.set.vmid is not a string');
    expect(() => backupJobKind.checkStored(stored([{ op: 'run-backup', id: 'nightly' }]))).toThrow(
      "unknown backup job operation 'run-backup'",
    );
    expect(() =>
      backupJobKind.checkStored(stored([{ op: 'update-backup-job', id: 'nightly', set: { vmid: '100' }, remove: [], reviewed: {} }])),
    ).not.toThrow();
  });
});
