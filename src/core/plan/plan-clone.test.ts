import { describe, expect, it } from 'vitest';
import { makeGuestSpec, makeObserved } from '../../../test/helpers/factories.js';
import type { GuestSpec, ListedGuest, ObservedGuest } from '../model.js';
import { configAfterClone, resolveCloneSource, withoutMac, type CloneSourceSeen } from './plan-clone.js';
import { planGuest } from './plan-guest.js';

const CT_TEMPLATE = {
  hostname: 'ct-tpl',
  net0: 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:91:00,ip=dhcp,type=veth',
  rootfs: 'shared:base-9100-disk-0,size=4G',
  template: '1',
  unused0: 'shared:vm-9100-disk-9',
};

/** A cluster holding one guest of `type` at VMID 9100 on pve-01 with `current`. */
function seen(type: 'qemu' | 'lxc', current: Record<string, string>, extra: Partial<ObservedGuest> = {}): CloneSourceSeen {
  const observed = makeObserved(current, { vmid: 9100, type, ...extra });
  const name = current.hostname ?? current.name;
  const listed: ListedGuest = { vmid: 9100, type, node: 'pve-01', name, template: current.template === '1', status: observed.status };
  return { listing: [listed], guests: { 9100: observed } };
}

const ct = (clone: GuestSpec['clone'], extra: Partial<GuestSpec> = {}): GuestSpec =>
  makeGuestSpec({ type: 'lxc', kind: 'Container', name: 'cache-01', clone, ...extra });

describe('resolveCloneSource: the template and what Proxmox would refuse', () => {
  it.each<[string, GuestSpec, CloneSourceSeen, string | undefined]>([
    ['by name', ct({ template: 'ct-tpl' }), seen('lxc', CT_TEMPLATE), undefined],
    ['by VMID', ct({ template: '9100' }), seen('lxc', CT_TEMPLATE), undefined],
    ['missing', ct({ template: 'nope' }), seen('lxc', CT_TEMPLATE), "create.clone: there is no template 'nope' on cluster 'lab'"],
    [
      'of the other type',
      makeGuestSpec({ clone: { template: 'ct-tpl' } }),
      seen('lxc', CT_TEMPLATE),
      "create.clone: 'ct-tpl' is not a VM template (VMID 9100 is of another type)",
    ],
    [
      'a full clone of a running container',
      ct({ template: 'ct-tpl', full: true }),
      seen('lxc', { ...CT_TEMPLATE, template: '0' }, { status: 'running' }),
      `create.clone: 'ct-tpl' is running, and Proxmox refuses a full clone of a running container ("Full clone of a running container is only possible from a snapshot")`,
    ],
    [
      'a container template with a bind mount',
      ct({ template: 'ct-tpl' }),
      seen('lxc', { ...CT_TEMPLATE, mp0: '/srv/data,mp=/data' }),
      "create.clone: 'ct-tpl' has a bind mount (mp0), which Proxmox cannot clone (\"unable to clone mountpoint 'mp0'\")",
    ],
  ])('%s', (_name, spec, cluster, error) => {
    const resolved = resolveCloneSource(spec, cluster);
    if (error === undefined) expect(resolved).toMatchObject({ vmid: 9100, node: 'pve-01', name: 'ct-tpl' });
    else expect(resolved).toEqual({ error });
  });

  it('copies what Proxmox copies: no unusedN, no template, the NIC without its MAC, the name given', () => {
    const source = resolveCloneSource(ct({ template: 'ct-tpl' }), seen('lxc', CT_TEMPLATE));
    if ('error' in source) throw new Error(source.error);
    expect(configAfterClone(ct({ template: 'ct-tpl' }), source)).toEqual({
      hostname: 'cache-01',
      net0: 'name=eth0,bridge=vmbr0,ip=dhcp,type=veth',
      rootfs: 'shared:base-9100-disk-0,size=4G',
      tags: 'pve-gitops',
    });
    expect(withoutMac('qemu', 'virtio=BC:24:11:00:90:00,bridge=vmbr0')).toBe('virtio,bridge=vmbr0');
  });

  it('a full clone has its disks on its storage (the template’s without one), as volumes of the new guest', () => {
    const source = resolveCloneSource(ct({ template: 'ct-tpl' }), seen('lxc', CT_TEMPLATE));
    if ('error' in source) throw new Error(source.error);
    const full = ct({ template: 'ct-tpl', full: true, storage: 'ceph' }, { vmid: 100201 });
    expect(configAfterClone(full, source).rootfs).toBe('ceph:vm-100201-disk-0,size=4G');
    expect(configAfterClone(ct({ template: 'ct-tpl', full: true }, { vmid: 100201 }), source).rootfs).toBe(
      'shared:vm-100201-disk-0,size=4G',
    );
    expect(configAfterClone(ct({ template: 'ct-tpl' }, { vmid: 100201 }), source).rootfs).toBe('shared:base-9100-disk-0,size=4G');
  });
});

describe('templates and ownership', () => {
  it('a template with the owner tag and no spec is no orphan and never pruned', () => {
    const template = makeObserved({ name: 'debian-12-cloud', template: '1' }, { vmid: 100900 });
    const listed: ListedGuest = { vmid: 100900, type: 'qemu', node: 'pve-01', name: 'debian-12-cloud', tags: 'pve-gitops', template: true };
    const plan = planGuest({ cluster: 'lab', vmid: 100900, ownerTag: 'pve-gitops', prune: true, listed, observed: template });
    expect(plan.action).toBe('noop');
    expect(plan.operations).toEqual([]);
    expect(plan.warnings).toEqual(['a template without a spec: never an orphan, never pruned (give it a spec to manage it)']);
  });

  it('template: true on a stopped guest converts it; on a running one it is an error', () => {
    const spec = makeGuestSpec({ template: true });
    const stopped = planGuest({ cluster: 'lab', vmid: 100101, spec, ownerTag: 'pve-gitops', prune: false, observed: makeObserved() });
    expect(stopped.operations).toEqual([{ op: 'template' }]);
    const running = planGuest({
      cluster: 'lab',
      vmid: 100101,
      spec,
      ownerTag: 'pve-gitops',
      prune: false,
      observed: makeObserved({}, { status: 'running' }),
    });
    expect(running.errors).toEqual(['template: true, but the guest is running: Proxmox converts only a stopped guest; stop it first']);
  });
});
