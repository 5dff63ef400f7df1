import { describe, expect, it } from 'vitest';
import { makeClusterSpec, makeObservedVm, makeVmSpec } from '../../../test/helpers/factories.js';
import type { GuestSpec, ObservedCluster, ObservedGuest, SpecSet } from '../model.js';
import { GuestPrePlans, planHasChanges, planHasErrors, planScope, planSpecs, scopedVmids } from './plan-specs.js';

const cluster = makeClusterSpec({ nodes: ['pve-01', 'pve-02'] });

function guest(name: string, vmid: number, config: Record<string, string> = {}): GuestSpec {
  return makeVmSpec(name, vmid, config);
}

function seen(guests: ObservedGuest[], extraListing: ObservedCluster['listing'] = []): ObservedCluster {
  return {
    name: 'lab',
    nodes: ['pve-01', 'pve-02'],
    listing: [
      ...guests.map((g) => ({ vmid: g.vmid, type: g.type, node: g.node, status: g.status, tags: g.current.tags })),
      ...extraListing,
    ],
    guests: Object.fromEntries(guests.map((g) => [g.vmid, g])),
  };
}

function observed(name: string, vmid: number, current: Record<string, string>, tags = 'pve-gitops'): ObservedGuest {
  return makeObservedVm(name, vmid, { tags, ...current });
}

const specs = (...guests: GuestSpec[]): SpecSet => ({ clusters: [cluster], guests });

describe('scopedVmids', () => {
  it('answers the VMIDs in scope of each cluster, as numbers, and none for a cluster out of scope', () => {
    const other = makeClusterSpec({ name: 'lab-2', vmids: { lower: 200_000, upper: 300_000 } });
    const base: SpecSet = { clusters: [cluster, other], guests: [guest('a', 100001), { ...guest('z', 200001), cluster: 'lab-2' }] };
    const head: SpecSet = {
      clusters: [cluster, other],
      guests: [guest('a', 100001, { cores: '4' }), guest('b', 100002), { ...guest('z', 200001), cluster: 'lab-2' }],
    };
    const scope = planScope(head, base);
    expect([...scopedVmids(scope, 'lab')].sort()).toEqual([100001, 100002]);
    expect(scopedVmids(scope, 'lab-2').size).toBe(0);
    expect(scopedVmids(scope, 'elsewhere').size).toBe(0);
  });
});

describe('planScope', () => {
  it('covers everything without a base', () => {
    const scope = planScope(specs(guest('a', 100001), guest('b', 100002)));
    expect([...scope.guests].sort()).toEqual(['lab/100001', 'lab/100002']);
    expect(scope.fullClusters.has('lab')).toBe(true);
  });

  it('covers only guests the change adds, edits or removes', () => {
    const base = specs(guest('a', 100001, { cores: '1' }), guest('b', 100002), guest('c', 100003));
    const head = specs(guest('a', 100001, { cores: '2' }), guest('b', 100002), guest('d', 100004));
    const scope = planScope(head, base);
    expect([...scope.guests].sort()).toEqual(['lab/100001', 'lab/100003', 'lab/100004']);
    expect(scope.fullClusters.size).toBe(0);
  });

  it('ignores a change of source position only', () => {
    const moved = { ...guest('a', 100001), source: { file: 'other.yaml', line: 9, col: 1 } };
    expect(planScope(specs(moved), specs(guest('a', 100001))).guests.size).toBe(0);
  });

  it('covers every guest of a cluster whose Cluster document changed', () => {
    const base = specs(guest('a', 100001), guest('b', 100002));
    const head: SpecSet = { clusters: [{ ...cluster, prune: true }], guests: base.guests };
    const scope = planScope(head, base);
    expect(scope.guests.size).toBe(2);
    expect(scope.fullClusters.has('lab')).toBe(true);
  });
});

describe('planSpecs', () => {
  it('plans nothing for an estate that matches', () => {
    const plan = planSpecs({
      head: specs(guest('a', 100001, { cores: '2' })),
      observed: { clusters: { lab: seen([observed('a', 100001, { cores: '2' })]) } },
    });
    expect(plan.summary).toMatchObject({ noop: 1, create: 0, update: 0 });
    expect(planHasChanges(plan)).toBe(false);
    expect(planHasErrors(plan)).toBe(false);
  });

  it('refuses to plan creates when the listing is empty but the base has guests there', () => {
    const base = specs(guest('a', 100001), guest('b', 100002));
    const head = specs(guest('a', 100001, { cores: '4' }), guest('b', 100002));
    const plan = planSpecs({ head, base, observed: { clusters: { lab: seen([]) } } });
    expect(plan.errors[0]?.message).toMatch(/listing is empty, but the base branch has 2 guest\(s\) there.*missing privileges/);
    expect(plan.guests).toEqual([]);
    expect(planHasErrors(plan)).toBe(true);
  });

  it('says "the specs" when a drift report finds the listing empty: it has no base branch', () => {
    const set = specs(guest('a', 100001), guest('b', 100002));
    const plan = planSpecs({ head: set, base: set, scope: planScope(set), observed: { clusters: { lab: seen([]) } } });
    expect(plan.errors[0]?.message).toMatch(/listing is empty, but the specs have 2 guest\(s\) there/);
  });

  it('warns, but plans creates, for an empty listing when nothing is expected there yet', () => {
    const plan = planSpecs({ head: specs(guest('a', 100001)), observed: { clusters: { lab: seen([]) } } });
    expect(plan.summary.create).toBe(1);
    expect(plan.warnings[0]?.message).toMatch(/VM.Audit/);
  });

  it('reports a cluster that could not be read', () => {
    const plan = planSpecs({ head: specs(guest('a', 100001)), observed: { clusters: {}, errors: { lab: '401 Authentication failed!' } } });
    expect(plan.errors).toEqual([{ cluster: 'lab', message: "cluster 'lab' could not be read: 401 Authentication failed!" }]);
  });

  it('lists orphans when planning a whole cluster, and destroys a removed guest only with prune', () => {
    const orphan = observed('old', 100009, {});
    const plan = planSpecs({ head: specs(guest('a', 100001)), observed: { clusters: { lab: seen([observed('a', 100001, {}), orphan]) } } });
    expect(plan.guests.find((g) => g.vmid === 100009)?.action).toBe('orphan');

    const base = specs(guest('a', 100001), guest('old', 100009));
    const pruned: SpecSet = { clusters: [{ ...cluster, prune: true }], guests: [guest('a', 100001)] };
    const keep = planSpecs({
      head: { ...pruned, clusters: [cluster] },
      base,
      observed: { clusters: { lab: seen([observed('a', 100001, {}), orphan]) } },
    });
    expect(keep.guests.find((g) => g.vmid === 100009)?.action).toBe('orphan');
    const destroy = planSpecs({
      head: pruned,
      base: { ...base, clusters: [{ ...cluster, prune: true }] },
      observed: { clusters: { lab: seen([observed('a', 100001, {}), orphan]) } },
    });
    expect(destroy.guests.find((g) => g.vmid === 100009)?.action).toBe('destroy');
  });

  it('does not read or plan guests outside the scope of a change', () => {
    const base = specs(guest('a', 100001), guest('b', 100002, { cores: '1' }));
    const head = specs(guest('a', 100001), guest('b', 100002, { cores: '2' }));
    const plan = planSpecs({
      head,
      base,
      observed: {
        clusters: {
          lab: seen([observed('b', 100002, { cores: '1' })], [{ vmid: 100001, type: 'qemu', node: 'pve-01', tags: 'pve-gitops' }]),
        },
      },
    });
    expect(plan.guests.map((g) => g.vmid)).toEqual([100002]);
    expect(plan.summary.update).toBe(1);
  });

  it('orders errors first, then the most severe changes', () => {
    const plan = planSpecs({
      head: specs(guest('z-new', 100003), { ...guest('gone', 100002), state: 'absent' }, guest('clash', 100001)),
      observed: { clusters: { lab: seen([observed('clash', 100001, {}, 'someone-else'), observed('gone', 100002, {})]) } },
    });
    expect(plan.guests.map((g) => g.action)).toEqual(['error', 'destroy', 'create']);
  });
});

describe('GuestPrePlans', () => {
  it('gives the plan that planning after the reads gives, and plans anew a guest whose read changed', () => {
    const head = specs(guest('a', 100001, { cores: '2' }), guest('b', 100002, { cores: '2' }));
    const lab = seen([observed('a', 100001, { cores: '1' }), observed('b', 100002, { cores: '2' }), observed('orphan', 100009, {})]);
    const at = new Date('2026-01-01T00:00:00Z');
    // A drift report: the specs against themselves, everything in scope.
    const scope = planScope(head);
    const plain = planSpecs({ head, base: head, observed: { clusters: { lab } }, scope, now: at });
    const prePlanned = new GuestPrePlans(head, head);
    for (const listed of lab.listing) prePlanned.add('lab', listed, lab.guests[listed.vmid]!);
    // Read again after the guest was planned (a migration): that plan must not be used.
    const stale = lab.guests[100002]!;
    lab.guests[100002] = { ...stale, current: { ...stale.current, cores: '8' } };
    const changed = planSpecs({ head, base: head, observed: { clusters: { lab } }, scope, now: at });
    expect(planSpecs({ head, base: head, observed: { clusters: { lab } }, scope, now: at, prePlanned })).toEqual(changed);
    expect(changed.guests.find((g) => g.vmid === 100002)?.drift).not.toEqual([]);
    expect(plain.guests.find((g) => g.vmid === 100002)?.drift).toEqual([]);
    expect(plain.guests.map((g) => g.action).sort()).toEqual(['noop', 'orphan', 'update']);
    lab.guests[100002] = stale;
    const again = new GuestPrePlans(head, head);
    for (const listed of lab.listing) again.add('lab', listed, lab.guests[listed.vmid]!);
    expect(planSpecs({ head, base: head, observed: { clusters: { lab } }, scope, now: at, prePlanned: again })).toEqual(plain);
  });
});
