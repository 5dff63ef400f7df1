import { describe, expect, it } from 'vitest';
import { makeGuestSpec, makeObserved } from '../../../test/helpers/factories.js';
import type { GuestSpec, ListedGuest, ObservedGuest, Operation } from '../model.js';
import { planGuest, type GuestPlanInput } from './plan-guest.js';

const OWNER = 'pve-gitops';

function vmSpec(config: Record<string, string>, extra: Partial<GuestSpec> = {}): GuestSpec {
  return makeGuestSpec({ config, ...extra });
}

function ctSpec(config: Record<string, string>, extra: Partial<GuestSpec> = {}): GuestSpec {
  return makeGuestSpec({ type: 'lxc', name: 'ct-01', config, ...extra });
}

/** A guest as read from the cluster; `name`/`hostname` and owner tag filled in unless given. */
function observed(current: Record<string, string>, extra: Partial<ObservedGuest> = {}): ObservedGuest {
  const nameKey = extra.type === 'lxc' ? 'hostname' : 'name';
  return makeObserved({ [nameKey]: extra.type === 'lxc' ? 'ct-01' : 'app-01', ...current }, extra);
}

function listed(guest: ObservedGuest, extra: Partial<ListedGuest> = {}): ListedGuest {
  const l: ListedGuest = { vmid: guest.vmid, type: guest.type, node: guest.node, status: guest.status };
  if (guest.current.tags !== undefined) l.tags = guest.current.tags;
  return { ...l, ...extra };
}

function input(spec: GuestSpec | undefined, guest?: ObservedGuest, extra: Partial<GuestPlanInput> = {}): GuestPlanInput {
  const base: GuestPlanInput = { cluster: 'lab', vmid: spec?.vmid ?? guest?.vmid ?? 100101, ownerTag: OWNER, prune: false };
  if (spec) base.spec = spec;
  if (guest) {
    base.observed = guest;
    base.listed = listed(guest);
  }
  return { ...base, ...extra };
}

function configOp(ops: Operation[]): Extract<Operation, { op: 'config' }> | undefined {
  return ops.find((o): o is Extract<Operation, { op: 'config' }> => o.op === 'config');
}

describe('planGuest: no-op when the cluster already matches', () => {
  it.each([
    ['identical values', { memory: '4096', cores: '2' }, { memory: '4096', cores: '2' }],
    ['tags in another order and case', { tags: 'web;Prod' }, { tags: `${OWNER};prod;web` }],
    ['booleans as 1/0', { onboot: '1', protection: '0' }, { onboot: '1', protection: '0' }],
    ['a NIC whose MAC Proxmox chose', { net0: 'virtio,bridge=vmbr0' }, { net0: 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0' }],
    [
      'an allocated disk with its volume name and size',
      { scsi0: 'local-lvm:32,ssd=1' },
      { scsi0: 'local-lvm:vm-100101-disk-0,ssd=1,size=32G' },
    ],
    ['a cloud-init drive', { ide2: 'local-lvm:cloudinit' }, { ide2: 'local-lvm:vm-100101-cloudinit,media=cdrom,size=4M' }],
    ['memory as a property string', { memory: '8192' }, { memory: 'current=8192' }],
    ['agent with its default key', { agent: 'enabled=1,fstrim_cloned_disks=1' }, { agent: '1,fstrim_cloned_disks=1' }],
    ['a number type written differently', { cpulimit: '2' }, { cpulimit: '2.0' }],
    [
      'server-managed keys present on the guest',
      { cores: '2' },
      {
        cores: '2',
        meta: 'creation-qemu=9.2.0,ctime=1',
        vmgenid: 'x',
        smbios1: 'uuid=y',
        boot: 'order=scsi0',
        unused0: 'local-lvm:vm-1-disk-9',
        digest: 'b'.repeat(40),
      },
    ],
    ['an ignored key that differs', { cores: '2', description: 'from git' }, { cores: '2', description: 'edited in the GUI' }],
    ['URL-encoded ssh keys', { sshkeys: 'ssh-ed25519 AAAA user@host' }, { sshkeys: 'ssh-ed25519%20AAAA%20user%40host' }],
  ])('%s', (_label, config, current) => {
    const spec = vmSpec(config, _label === 'an ignored key that differs' ? { ignore: ['description'] } : {});
    const plan = planGuest(input(spec, observed(current)));
    expect(plan.errors).toEqual([]);
    expect(plan.changes).toEqual([]);
    expect(plan.action).toBe('noop');
    expect(plan.operations).toEqual([]);
  });
});

describe('planGuest: containers', () => {
  it('treats the MAC and veth type Proxmox fills into a NIC, and an allocated rootfs, as no change', () => {
    const plan = planGuest(
      input(
        ctSpec({ net0: 'name=eth0,bridge=vmbr0,ip=dhcp', rootfs: 'local-lvm:8', memory: '512' }),
        observed(
          {
            net0: 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=dhcp,type=veth',
            rootfs: 'local-lvm:vm-100101-disk-0,size=8G',
            memory: '512',
            arch: 'amd64',
            ostype: 'debian',
          },
          { type: 'lxc' },
        ),
      ),
    );
    expect(plan.changes).toEqual([]);
    expect(plan.action).toBe('noop');
  });
});

describe('planGuest: updates', () => {
  it('plans a key removed from the spec as `delete`, never an empty value', () => {
    const plan = planGuest(input(vmSpec({ cores: '2' }), observed({ cores: '2', cpulimit: '4' })));
    expect(plan.action).toBe('update');
    expect(configOp(plan.operations)).toEqual({ op: 'config', set: {}, delete: ['cpulimit'], from: { cpulimit: '4' } });
    expect(plan.changes).toEqual([{ key: 'cpulimit', from: '4', impact: 'live' }]);
  });

  it('keeps the MAC when a NIC changes bridge', () => {
    const plan = planGuest(input(vmSpec({ net0: 'virtio,bridge=vmbr1' }), observed({ net0: 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0' })));
    expect(configOp(plan.operations)?.set).toEqual({ net0: 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr1' });
  });

  it('keeps the MAC of a container NIC', () => {
    const plan = planGuest(
      input(
        ctSpec({ net0: 'name=eth0,bridge=vmbr1,ip=dhcp' }),
        observed({ net0: 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=dhcp,type=veth' }, { type: 'lxc' }),
      ),
    );
    expect(configOp(plan.operations)?.set.net0).toBe('name=eth0,bridge=vmbr1,ip=dhcp,hwaddr=BC:24:11:00:00:01');
  });

  it('refuses to shrink a disk', () => {
    const plan = planGuest(input(vmSpec({ scsi0: 'local-lvm:32' }), observed({ scsi0: 'local-lvm:vm-100101-disk-0,size=40G' })));
    expect(plan.action).toBe('error');
    expect(plan.errors[0]).toMatch(/refusing to shrink scsi0 from 40G to 32G/);
    expect(plan.operations).toEqual([]);
  });

  it('grows a disk through resize, not through the config', () => {
    const plan = planGuest(input(vmSpec({ scsi0: 'local-lvm:64' }), observed({ scsi0: 'local-lvm:vm-100101-disk-0,size=32G' })));
    expect(plan.operations).toEqual([{ op: 'resize', disk: 'scsi0', size: '64G', from: '32G' }]);
  });

  it('moves a disk to another storage through move-disk', () => {
    const plan = planGuest(input(vmSpec({ scsi0: 'ceph:32' }), observed({ scsi0: 'local-lvm:vm-100101-disk-0,size=32G' })));
    expect(plan.operations).toEqual([{ op: 'move-disk', disk: 'scsi0', storage: 'ceph', from: 'local-lvm' }]);
  });

  it('changes disk options keeping the volume and size', () => {
    const plan = planGuest(input(vmSpec({ scsi0: 'local-lvm:32,discard=on' }), observed({ scsi0: 'local-lvm:vm-100101-disk-0,size=32G' })));
    expect(configOp(plan.operations)?.set).toEqual({ scsi0: 'local-lvm:vm-100101-disk-0,discard=on,size=32G' });
  });

  it('attaches a new disk by allocation', () => {
    const plan = planGuest(input(vmSpec({ scsi1: 'local-lvm:10' }), observed({})));
    expect(configOp(plan.operations)?.set).toEqual({ scsi1: 'local-lvm:10' });
  });

  it('detaches a disk dropped from the spec, never destroying it', () => {
    const plan = planGuest(input(vmSpec({}), observed({ scsi1: 'local-lvm:vm-100101-disk-1,size=10G' })));
    expect(configOp(plan.operations)?.delete).toEqual(['scsi1']);
    expect(plan.warnings.join()).toMatch(/detached and kept as an unused volume/);
    expect(plan.severity).toBe('service-impact');
  });

  it('refuses to detach a disk of a protected guest', () => {
    const plan = planGuest(input(vmSpec({ protection: '1' }), observed({ protection: '1', scsi1: 'local-lvm:vm-100101-disk-1,size=10G' })));
    expect(plan.action).toBe('error');
    expect(plan.errors[0]).toMatch(/protection/);
  });

  it.each([
    ['cores', { cores: '4' }, { cores: '2' }, 'pending-restart'],
    ['memory without memory hotplug', { memory: '8192' }, { memory: '4096' }, 'pending-restart'],
    [
      'memory with memory hotplug',
      { memory: '8192', hotplug: 'network,disk,memory' },
      { memory: '4096', hotplug: 'network,disk,memory' },
      'live',
    ],
    ['tags', { tags: 'web' }, {}, 'live'],
    ['the NIC bridge', { net0: 'virtio,bridge=vmbr1' }, { net0: 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0' }, 'live'],
    [
      'the NIC model without network hotplug',
      { net0: 'e1000,bridge=vmbr0', hotplug: 'disk' },
      { net0: 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0', hotplug: 'disk' },
      'pending-restart',
    ],
  ])("labels a running VM's %s change as %s", (key, config, current, impact) => {
    const plan = planGuest(input(vmSpec(config), observed(current, { status: 'running' })));
    const change = plan.changes.find((c) => c.key === (key.startsWith('the NIC') ? 'net0' : key.split(' ')[0]));
    expect(change?.impact).toBe(impact);
  });

  it('applies everything at once on a stopped guest', () => {
    const plan = planGuest(input(vmSpec({ cores: '4' }), observed({ cores: '2' })));
    expect(plan.changes).toEqual([{ key: 'cores', from: '2', to: '4', impact: 'live' }]);
  });

  it('treats a value already pending as planned, and reports it as pending rather than done', () => {
    const guest = observed({ cores: '2' }, { status: 'running', pending: { cores: '4' } });
    const plan = planGuest(input(vmSpec({ cores: '4' }), guest));
    expect(plan.action).toBe('noop');
    expect(plan.pending).toEqual([{ key: 'cores', current: '2', pending: '4' }]);
  });

  it('starts and shuts down guests whose power is managed', () => {
    const start = planGuest(input(vmSpec({}, { power: 'running' }), observed({})));
    expect(start.operations).toEqual([{ op: 'start' }]);
    const stop = planGuest(input(vmSpec({}, { power: 'stopped' }), observed({}, { status: 'running' })));
    expect(stop.operations).toEqual([{ op: 'shutdown' }]);
    expect(stop.severity).toBe('service-impact');
    const ignored = planGuest(input(vmSpec({}, { power: 'ignore' }), observed({}, { status: 'running' })));
    expect(ignored.operations).toEqual([]);
  });

  it('finds a guest on another node and does not move it back', () => {
    const guest = observed({ cores: '1' }, { node: 'pve-02' });
    const plan = planGuest(input(vmSpec({ cores: '2' }), guest));
    expect(plan.node).toBe('pve-02');
    expect(plan.action).toBe('update');
    expect(plan.operations.some((o) => o.op === 'create')).toBe(false);
    expect(plan.warnings.join()).toMatch(/lives on pve-02/);
  });

  it('records the digest of the read it planned from', () => {
    const plan = planGuest(input(vmSpec({ cores: '2' }), observed({ cores: '1' }, { digest: 'c'.repeat(40) })));
    expect(plan.digest).toBe('c'.repeat(40));
  });

  it('warns about a lock but still plans', () => {
    const plan = planGuest(input(vmSpec({ cores: '2' }), observed({ cores: '1', lock: 'backup' })));
    expect(plan.action).toBe('update');
    expect(plan.warnings.join()).toMatch(/locked \(backup\)/);
  });
});

describe('planGuest: ownership', () => {
  it('reports a collision with an unowned guest as an error', () => {
    const plan = planGuest(input(vmSpec({ cores: '2' }), observed({ tags: 'someone-else' })));
    expect(plan.action).toBe('error');
    expect(plan.errors[0]).toMatch(/collision: VMID 100101 already exists on pve-01 \(app-01\) without the owner tag/);
  });

  it('adopts an unowned guest with the same name when asked, adding the owner tag', () => {
    const plan = planGuest(input(vmSpec({ cores: '2', tags: 'legacy' }, { adopt: true }), observed({ cores: '2', tags: 'legacy' })));
    expect(plan.adopt).toBe(true);
    expect(configOp(plan.operations)?.set).toEqual({ tags: `legacy;${OWNER}` });
  });

  it('refuses to adopt a guest with another name', () => {
    const plan = planGuest(input(vmSpec({}, { adopt: true }), observed({ name: 'other', tags: '' })));
    expect(plan.action).toBe('error');
  });

  it('refuses a derived VMID that belongs to another owned guest', () => {
    const plan = planGuest(input(vmSpec({}, { vmidDerived: true }), observed({ name: 'someone-else' })));
    expect(plan.action).toBe('error');
    expect(plan.errors[0]).toMatch(/pin a free vmid/);
  });

  it('refuses a guest of the other type on the VMID', () => {
    const plan = planGuest(input(vmSpec({}), observed({}, { type: 'lxc' })));
    expect(plan.action).toBe('error');
  });
});

describe('planGuest: create, destroy, orphans', () => {
  it('creates a missing guest with the spec VMID, owner tag and name, then starts it', () => {
    const plan = planGuest(input(vmSpec({ memory: '2048', tags: 'web' }, { power: 'running' })));
    expect(plan.action).toBe('create');
    expect(plan.operations).toEqual([
      { op: 'create', node: 'pve-01', params: { memory: '2048', name: 'app-01', tags: `${OWNER};web` } },
      { op: 'start' },
    ]);
  });

  it('passes create-only options with the create', () => {
    const plan = planGuest(input(ctSpec({ memory: '512' }, { createOptions: { ostemplate: 'local:vztmpl/debian.tar.zst' } })));
    expect(plan.operations[0]).toMatchObject({ op: 'create', params: { ostemplate: 'local:vztmpl/debian.tar.zst', hostname: 'ct-01' } });
  });

  it('refuses to create a container without a template', () => {
    const plan = planGuest(input(ctSpec({ memory: '512' }, { adopt: true })));
    expect(plan.action).toBe('error');
    expect(plan.errors[0]).toMatch(/without create.ostemplate/);
  });

  it('destroys an owned guest with state: absent by stopping it first', () => {
    const plan = planGuest(input(vmSpec({}, { state: 'absent' }), observed({}, { status: 'running' })));
    expect(plan.action).toBe('destroy');
    expect(plan.operations).toEqual([{ op: 'stop' }, { op: 'destroy' }]);
    expect(plan.severity).toBe('data-loss');
  });

  it('does not lift protection to destroy', () => {
    const plan = planGuest(input(vmSpec({}, { state: 'absent' }), observed({ protection: '1' })));
    expect(plan.action).toBe('error');
    expect(plan.errors[0]).toMatch(/protection blocks destroy/);
  });

  it('refuses to destroy a guest it does not own', () => {
    const plan = planGuest(input(vmSpec({}, { state: 'absent' }), observed({ tags: '' })));
    expect(plan.action).toBe('error');
  });

  it('reports an owned guest without a spec as an orphan, and destroys it only with prune', () => {
    const guest = observed({});
    expect(planGuest(input(undefined, guest)).action).toBe('orphan');
    const pruned = planGuest(input(undefined, guest, { prune: true }));
    expect(pruned.action).toBe('destroy');
  });

  it('leaves an unowned guest without a spec alone', () => {
    const plan = planGuest(input(undefined, observed({ tags: '' })));
    expect(plan.action).toBe('noop');
  });
});

describe('planGuest: drift against the base branch', () => {
  it('reports values changed outside git', () => {
    const base = vmSpec({ memory: '4096', cores: '2' });
    const head = vmSpec({ memory: '4096', cores: '4' });
    const plan = planGuest(input(head, observed({ memory: '8192', cores: '2' }), { baseSpec: base }));
    expect(plan.drift).toEqual([{ key: 'memory', expected: '4096', actual: '8192' }]);
    // Merging reverts the drift: memory goes back to 4096 together with the PR's own change.
    expect(plan.changes.map((c) => c.key)).toEqual(['cores', 'memory']);
  });

  it('reports no drift when the cluster matches the base', () => {
    const base = vmSpec({ cores: '2' });
    const plan = planGuest(input(vmSpec({ cores: '4' }), observed({ cores: '2' }), { baseSpec: base }));
    expect(plan.drift).toEqual([]);
  });

  it('reports a guest deleted outside git once Proxmox confirms its VMID is free', () => {
    const base = vmSpec({ cores: '2' });
    const plan = planGuest(input(vmSpec({ cores: '2' }), undefined, { baseSpec: base, existsUnlisted: false }));
    expect(plan.action).toBe('create');
    expect(plan.drift).toEqual([{ key: '(guest)', expected: 'present' }]);
    expect(plan.warnings.join()).toContain('Proxmox confirms VMID 100101 is free');
  });
});

describe('planGuest: missing privileges never look like missing guests', () => {
  const hidden = 'exists on the cluster, but this token cannot see it: it lacks VM.Audit on /vms/100101';

  it('refuses to recreate a guest of the base branch the token cannot see', () => {
    const base = vmSpec({ cores: '2' });
    const plan = planGuest(input(vmSpec({ cores: '2' }), undefined, { baseSpec: base, existsUnlisted: true }));
    expect(plan.action).toBe('error');
    expect(plan.errors.join()).toContain(hidden);
    expect(plan.operations).toEqual([]);
  });

  it('refuses to recreate a guest of the base branch when nobody asked whether its VMID is free', () => {
    const plan = planGuest(input(vmSpec({}), undefined, { baseSpec: vmSpec({}) }));
    expect(plan.action).toBe('error');
    expect(plan.errors.join()).toContain('Proxmox was not asked whether the VMID is free');
  });

  it.each([
    ['a new spec', vmSpec({}), undefined],
    ['a spec asking for absence', vmSpec({}, { state: 'absent' }), undefined],
    ['a removed spec', undefined, vmSpec({})],
  ])('makes %s whose VMID a hidden guest holds an error', (_label, spec, baseSpec) => {
    const plan = planGuest(input(spec, undefined, { vmid: 100101, existsUnlisted: true, ...(baseSpec ? { baseSpec } : {}) }));
    expect(plan.action).toBe('error');
    expect(plan.errors.join()).toContain(hidden);
  });

  it('reports why Proxmox could not be asked', () => {
    const plan = planGuest(input(vmSpec({}), undefined, { readError: 'could not ask Proxmox whether VMID 100101 exists: 500' }));
    expect(plan.action).toBe('error');
    expect(plan.errors).toEqual(['could not ask Proxmox whether VMID 100101 exists: 500']);
  });

  it('creates a new guest whose VMID Proxmox says is free', () => {
    expect(planGuest(input(vmSpec({}), undefined, { existsUnlisted: false })).action).toBe('create');
  });
});
