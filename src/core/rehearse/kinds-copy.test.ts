/**
 * The objects of other kinds in a rehearsal's copy come from the plan's own reads, and only
 * those the apply touches: the HA resources of the copy's guests (one the HA kind did not read is
 * made from the listing's `hastate`), the services in `error` state, the firewall files and backup
 * jobs the plan changes, the pools the specs name with their members.
 */
import { describe, expect, it } from 'vitest';
import type { ObjectPlan, ObservedCluster, Plan } from '../model.js';
import { buildKindsCopy, factsOptions } from './kinds-copy.js';

function object(kind: string, key: string, payload: Record<string, unknown>, operations: string[] = ['op']): ObjectPlan {
  return {
    kind,
    key: `lab/${kind}/${key}`,
    cluster: 'lab',
    name: key,
    action: operations.length > 0 ? 'update' : 'noop',
    changes: [],
    operations: operations.map((op) => ({ op })),
    drift: [],
    errors: [],
    warnings: [],
    severity: 'configuration',
    payload,
  };
}

const OBSERVED: ObservedCluster = {
  name: 'lab',
  nodes: ['pve-01'],
  listing: [
    { vmid: 100, type: 'qemu', node: 'pve-01', hastate: 'error' },
    { vmid: 101, type: 'lxc', node: 'pve-01', hastate: 'stopped' },
    { vmid: 102, type: 'qemu', node: 'pve-01' },
    { vmid: 103, type: 'qemu', node: 'pve-01', hastate: 'started' },
  ],
  guests: {},
  objects: {
    ha: { resources: { 'vm:100': { sid: 'vm:100', state: 'started', max_restart: 2 }, 'vm:103': { sid: 'vm:103' } } },
    firewall: {
      guests: {
        '100': { node: 'pve-01', type: 'qemu', live: { rules: [{ type: 'in', action: 'ACCEPT', enable: true }] } },
        '102': { node: 'pve-01', type: 'qemu', live: { options: { enable: true } } },
      },
    },
    'backup-job': { jobs: { nightly: { schedule: 'sun 01:00', enabled: '1', vmid: '100' }, weekly: { schedule: 'sat', enabled: '1' } } },
    pool: { pools: { web: { state: 'present', vmids: [100], storage: [] }, gone: { state: 'absent' } } },
    'pool-member': { pools: { db: { state: 'present', comment: 'databases', vmids: [101], storage: ['local'] } } },
  },
};

const PLAN = {
  guests: [],
  objects: [
    object('firewall', '100', { vmid: 100 }, ['add-fw-rule']),
    object('firewall', '102', { vmid: 102 }, []),
    object('backup-job', 'nightly', { id: 'nightly' }),
    object('backup-job', 'weekly', { id: 'weekly' }, []),
  ],
} as unknown as Plan;

describe('buildKindsCopy', () => {
  it('copies what the plan read of the touched objects and of the copy’s guests, nothing else', () => {
    const copy = buildKindsCopy(PLAN, OBSERVED, new Set([100, 101, 102]));
    expect(copy.ha).toEqual([
      { sid: 'vm:100', state: 'started', max_restart: 2 },
      { sid: 'ct:101', state: 'stopped' },
    ]);
    expect(copy.haErrors).toEqual(['vm:100']);
    expect(Object.keys(copy.firewalls)).toEqual(['100']);
    expect(copy.backupJobs).toEqual({ nightly: { schedule: 'sun 01:00', enabled: '1', vmid: '100' } });
    expect(copy.pools).toEqual({
      web: { vmids: [100], storage: [] },
      db: { comment: 'databases', vmids: [101], storage: ['local'] },
    });
  });

  it.each([
    ['a rule written', PLAN, { firewall: true }],
    ['options only', { ...PLAN, objects: [object('firewall', '100', { vmid: 100 }, ['set-fw-options'])] }, {}],
    ['no firewall', { ...PLAN, objects: [object('backup-job', 'nightly', { id: 'nightly' })] }, {}],
  ])('reads the datacenter’s IPsets and aliases only for %s', (_what, plan, options) => {
    expect(factsOptions(plan as Plan, 'lab')).toEqual(options);
  });
});
