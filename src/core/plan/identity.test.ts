/**
 * A VMID names one guest, a Cluster document speaks only for its own range, and a guest the token
 * cannot see is never planned as missing (docs/identity-and-privileges.md).
 */
import { describe, expect, it } from 'vitest';
import { makeClusterSpec, makeObservedVm, makeVmSpec } from '../../../test/helpers/factories.js';
import type { ClusterSpec, GuestSpec, ObservedCluster, ObservedGuest, SpecSet } from '../model.js';
import { planHasErrors, planScope, planSpecs } from './plan-specs.js';

const lab = makeClusterSpec();

function spec(name: string, vmid: number, extra: Partial<GuestSpec> = {}): GuestSpec {
  return makeVmSpec(name, vmid, { memory: '2048', scsi0: 'local-lvm:32' }, extra);
}

function live(name: string, vmid: number, current: Record<string, string> = {}, tags = 'pve-gitops'): ObservedGuest {
  return makeObservedVm(name, vmid, { tags, memory: '2048', scsi0: `local-lvm:vm-${vmid}-disk-0,size=32G`, ...current });
}

function cluster(guests: ObservedGuest[], unlisted: Record<number, boolean> = {}): ObservedCluster {
  return {
    name: 'lab',
    nodes: ['pve-01'],
    listing: guests.map((g) => ({
      vmid: g.vmid,
      type: g.type,
      node: g.node,
      status: g.status,
      tags: g.current.tags,
      name: g.current.name,
    })),
    guests: Object.fromEntries(guests.map((g) => [g.vmid, g])),
    unlisted,
  };
}

const set = (clusters: ClusterSpec[], ...guests: GuestSpec[]): SpecSet => ({ clusters, guests });

describe('a VMID names one guest', () => {
  // web-01's VMID was derived; a new spec pins that VMID, which moves web-01's derived VMID on.
  const base = set([lab], spec('web-01', 150001, { vmidDerived: true }));
  const head = set([lab], spec('web-02', 150001), spec('web-01', 150002, { vmidDerived: true }));
  const observed = {
    clusters: { lab: cluster([live('web-01', 150001, { scsi1: 'local-lvm:vm-150001-disk-1,size=100G' })], { 150002: false }) },
  };

  it('refuses a new pinned spec that would take over the guest of a spec with a derived VMID, naming both', () => {
    const plan = planSpecs({ head, base, observed });
    expect(planHasErrors(plan)).toBe(true);
    const byVmid = new Map(plan.guests.map((g) => [g.vmid, g]));
    for (const vmid of [150001, 150002]) {
      const g = byVmid.get(vmid);
      expect(g?.action).toBe('error');
      expect(g?.operations).toEqual([]);
      expect(g?.errors.join()).toContain("'lab/web-02' (web-02.yaml:1) pins it");
      expect(g?.errors.join()).toContain("'lab/web-01' (web-01.yaml:1) now places at 150002");
    }
    expect(plan.summary).toMatchObject({ create: 0, update: 0, error: 2 });
  });

  it('refuses the same takeover without a base branch, from the name the guest carries', () => {
    const plan = planSpecs({ head, observed });
    const errors = plan.guests.filter((g) => g.action === 'error');
    expect(errors.map((g) => g.vmid).sort()).toEqual([150001, 150002]);
    expect(errors[0]?.errors.join()).toContain("guest 150001 on the cluster is 'web-01'");
  });

  it('refuses a derived VMID that an owned guest of another spec holds, naming both specs', () => {
    const derived = set([lab], spec('web-02', 150001, { vmidDerived: true }), spec('web-01', 150002));
    const plan = planSpecs({ head: derived, observed });
    const first = plan.guests.find((g) => g.vmid === 150001);
    expect(first?.action).toBe('error');
    expect(first?.errors.join()).toContain("'lab/web-02' (web-02.yaml:1) derives it");
    expect(first?.errors.join()).toContain("'lab/web-01' (web-01.yaml:1)");
  });

  it('lets a spec with a pinned VMID rename its guest when no other spec claims the old name', () => {
    const renamed = set([lab], spec('web-02', 150001));
    const plan = planSpecs({ head: renamed, base: set([lab], spec('web-01', 150001)), observed });
    const g = plan.guests.find((p) => p.vmid === 150001);
    expect(g?.action).toBe('update');
    expect(g?.changes.find((c) => c.key === 'name')).toMatchObject({ from: 'web-01', to: 'web-02' });
  });

  it('refuses a guest of another spec at a pinned VMID that the listing alone names', () => {
    const listedOnly: ObservedCluster = { ...cluster([live('web-01', 150001)]), guests: {}, readErrors: { 150001: 'boom' } };
    const plan = planSpecs({ head, observed: { clusters: { lab: { ...listedOnly, unlisted: { 150002: false } } } } });
    expect(plan.guests.find((g) => g.vmid === 150002)?.action).toBe('error');
  });
});

describe('a Cluster document speaks only for its own VMID range', () => {
  // Two documents of one Proxmox cluster with the same owner tag: `lab` and `lab-b`.
  const labB: ClusterSpec = { ...lab, name: 'lab-b', vmids: { lower: 300000, upper: 400000 }, prune: true };
  const observedB = { clusters: { 'lab-b': { ...cluster([live('web-01', 150001), live('b-old', 300009)]), name: 'lab-b' } } };

  it('never lists or destroys guests outside its range, even with prune: true', () => {
    const plan = planSpecs({ head: set([lab, labB]), observed: observedB });
    const vmids = plan.guests.filter((g) => g.cluster === 'lab-b').map((g) => [g.vmid, g.action]);
    expect(vmids).toEqual([[300009, 'destroy']]);
  });

  it('keeps a removed guest whose VMID left the range of the document as an orphan', () => {
    const shrunk: ClusterSpec = { ...labB, vmids: { lower: 300000, upper: 300005 } };
    const base = set([labB], { ...spec('b-old', 300009), cluster: 'lab-b' });
    const plan = planSpecs({ head: set([shrunk]), base, observed: observedB });
    expect(plan.guests.find((g) => g.vmid === 300009)?.action).toBe('orphan');
  });
});

describe('missing privileges never look like missing guests', () => {
  const base = set([lab], spec('web-01', 150001), spec('web-02', 150002));
  const head = set([lab], spec('web-01', 150001, { config: { memory: '4096' } }), spec('web-02', 150002, { config: { memory: '4096' } }));

  it('makes a base guest the token cannot see an error naming VM.Audit on /vms/N, not a create', () => {
    const plan = planSpecs({ head, base, observed: { clusters: { lab: cluster([live('web-01', 150001)], { 150002: true }) } } });
    const hidden = plan.guests.find((g) => g.vmid === 150002);
    expect(hidden?.action).toBe('error');
    expect(hidden?.errors.join()).toContain('lacks VM.Audit on /vms/150002');
    expect(plan.summary.create).toBe(0);
  });

  it('plans the create again only when Proxmox confirms the VMID is free', () => {
    const plan = planSpecs({ head, base, observed: { clusters: { lab: cluster([live('web-01', 150001)], { 150002: false }) } } });
    expect(plan.guests.find((g) => g.vmid === 150002)?.action).toBe('create');
  });

  it('reports an owned guest the drift report cannot see as an error, not as missing', () => {
    // The drift report plans everything, with the specs as their own base.
    const scope = planScope(base);
    const plan = planSpecs({
      head: base,
      base,
      scope,
      observed: { clusters: { lab: cluster([live('web-01', 150001)], { 150002: true }) } },
    });
    expect(plan.guests.find((g) => g.vmid === 150002)?.errors.join()).toContain('lacks VM.Audit on /vms/150002');
    expect(plan.guests.find((g) => g.vmid === 150002)?.drift).toEqual([]);
  });
});
