/**
 * A generated estate nobody manages yet, for `pve-gitops import`: the simulator fixture of a
 * cluster whose guests were made by hand over the years, stored as Proxmox stores them — VMs and
 * containers, cloud-init drives and settings, several disks and NICs, descriptions, pending values
 * on some, a guest locked by a backup, a secret (`cipassword`), options that reach the host — and a
 * read token that cannot see one guest, a pool with members. No owner tag anywhere.
 */
import { randomUUID } from 'node:crypto';
import type { SimFixture } from '../../src/pve/sim/schema.js';

export const CLUSTER = 'estate';
export const NODES = ['pve-01', 'pve-02', 'pve-03', 'pve-04', 'pve-05'];
const FIRST_VMID = 1000;

/** Special guests, by index: what the tests look for. */
export const SPECIAL = {
  /** Locked by a backup when the estate is read. */
  locked: 7,
  /** Not visible to the estate's read token. */
  hidden: 11,
  /** Passes raw arguments to QEMU (reaches the host). */
  args: 13,
  /** A privileged container (reaches the host). */
  privileged: 15,
} as const;

/** The VMID of guest `i`. */
export const vmidOf = (i: number): number => FIRST_VMID + i;

const hex = (n: number): string => n.toString(16).padStart(2, '0').toUpperCase();
const mac = (vmid: number, nic: number): string => `BC:24:1${nic}:${hex((vmid >> 16) & 255)}:${hex((vmid >> 8) & 255)}:${hex(vmid & 255)}`;
const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb9lZ0m8r8pXv2mQm3bXo6vB1k7aF0sJp5mT2nQe7Yd ops@example.net';

/** Whether guest `i` has values queued for its next restart. */
export const hasPending = (i: number): boolean => i % 97 === 3;

function vmConfig(i: number): string {
  const vmid = vmidOf(i);
  const lines = [
    ...(i % 9 === 0 ? ['#Built by hand in 2021.', `#Owner: team ${i % 7}`] : []),
    `name: vm-${i}`,
    `memory: ${2048 * (1 + (i % 4))}`,
    `cores: ${1 + (i % 4)}`,
    ...(i % 3 === 0 ? ['sockets: 1'] : []),
    `cpu: ${i % 2 === 0 ? 'x86-64-v2-AES' : 'host'}`,
    'ostype: l26',
    'scsihw: virtio-scsi-single',
    `scsi0: local-lvm:vm-${vmid}-disk-0,discard=on,iothread=1,size=32G`,
    ...(i % 4 === 1 ? [`scsi1: ceph-vm:vm-${vmid}-disk-1,iothread=1,size=100G`] : []),
    ...(i % 8 === 5 ? [`scsi2: ceph-vm:vm-${vmid}-disk-2,backup=0,size=500G`] : []),
    `net0: virtio=${mac(vmid, 0)},bridge=vmbr0${i % 2 === 0 ? ',firewall=1' : ''}`,
    ...(i % 3 === 1 ? [`net1: virtio=${mac(vmid, 1)},bridge=vmbr1,mtu=9000`] : []),
    'agent: 1,fstrim_cloned_disks=1',
    'boot: order=scsi0;net0',
    ...(i % 6 === 0 ? ['onboot: 1'] : []),
    ...(i % 10 === 4 ? ['startup: order=2,up=30'] : []),
    ...(i % 5 === 2 ? [`tags: team-${i % 7};web`] : i % 5 === 4 ? [`tags: team-${i % 7}`] : []),
    `smbios1: uuid=${randomUUID()}`,
    `vmgenid: ${randomUUID()}`,
    'meta: creation-qemu=9.0.2,ctime=1718000000',
  ];
  if (i % 2 === 1) {
    // Cloud-init: the drive, the user, the address, the keys; some with a password Proxmox never returns.
    lines.push(
      `ide2: local-lvm:vm-${vmid}-cloudinit,media=cdrom,size=4M`,
      'ciuser: debian',
      `ipconfig0: ip=10.${(i >> 8) & 255}.${i & 255}.10/16,gw=10.0.0.1`,
      `sshkeys: ${encodeURIComponent(SSH_KEY)}`,
      ...(i % 4 === 3 ? ['nameserver: 10.0.0.2 10.0.0.3', 'searchdomain: lab.example.net'] : []),
      ...(i % 7 === 1 ? ['cipassword: $5$abc$0123456789abcdef'] : []),
    );
  } else if (i % 4 === 2) {
    lines.push('ide2: local:iso/debian-12.7.0-amd64-netinst.iso,media=cdrom');
  }
  if (i === SPECIAL.args) lines.push('args: -device intel-iommu');
  let text = `${lines.join('\n')}\n`;
  if (hasPending(i)) text += `\n[PENDING]\nmemory: ${4096 * (1 + (i % 4))}\ncores: 8\n`;
  return text;
}

function containerConfig(i: number): string {
  const vmid = vmidOf(i);
  const lines = [
    `hostname: ct-${i}`,
    'arch: amd64',
    'ostype: debian',
    ...(i === SPECIAL.privileged ? [] : ['unprivileged: 1']),
    `memory: ${512 * (1 + (i % 3))}`,
    'swap: 512',
    `cores: ${1 + (i % 2)}`,
    `rootfs: local-lvm:subvol-${vmid}-disk-0,size=8G`,
    ...(i % 3 === 0 ? [`mp0: ceph-vm:subvol-${vmid}-disk-1,mp=/srv/data,backup=1,size=32G`] : []),
    `net0: name=eth0,bridge=vmbr0,hwaddr=${mac(vmid, 0)},ip=dhcp,type=veth`,
    ...(i % 4 === 0 ? [`net1: name=eth1,bridge=vmbr1,hwaddr=${mac(vmid, 1)},ip=10.20.${i & 255}.5/24,type=veth`] : []),
    ...(i % 2 === 0 ? ['nameserver: 1.1.1.1 9.9.9.9'] : []),
    ...(i % 3 === 1 ? ['features: nesting=1'] : []),
    'onboot: 1',
    `tags: ct;team-${i % 7}`,
  ];
  let text = `${lines.join('\n')}\n`;
  if (hasPending(i)) text += `\n[pve:pending]\nmemory: 4096\n`;
  return text;
}

/** The estate's read token: sees every guest but the hidden one. */
export function estateReadToken(guests: number): { id: string; secret: string; token: string; vmids: number[] } {
  const id = 'import@pve!audit';
  const secret = 'estate-read-token-secret';
  const vmids: number[] = [];
  for (let i = 0; i < guests; i++) if (i !== SPECIAL.hidden) vmids.push(vmidOf(i));
  return { id, secret, token: `${id}=${secret}`, vmids };
}

/** Whether guest `i` is a member of the pool `web`. */
export const inWebPool = (i: number): boolean => i % 5 === 2;

/** Whether guest `i` is a container. */
export const isContainer = (i: number): boolean => i % 5 === 0;

/** The simulator fixture of an unmanaged estate of `guests` guests. */
export function unmanagedEstateFixture(guests: number): SimFixture {
  const read = estateReadToken(guests);
  return {
    clusterName: CLUSTER,
    nodes: NODES,
    tokens: [{ id: read.id, secret: read.secret, role: 'audit', vmids: read.vmids }],
    // The web servers were put in a pool; the databases' pool is still empty.
    pools: [
      {
        poolid: 'web',
        comment: 'Web servers',
        vmids: Array.from({ length: guests }, (_, i) => i)
          .filter(inWebPool)
          .map(vmidOf),
      },
      'databases',
    ],
    guests: Array.from({ length: guests }, (_, i) => ({
      vmid: vmidOf(i),
      type: isContainer(i) ? 'lxc' : 'qemu',
      node: NODES[i % NODES.length] ?? 'pve-01',
      running: i % 11 !== 10,
      config: isContainer(i) ? containerConfig(i) : vmConfig(i),
      ...(i === SPECIAL.locked ? { lock: 'backup' } : {}),
    })),
  };
}

/** Whether guest `i` has a firewall file (made through the API once the simulator runs: `estateFirewallCalls`). */
export const hasFirewall = (i: number): boolean => i % 50 === 6 && i !== SPECIAL.hidden;

/** One Proxmox API call. */
export interface EstateCall {
  method: 'PUT' | 'POST';
  path: string;
  form: Record<string, string>;
}

/**
 * The API calls that give guest `i` its firewall file, as an operator would have made it: options,
 * two rules (`POST rules` inserts at the top, so the last posted is the first rule), and on some an
 * alias and an IPset.
 */
export function estateFirewallCalls(i: number): EstateCall[] {
  const base = `/nodes/${NODES[i % NODES.length]}/${isContainer(i) ? 'lxc' : 'qemu'}/${vmidOf(i)}/firewall`;
  const calls: EstateCall[] = [
    { method: 'PUT', path: `${base}/options`, form: { enable: '1', policy_in: i % 100 === 6 ? 'DROP' : 'REJECT' } },
    { method: 'POST', path: `${base}/rules`, form: { type: 'in', action: 'ACCEPT', enable: '1', macro: 'HTTPS' } },
    {
      method: 'POST',
      path: `${base}/rules`,
      form: { type: 'in', action: 'ACCEPT', enable: '1', proto: 'tcp', dport: '22', comment: 'ssh' },
    },
  ];
  if (i % 100 === 56) {
    calls.push(
      { method: 'POST', path: `${base}/aliases`, form: { name: 'monitor', cidr: '10.20.0.9/32' } },
      { method: 'POST', path: `${base}/ipset`, form: { name: 'office', comment: 'the office' } },
      { method: 'POST', path: `${base}/ipset/office`, form: { cidr: '192.0.2.0/24' } },
    );
  }
  return calls;
}
