import { describe, expect, it } from 'vitest';
import type { ListedGuest, ObjectSpec, SpecSet } from '../model.js';
import { importBackupJobs } from './backup-jobs.js';

const listing: ListedGuest[] = [
  { vmid: 100, type: 'qemu', node: 'pve-01', name: 'web-01' },
  { vmid: 101, type: 'qemu', node: 'pve-01' },
];
const NONE: SpecSet = { clusters: [], guests: [] };

describe('importBackupJobs', () => {
  it.each([
    [
      'a job selecting guests by VMID, named as the listing names them',
      { id: 'nightly', schedule: 'daily', vmid: '100', mode: 'stop', compress: 'zstd', enabled: 1 },
      { kind: 'BackupJob', name: 'nightly', cluster: 'lab', schedule: 'daily', mode: 'stop', compress: 'zstd', guests: ['web-01'] },
    ],
    [
      "a disabled job for a pool's guests, on one node",
      { id: 'pool-job', schedule: 'sat 03:00', pool: 'web', enabled: 0, node: 'pve-02', 'notes-template': '{{guestname}}', storage: 'pbs' },
      {
        kind: 'BackupJob',
        name: 'pool-job',
        cluster: 'lab',
        schedule: 'sat 03:00',
        enabled: false,
        storage: 'pbs',
        'notes-template': '{{guestname}}',
        node: 'pve-02',
        pool: 'web',
      },
    ],
    [
      'every guest, kept for ever',
      { id: 'all', schedule: 'weekly', all: 1, 'prune-backups': 'keep-all=1' },
      { kind: 'BackupJob', name: 'all', cluster: 'lab', schedule: 'weekly', retention: { 'keep-all': true }, all: true },
    ],
  ])('%s', (_what, raw, expected) => {
    expect(importBackupJobs('lab', [raw], listing, NONE)).toEqual({ documents: [expected], refused: [] });
  });

  it.each([
    ['a guest without a name', { id: 'j', schedule: 'daily', vmid: '100,101' }, /guest 101 has no name/],
    ['an exclude list', { id: 'j', schedule: 'daily', all: 1, exclude: '100' }, /excludes guests/],
    [
      'an option only root may set',
      { id: 'j', schedule: 'daily', all: 1, script: '/usr/local/bin/hook' },
      /sets script, which only root@pam/,
    ],
    ['no schedule', { id: 'j', all: 1 }, /schedule: a backup job needs a schedule/],
  ])('refuses a job with %s', (_what, raw, why) => {
    const result = importBackupJobs('lab', [raw], listing, NONE);
    expect(result.documents).toEqual([]);
    expect(result.refused).toEqual([{ id: 'j', why: expect.stringMatching(why) }]);
  });

  it('leaves out the jobs the specs describe, and names guests as the specs do', () => {
    const described = { kind: 'backup-job', cluster: 'lab', id: 'nightly' } as ObjectSpec;
    const specs: SpecSet = {
      clusters: [],
      guests: [{ cluster: 'lab', vmid: 101, name: 'db-01' }] as SpecSet['guests'],
      objects: [described],
    };
    const jobs = [
      { id: 'nightly', schedule: 'daily', all: 1 },
      { id: 'db', schedule: 'daily', vmid: '101' },
    ];
    expect(importBackupJobs('lab', jobs, listing, specs).documents.map((d) => [d.name, d.guests])).toEqual([['db', ['db-01']]]);
  });
});
