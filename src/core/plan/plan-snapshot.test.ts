/**
 * What the plan says of a guest's snapshot from the storages it read (README "Snapshots first"):
 * taken, refused (an error), or unknown with why — and nothing of a live value for a guest whose
 * live values are withheld.
 */
import { describe, expect, it } from 'vitest';
import { makeClusterSpec, makeGuestPlan, makeGuestSpec, makeObserved } from '../../../test/helpers/factories.js';
import type { GuestPlan, ObservedCluster } from '../model.js';
import { planSnapshots } from './plan-snapshot.js';

const lab = makeClusterSpec({ snapshot: 'always' });

function planned(current: Record<string, string>, seen: Partial<ObservedCluster>, extra: Partial<GuestPlan> = {}): GuestPlan {
  const spec = makeGuestSpec({ vmid: 100101 });
  const plan = makeGuestPlan({
    target: { spec, ownerTag: 'pve-gitops', prune: false },
    ...extra,
  });
  const cluster: ObservedCluster = { name: 'lab', nodes: [], listing: [], guests: { 100101: makeObserved(current) }, ...seen };
  planSnapshots([plan], new Map([['lab', lab]]), { clusters: { lab: cluster } });
  return plan;
}

const RAW = { scsi0: 'local:100101/vm-100101-disk-0.raw,size=8G' };

describe('planSnapshots against the storages read', () => {
  it.each([
    ['the storages could not be read', { storageTypesError: 'HTTP 500' }, 'the storages could not be read: HTTP 500'],
    ['they were not read at all', {}, 'the storages were not read'],
    ['a plugin the table does not know', { storageTypes: { local: 'vendor-x' } }, "storage type 'vendor-x' is not one the plan knows"],
  ])('unsure when %s', (_name, seen, why) => {
    const plan = planned(RAW, seen);
    expect(plan.action).toBe('update');
    expect(plan.snapshot?.reason).toBe(
      `snapshot before the apply (snapshot: always); the plan cannot tell whether scsi0 on local can be snapshotted (${why}); a storage without snapshot support refuses it, and then nothing is written`,
    );
  });

  it('a VM disk that is a host path is refused', () => {
    const plan = planned({ scsi0: '/dev/disk/by-id/ata-X,size=8G' }, { storageTypes: {} });
    expect(plan.errors[0]).toMatch(
      /^snapshot refused: scsi0 \/dev\/disk\/by-id\/ata-X is a host path, not a storage volume, which cannot be snapshotted; /,
    );
  });

  it('a guest whose live values are withheld is refused without naming its volume or storage', () => {
    const plan = planned(RAW, { storageTypes: { local: 'dir' } }, { liveWithheld: true });
    expect(plan.action).toBe('error');
    expect(plan.errors[0]).toMatch(/^snapshot refused: scsi0 is on a storage whose type cannot snapshot it; /);
    expect(plan.errors.join(' ')).not.toMatch(/local|vm-100101/);
  });

  it('snapshot: never on the guest asks nothing of its storages', () => {
    const spec = makeGuestSpec({ vmid: 100101, snapshot: 'never' });
    const plan = makeGuestPlan({ target: { spec, ownerTag: 'pve-gitops', prune: false } });
    planSnapshots([plan], new Map([['lab', lab]]), { clusters: {} });
    expect([plan.action, plan.snapshot]).toEqual(['update', undefined]);
  });
});
