import { describe, expect, it } from 'vitest';
import type { GuestSpec, ObservedGuest } from '../model.js';
import { LIVE_WITHHELD } from './base-ownership.js';
import { compareWithReviewed } from './compare-reviewed.js';
import { planGuest } from './plan-guest.js';

const spec: GuestSpec = {
  kind: 'VM',
  type: 'qemu',
  name: 'app',
  cluster: 'lab',
  node: 'pve-01',
  vmid: 100100,
  vmidDerived: false,
  power: 'running',
  state: 'present',
  adopt: false,
  ignore: ['description'],
  config: { memory: '4096', cores: '2', scsi0: 'local-lvm:64' },
  source: { file: 'app.yaml', line: 1, col: 1 },
};

function read(current: Record<string, string>, extra: Partial<ObservedGuest> = {}): ObservedGuest {
  return {
    vmid: 100100,
    type: 'qemu',
    node: 'pve-01',
    status: 'stopped',
    digest: 'e'.repeat(40),
    current: { name: 'app', tags: 'pve-gitops', memory: '2048', cores: '2', scsi0: 'local-lvm:vm-100100-disk-0,size=32G', ...current },
    pending: {},
    pendingDelete: [],
    ...extra,
  };
}

function plan(guest: ObservedGuest) {
  return planGuest({
    cluster: 'lab',
    vmid: 100100,
    spec,
    ownerTag: 'pve-gitops',
    prune: false,
    listed: { vmid: 100100, type: 'qemu', node: guest.node, status: guest.status },
    observed: guest,
  });
}

describe('compareWithReviewed', () => {
  const reviewed = plan(read({}));

  it('accepts the same change read again, whatever the digest', () => {
    expect(compareWithReviewed(reviewed, plan(read({}, { digest: 'f'.repeat(40) })))).toEqual([]);
  });

  it('accepts a change to a key the repository does not own (a backup lock cycle, a description edit)', () => {
    expect(compareWithReviewed(reviewed, plan(read({ description: 'edited in the GUI' })))).toEqual([]);
  });

  it('accepts what is left after a partial apply', () => {
    const afterConfig = plan(read({ memory: '4096' }));
    expect(afterConfig.operations.map((o) => o.op)).toEqual(['resize', 'start']);
    expect(compareWithReviewed(reviewed, afterConfig)).toEqual([]);
    const afterResize = plan(read({ memory: '4096', scsi0: 'local-lvm:vm-100100-disk-0,size=64G' }));
    expect(compareWithReviewed(reviewed, afterResize)).toEqual([]);
  });

  it('reports an operator edit of a key the change touches, with both versions', () => {
    expect(compareWithReviewed(reviewed, plan(read({ memory: '16384' })))).toEqual([
      { key: 'memory', reviewed: { from: '2048', to: '4096' }, now: { from: '16384', to: '4096' } },
    ]);
  });

  it('reports an operator edit of another owned key', () => {
    expect(compareWithReviewed(reviewed, plan(read({ cores: '8' })))).toEqual([
      { key: 'cores', reviewed: {}, now: { from: '8', to: '2' } },
    ]);
  });

  it('reports a disk grown outside git', () => {
    const now = plan(read({ scsi0: 'local-lvm:vm-100100-disk-0,size=48G' }));
    const conflicts = compareWithReviewed(reviewed, now);
    expect(conflicts.map((c) => c.key)).toEqual(['scsi0 (resize)']);
  });

  it('shows what moved on a guest the base branch did not own at review without its live values: the apply comment is as public as the plan', () => {
    const withheld = { ...reviewed, liveWithheld: true };
    expect(compareWithReviewed(withheld, plan(read({ memory: '16384', cores: '8' })))).toEqual([
      { key: 'cores', reviewed: {}, now: { from: LIVE_WITHHELD, to: '2' } },
      { key: 'memory', reviewed: { from: LIVE_WITHHELD, to: '4096' }, now: { from: LIVE_WITHHELD, to: '4096' } },
    ]);
    const taken = compareWithReviewed(withheld, plan(read({ tags: 'someone-else', name: 'payroll' })));
    expect(taken).toEqual([{ key: '(guest)', now: { to: LIVE_WITHHELD } }]);
  });

  it('reports a guest that became an error (a collision) as a conflict', () => {
    const taken = plan(read({ tags: 'someone-else' }));
    expect(compareWithReviewed(reviewed, taken)[0]?.key).toBe('(guest)');
  });
});
