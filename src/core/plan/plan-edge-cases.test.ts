import { describe, expect, it } from 'vitest';
import type { ClusterSpec, GuestSpec, ObservedGuest, SpecSet } from '../model.js';
import { compareWithReviewed } from './compare-reviewed.js';
import { planGuest, type GuestPlanInput } from './plan-guest.js';
import { planSpecs } from './plan-specs.js';

const OWNER = 'pve-gitops';

function spec(type: 'qemu' | 'lxc', config: Record<string, string>, extra: Partial<GuestSpec> = {}): GuestSpec {
  return {
    kind: type === 'qemu' ? 'VM' : 'Container',
    type,
    name: 'g1',
    cluster: 'lab',
    node: 'pve-01',
    vmid: 100500,
    vmidDerived: false,
    power: 'ignore',
    state: 'present',
    adopt: false,
    ignore: [],
    config,
    source: { file: 'g1.yaml', line: 1, col: 1 },
    ...extra,
  };
}

function seen(type: 'qemu' | 'lxc', current: Record<string, string>, extra: Partial<ObservedGuest> = {}): ObservedGuest {
  return {
    vmid: 100500,
    type,
    node: 'pve-01',
    status: 'running',
    digest: 'a'.repeat(40),
    current: { [type === 'qemu' ? 'name' : 'hostname']: 'g1', tags: OWNER, ...current },
    pending: {},
    pendingDelete: [],
    ...extra,
  };
}

function plan(s: GuestSpec | undefined, o: ObservedGuest | undefined, extra: Partial<GuestPlanInput> = {}) {
  const input: GuestPlanInput = { cluster: 'lab', vmid: 100500, ownerTag: OWNER, prune: false, ...extra };
  if (s) input.spec = s;
  if (o) {
    input.observed = o;
    input.listed = { vmid: o.vmid, type: o.type, node: o.node, status: o.status, tags: o.current.tags ?? '' };
  }
  return planGuest(input);
}

describe('values Proxmox rewrites when it creates a guest are not drift', () => {
  it.each([
    [
      'an EFI vars disk whose size Proxmox chose',
      { efidisk0: 'local-lvm:1,efitype=4m,pre-enrolled-keys=1' },
      { efidisk0: 'local-lvm:vm-100500-disk-1,efitype=4m,pre-enrolled-keys=1,size=4M' },
    ],
    ['a TPM state disk', { tpmstate0: 'local-lvm:1,version=v2.0' }, { tpmstate0: 'local-lvm:vm-100500-disk-2,size=4M,version=v2.0' }],
    [
      'a disk allocated with a format Proxmox does not store',
      { scsi0: 'local:32,format=qcow2' },
      { scsi0: 'local:100500/vm-100500-disk-0.qcow2,size=32G' },
    ],
    [
      'a cloud-init drive on directory storage',
      { ide2: 'local:cloudinit' },
      { ide2: 'local:100500/vm-100500-cloudinit.qcow2,media=cdrom,size=4M' },
    ],
    ['the machine type Proxmox pins for Windows', { ostype: 'win11' }, { ostype: 'win11', machine: 'pc-q35-9.2+pve1' }],
    ['startup options in another order', { startup: 'order=1,up=60' }, { startup: 'up=60,order=1' }],
    ['ipconfig options in another order', { ipconfig0: 'ip=10.0.0.5/24,gw=10.0.0.1' }, { ipconfig0: 'gw=10.0.0.1,ip=10.0.0.5/24' }],
    ['hotplug features in another order', { hotplug: 'disk,network' }, { hotplug: 'network,disk' }],
    ['a cloud-init password Proxmox masks', {}, { cipassword: '**********' }],
  ])('%s', (_label, config, current) => {
    const p = plan(spec('qemu', config), seen('qemu', current));
    expect(p.errors).toEqual([]);
    expect(p.changes).toEqual([]);
    expect(p.action).toBe('noop');
  });

  it("a container's default memory and swap when the spec leaves them out", () => {
    const p = plan(
      spec('lxc', { cores: '1' }),
      seen('lxc', {
        cores: '1',
        memory: '512',
        swap: '512',
        arch: 'amd64',
        ostype: 'debian',
        rootfs: 'local-lvm:vm-100500-disk-0,size=4G',
      }),
    );
    expect(p.action).toBe('noop');
  });
});

describe('running guests follow the shared hotplug rules', () => {
  it.each([
    [
      'qemu',
      'a disk cache mode',
      { scsi0: 'local-lvm:32,cache=writeback' },
      { scsi0: 'local-lvm:vm-100500-disk-0,size=32G' },
      'pending-restart',
    ],
    ['qemu', 'enabling the guest agent', { agent: '1' }, { agent: '0' }, 'pending-restart'],
    ['qemu', 'agent fstrim only', { agent: '1,fstrim_cloned_disks=1' }, { agent: '1' }, 'live'],
    ['qemu', 'a balloon target on an enabled balloon', { balloon: '2048' }, { balloon: '1024' }, 'live'],
    ['qemu', 'turning the balloon device off', { balloon: '0' }, { balloon: '1024' }, 'pending-restart'],
    ['lxc', 'cores', { cores: '4' }, { cores: '2' }, 'live'],
    ['lxc', 'a new mount point', { mp0: 'local-lvm:8,mp=/data' }, {}, 'live'],
    [
      'lxc',
      'a changed mount point',
      { mp0: 'local-lvm:8,mp=/srv' },
      { mp0: 'local-lvm:vm-100500-disk-1,mp=/data,size=8G' },
      'pending-restart',
    ],
    ['lxc', 'the OS type', { ostype: 'ubuntu' }, { ostype: 'debian' }, 'pending-restart'],
  ])('%s: %s is %s', (type, _label, config, current, impact) => {
    const p = plan(spec(type as 'qemu' | 'lxc', config), seen(type as 'qemu' | 'lxc', current));
    expect(p.changes.map((c) => c.impact)).toEqual([impact]);
  });

  it('uses the hotplug value in effect, not one still pending', () => {
    const p = plan(
      spec('qemu', { memory: '8192', hotplug: 'network,disk,memory' }),
      seen('qemu', { memory: '4096', hotplug: 'network,disk' }, { pending: { hotplug: 'network,disk,memory' } }),
    );
    expect(p.changes.find((c) => c.key === 'memory')?.impact).toBe('pending-restart');
  });

  it('labels changes on a guest in an unclear power state as a running guest would take them, and plans no power change', () => {
    const p = plan(spec('qemu', { cores: '4' }, { power: 'running' }), seen('qemu', { cores: '2' }, { status: 'paused' }));
    expect(p.changes.map((c) => c.impact)).toEqual(['pending-restart']);
    expect(p.operations.map((o) => o.op)).toEqual(['config']);
    expect(p.warnings.join()).toMatch(/power state is 'paused'/);
  });

  it('refuses to detach the boot disk of a running VM, as Proxmox does', () => {
    const p = plan(
      spec('qemu', { boot: 'order=scsi0' }),
      seen('qemu', { boot: 'order=scsi0', scsi0: 'local-lvm:vm-100500-disk-0,size=32G' }),
    );
    expect(p.action).toBe('error');
    expect(p.errors[0]).toBe("scsi0: a running guest refuses this change (can't unplug bootdisk 'scsi0'); stop it first");
  });

  it('refuses to move a running container volume', () => {
    const p = plan(spec('lxc', { rootfs: 'ceph:8' }), seen('lxc', { rootfs: 'local-lvm:vm-100500-disk-0,size=8G' }));
    expect(p.action).toBe('error');
    expect(p.errors[0]).toMatch(/only while it is stopped/);
  });
});

describe('guards', () => {
  it('refuses to turn a data disk into a CD-ROM', () => {
    const p = plan(
      spec('qemu', { scsi1: 'none,media=cdrom' }),
      seen('qemu', { scsi1: 'local-lvm:vm-100500-disk-1,size=100G' }, { status: 'stopped' }),
    );
    expect(p.action).toBe('error');
    expect(p.errors[0]).toMatch(/replacing a disk is not supported/);
  });

  it('swaps one ISO for another as an edit', () => {
    const p = plan(spec('qemu', { ide2: 'local:iso/b.iso,media=cdrom' }), seen('qemu', { ide2: 'local:iso/a.iso,media=cdrom' }));
    expect(p.operations).toEqual([
      { op: 'config', set: { ide2: 'local:iso/b.iso,media=cdrom' }, delete: [], from: { ide2: 'local:iso/a.iso,media=cdrom' } },
    ]);
  });

  it("refuses to change a container's unprivileged flag", () => {
    const p = plan(spec('lxc', { unprivileged: '0' }), seen('lxc', { unprivileged: '1' }, { status: 'stopped' }));
    expect(p.errors[0]).toMatch(/read-only option: 'unprivileged'/);
  });

  it('refuses to start a template', () => {
    const p = plan(spec('qemu', {}, { power: 'running' }), seen('qemu', { template: '1' }, { status: 'stopped' }));
    expect(p.errors[0]).toMatch(/template/);
  });

  it('refuses to plan against an empty configuration', () => {
    const p = plan(spec('qemu', {}), { ...seen('qemu', {}), current: {} });
    expect(p.errors[0]).toMatch(/empty configuration/);
  });

  it('reports a guest that is listed but could not be read', () => {
    const p = planGuest({
      cluster: 'lab',
      vmid: 100500,
      spec: spec('qemu', {}),
      ownerTag: OWNER,
      prune: false,
      listed: { vmid: 100500, type: 'qemu', node: 'pve-02', tags: OWNER },
      readError: "Configuration file 'nodes/pve-02/qemu-server/100500.conf' does not exist",
    });
    expect(p.errors).toEqual([
      "guest 100500 is listed on pve-02 but could not be read: Configuration file 'nodes/pve-02/qemu-server/100500.conf' does not exist",
    ]);
  });

  it('refuses state: absent when the VMID now holds a guest with another name', () => {
    const p = plan(spec('qemu', {}, { state: 'absent' }), seen('qemu', { name: 'someone-else' }));
    expect(p.errors[0]).toMatch(/refusing to destroy another guest/);
  });

  it('lets an operator rename a guest whose name the spec ignores, even with a derived VMID', () => {
    const p = plan(spec('qemu', { cores: '2' }, { ignore: ['name'], vmidDerived: true }), seen('qemu', { name: 'renamed', cores: '2' }));
    expect(p.action).toBe('noop');
  });

  it('treats a pending deletion as planned, and re-sets a key that is pending deletion', () => {
    const gone = plan(spec('qemu', {}), seen('qemu', { cpulimit: '2' }, { pendingDelete: ['cpulimit'] }));
    expect(gone.action).toBe('noop');
    expect(gone.pending).toEqual([{ key: 'cpulimit', current: '2', delete: true }]);
    const back = plan(spec('qemu', { cpulimit: '2' }), seen('qemu', { cpulimit: '2' }, { pendingDelete: ['cpulimit'] }));
    expect(back.operations).toEqual([{ op: 'config', set: { cpulimit: '2' }, delete: [], from: {} }]);
  });
});

describe('drift', () => {
  it('is not computed against a spec that asks for the guest to be absent', () => {
    const absent = spec('qemu', {}, { state: 'absent' });
    const p = plan(absent, seen('qemu', { cores: '2', memory: '2048' }), { baseSpec: absent });
    expect(p.action).toBe('destroy');
    expect(p.drift).toEqual([]);
  });
});

describe('apply-time comparison', () => {
  const reviewedDelete = plan(spec('qemu', {}), seen('qemu', { cpulimit: '2' }));

  it('reports an operator edit of a key the reviewed change deletes', () => {
    expect(compareWithReviewed(reviewedDelete, plan(spec('qemu', {}), seen('qemu', { cpulimit: '4' })))).toEqual([
      { key: 'cpulimit', reviewed: { from: '2' }, now: { from: '4' } },
    ]);
  });

  it('reports a power change that appeared after review', () => {
    const reviewed = plan(spec('qemu', { cores: '2' }, { power: 'running' }), seen('qemu', { cores: '1' }));
    const now = plan(spec('qemu', { cores: '2' }, { power: 'running' }), seen('qemu', { cores: '1' }, { status: 'stopped' }));
    expect(compareWithReviewed(reviewed, now).map((c) => c.key)).toEqual(['(start)']);
  });

  it('reports a reviewed destroy whose guest lost the owner tag', () => {
    const reviewed = plan(spec('qemu', {}, { state: 'absent' }), seen('qemu', {}));
    const now = plan(spec('qemu', {}, { state: 'absent' }), seen('qemu', { tags: '' }));
    expect(compareWithReviewed(reviewed, now)[0]?.key).toBe('(guest)');
  });

  it('reports an orphan destroy whose VMID now holds another owned guest', () => {
    const reviewed = plan(undefined, seen('qemu', { name: 'old-app' }), { prune: true });
    const now = plan(undefined, seen('qemu', { name: 'clone-of-something' }), { prune: true });
    expect(reviewed.action).toBe('destroy');
    expect(compareWithReviewed(reviewed, now)).toEqual([
      { key: '(guest)', reviewed: { to: 'old-app' }, now: { to: 'clone-of-something' } },
    ]);
  });
});

describe('whole-plan identity checks', () => {
  const cluster: ClusterSpec = {
    name: 'lab',
    vmids: { lower: 100000, upper: 200000 },
    ownerTag: OWNER,
    nodes: ['pve-01'],
    prune: true,
    source: { file: 'c.yaml', line: 1, col: 1 },
  };

  it('refuses to destroy a guest and create its twin when a derived VMID moved', () => {
    const base: SpecSet = { clusters: [cluster], guests: [spec('qemu', {}, { name: 'app', vmid: 100101, vmidDerived: true })] };
    const head: SpecSet = { clusters: [cluster], guests: [spec('qemu', {}, { name: 'app', vmid: 100100, vmidDerived: true })] };
    const live = seen('qemu', { name: 'app' }, { vmid: 100101 });
    const result = planSpecs({
      head,
      base,
      observed: {
        clusters: {
          lab: {
            name: 'lab',
            nodes: [],
            listing: [{ vmid: 100101, type: 'qemu', node: 'pve-01', status: 'running', tags: OWNER }],
            guests: { 100101: live },
          },
        },
      },
    });
    expect(result.guests.map((g) => [g.vmid, g.action])).toEqual([
      [100100, 'error'],
      [100101, 'error'],
    ]);
    expect(result.guests[0]?.errors[0]).toMatch(/identity moved.*pin `vmid: 100101`/);
  });

  it('does not prune with the settings of a Cluster document that was removed', () => {
    const base: SpecSet = { clusters: [cluster], guests: [spec('qemu', {}, { name: 'app' })] };
    const head: SpecSet = { clusters: [], guests: [] };
    const result = planSpecs({
      head,
      base,
      observed: {
        clusters: {
          lab: {
            name: 'lab',
            nodes: [],
            listing: [{ vmid: 100500, type: 'qemu', node: 'pve-01', tags: OWNER }],
            guests: { 100500: seen('qemu', { name: 'app' }) },
          },
        },
      },
    });
    expect(result.guests.map((g) => g.action)).toEqual(['orphan']);
  });

  it('refuses to create a guest on a node the cluster does not have', () => {
    const head: SpecSet = { clusters: [cluster], guests: [spec('qemu', {}, { node: 'pve-09' })] };
    const result = planSpecs({
      head,
      observed: { clusters: { lab: { name: 'lab', nodes: ['pve-01', 'pve-02'], listing: [], guests: {} } } },
    });
    expect(result.guests[0]?.errors[0]).toMatch(/node 'pve-09' is not a node of cluster 'lab' \(pve-01, pve-02\)/);
  });
});
