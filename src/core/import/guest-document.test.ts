import { describe, expect, it } from 'vitest';
import type { ListedGuest, ObservedGuest } from '../model.js';
import { planGuest } from '../plan/plan-guest.js';
import { loadSpecs } from '../spec/load-specs.js';
import { importGuest } from './guest-document.js';
import { renderCluster, renderGuest } from './render-documents.js';

const CLUSTER_YAML = renderCluster(
  {
    kind: 'Cluster',
    name: 'lab',
    vmids: { lower: 100, upper: 1000 },
    ownerTag: 'pve-gitops',
    nodes: ['pve-01'],
    storages: ['local-lvm', 'ceph-vm'],
    bridges: ['vmbr0', 'vmbr1'],
    prune: false,
  },
  [],
);

function observed(type: 'qemu' | 'lxc', current: Record<string, string>, extra: Partial<ObservedGuest> = {}): ObservedGuest {
  return { vmid: 150, type, node: 'pve-01', status: 'running', digest: 'd', current, pending: {}, pendingDelete: [], ...extra };
}

function listed(guest: ObservedGuest): ListedGuest {
  const name = guest.current.name ?? guest.current.hostname;
  return { vmid: guest.vmid, type: guest.type, node: guest.node, status: guest.status, ...(name ? { name } : {}) };
}

/** The imported document loaded as a spec and planned against the guest it came from. */
function roundTrip(guest: ObservedGuest): { text: string; changes: string[]; errors: string[]; adopt: boolean } {
  const made = importGuest('lab', listed(guest), guest, 'pve-gitops');
  if (!made.ok) throw new Error(made.reason);
  const text = renderGuest(made.guest.document, made.guest.notes);
  const loaded = loadSpecs([
    { path: 'cluster.yaml', text: CLUSTER_YAML },
    { path: 'guest.yaml', text },
  ]);
  expect(loaded.errors.map((e) => e.message)).toEqual([]);
  const spec = loaded.specs.guests[0];
  const plan = planGuest({
    cluster: 'lab',
    vmid: guest.vmid,
    spec,
    ownerTag: 'pve-gitops',
    prune: false,
    listed: listed(guest),
    observed: guest,
  });
  return { text, changes: plan.changes.map((c) => c.key), errors: plan.errors, adopt: plan.adopt === true };
}

const VM: Record<string, string> = {
  name: 'web-01',
  memory: '4096',
  cores: '2',
  sockets: '1',
  cpu: 'x86-64-v2-AES',
  numa: '1',
  ostype: 'l26',
  scsihw: 'virtio-scsi-single',
  scsi0: 'local-lvm:vm-150-disk-0,discard=on,iothread=1,size=32G',
  scsi10: 'ceph-vm:vm-150-disk-1,backup=0,size=1T',
  ide2: 'local-lvm:vm-150-cloudinit,media=cdrom,size=4M',
  net0: 'virtio=BC:24:11:00:01:50,bridge=vmbr0,firewall=1',
  net1: 'virtio=BC:24:11:00:01:51,bridge=vmbr1,mtu=9000',
  agent: '1,fstrim_cloned_disks=1',
  boot: 'order=scsi0;net0',
  ciuser: 'debian',
  cipassword: '**********',
  ipconfig0: 'ip=10.0.0.5/24,gw=10.0.0.1',
  sshkeys: encodeURIComponent('ssh-ed25519 AAAA one@example.net\nssh-ed25519 BBBB two@example.net'),
  nameserver: '10.0.0.2 10.0.0.3',
  description: 'first line\nsecond: line with a colon',
  onboot: '1',
  startup: 'order=2,up=30',
  tags: 'web;Team-A',
  smbios1: 'uuid=6f1c2a4e-0c55-4f0e-9d51-4d2f64e1a100',
  vmgenid: 'b1c8e6a2-51f3-4a0b-9b43-1f8d4e2c7a10',
  meta: 'creation-qemu=9.0.2,ctime=1718000000',
  unused0: 'local-lvm:vm-150-disk-9',
};

const CT: Record<string, string> = {
  hostname: 'dns-01',
  arch: 'amd64',
  ostype: 'debian',
  unprivileged: '1',
  memory: '512',
  swap: '512',
  cores: '1',
  rootfs: 'local-lvm:subvol-150-disk-0,size=8G',
  mp0: 'ceph-vm:subvol-150-disk-1,mp=/srv,backup=1,size=32G',
  net0: 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:01:50,ip=dhcp,type=veth',
  nameserver: '1.1.1.1 9.9.9.9',
  features: 'nesting=1',
  tags: 'dns',
};

describe('importGuest: the document plans as the adoption alone', () => {
  it.each([
    ['a cloud-init VM with several disks and NICs, a secret and generated keys', observed('qemu', VM)],
    ['a container with a mount point and DNS lists', observed('lxc', CT)],
    [
      'a VM with pending values and a pending deletion',
      observed('qemu', VM, { pending: { memory: '8192', cores: '4' }, pendingDelete: ['startup'] }),
    ],
    ['a locked VM', observed('qemu', { ...VM, lock: 'backup' })],
    ['a VM without a name', observed('qemu', Object.fromEntries(Object.entries(VM).filter(([k]) => k !== 'name')))],
    ['a privileged container with a host path mounted', observed('lxc', { ...CT, unprivileged: '0', mp1: '/srv/host,mp=/mnt/host' })],
    ['a VM already carrying the owner tag', observed('qemu', { ...VM, tags: 'pve-gitops;web' })],
  ])('%s', (_what, guest) => {
    const result = roundTrip(guest);
    expect(result.errors).toEqual([]);
    const owned = (guest.current.tags ?? '').includes('pve-gitops');
    expect(result.changes).toEqual(owned ? [] : ['tags']);
    expect(result.adopt).toBe(!owned);
  });
});

describe('importGuest: what the file says', () => {
  const text = (guest: ObservedGuest): string => roundTrip(guest).text;

  it('writes values in the forms a person writes, and never a secret or a generated key', () => {
    const vm = text(observed('qemu', VM));
    expect(vm).toMatch(/^ {2}memory: 4096$/m);
    expect(vm).toMatch(/^ {2}numa: true$/m);
    expect(vm).toMatch(/^ {2}tags: \[team-a, web\]$/m);
    expect(vm).toMatch(/^ {2}nameserver: \[10\.0\.0\.2, 10\.0\.0\.3\]$/m);
    expect(vm).toContain('  sshkeys:\n    - ssh-ed25519 AAAA one@example.net\n    - ssh-ed25519 BBBB two@example.net\n');
    expect(vm).not.toMatch(/^ {2}(cipassword|smbios1|vmgenid|meta|unused0|name):/m);
    expect(vm).toMatch(/^# {3}cipassword: a secret/m);
    expect(vm).toMatch(/^# {3}unused0: managed by Proxmox/m);
    // Disks in natural order: scsi10 after scsi0.
    expect(vm.indexOf('scsi0:')).toBeLessThan(vm.indexOf('scsi10:'));
  });

  it('names a guest without a name and leaves its name alone', () => {
    const vm = text(observed('qemu', Object.fromEntries(Object.entries(VM).filter(([k]) => k !== 'name'))));
    expect(vm).toMatch(/^name: vm-150$/m);
    expect(vm).toMatch(/^ignore: \[name\]$/m);
  });

  it('notes pending values, locks and what reaches the host', () => {
    expect(text(observed('qemu', VM, { pending: { memory: '8192' } }))).toMatch(/^# Pending: memory has a value queued/m);
    expect(text(observed('qemu', VM, { pending: { memory: '8192' } }))).toMatch(/^ {2}memory: 8192$/m);
    expect(text(observed('qemu', { ...VM, lock: 'backup' }))).toMatch(/^# Locked \(backup\) when it was read/m);
    expect(text(observed('qemu', { ...VM, hookscript: 'local:snippets/hook.sh' }))).toMatch(/^# {3}hookscript: runs the script/m);
    const privileged = text(observed('lxc', { ...CT, unprivileged: '0', mp1: '/srv/host,mp=/mnt/host' }));
    expect(privileged).toMatch(/^# {3}mp1: mounts the host's path \/srv\/host/m);
    const noLine = Object.fromEntries(Object.entries(CT).filter(([k]) => k !== 'unprivileged'));
    expect(text(observed('lxc', noLine))).toMatch(/^# {3}unprivileged is not set: runs the container privileged/m);
  });

  it('refuses a guest whose name a spec cannot carry, or whose read was empty', () => {
    const bad = observed('qemu', { ...VM, name: 'web_01' });
    expect(importGuest('lab', listed(bad), bad, 'pve-gitops')).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not a DNS name/),
    });
    const empty = observed('qemu', {});
    expect(importGuest('lab', listed(empty), empty, 'pve-gitops')).toMatchObject({ ok: false, reason: expect.stringMatching(/empty/) });
  });

  it('gives the same bytes whatever order the read returned the keys in', () => {
    const reversed = Object.fromEntries(Object.entries(VM).reverse());
    expect(text(observed('qemu', reversed))).toBe(text(observed('qemu', VM)));
  });
});

describe('a template', () => {
  it('is written template: true on the document, never config.template, and round-trips as an adoption only', () => {
    const template = observed(
      'qemu',
      {
        name: 'debian-12-cloud',
        template: '1',
        ostype: 'l26',
        scsi0: 'local-lvm:base-150-disk-0,size=2G',
        net0: 'virtio=BC:24:11:10:90:00,bridge=vmbr0',
      },
      { status: 'stopped' },
    );
    const trip = roundTrip(template);
    expect(trip.text).toMatch(/^adopt: true\ntemplate: true\nconfig:$/m);
    expect(trip.text).not.toMatch(/^ {2}template:/m);
    expect(trip.errors).toEqual([]);
    expect(trip.changes).toEqual(['tags']);
  });
});
