/**
 * A generated estate, written as a user would write it: one `clusters.yaml`, guests grouped in
 * files by team (or one file per guest), VMs and containers with property strings as mappings,
 * tag and key lists, half the VMIDs derived. Also the simulator fixture that holds the same
 * guests as Proxmox stores them after an apply (volume names and sizes, MACs, the owner tag,
 * what Proxmox fills in), so a drift read finds nothing and a plan finds only what a PR changes.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GuestSpec } from '../../src/core/model.js';
import { loadSpecs, type SpecFile } from '../../src/core/spec/load-specs.js';

/** The estate's one cluster. */
export const CLUSTER = 'lab';
export const NODES = ['pve-01', 'pve-02', 'pve-03', 'pve-04', 'pve-05'];
const LOWER = 100_000;
const UPPER = 999_999;

/** How an estate is laid out in files. */
export type Layout = { kind: 'grouped'; files: number } | { kind: 'per-guest' };

/** What a pull request changes: `memory` of these guests (by index). */
export interface Edit {
  guests: readonly number[];
  memory: string;
}

function clustersYaml(): string {
  return `# The clusters this repository manages. Connections and tokens are configured on the server.
kind: Cluster
name: ${CLUSTER}
vmids: { lower: ${LOWER}, upper: ${UPPER} }
ownerTag: pve-gitops
nodes: [${NODES.join(', ')}]
storages: [local-lvm, ceph-vm]
bridges: [vmbr0, vmbr1]
prune: false
`;
}

function guestYaml(i: number, memory: string | undefined): string {
  const node = NODES[i % NODES.length];
  const pinned = i % 2 === 0 ? `vmid: ${LOWER + i}\n` : '';
  if (i % 5 === 0) {
    return `kind: Container
name: ct-${i}
cluster: ${CLUSTER}
node: ${node}
${pinned}power: running
create:
  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
config:
  memory: ${memory ?? 1024}
  swap: 512
  cores: 2
  unprivileged: true
  features: { nesting: true }
  rootfs: local-lvm:8
  net0: name=eth0,bridge=vmbr0,ip=dhcp
  tags: [team-${i % 7}, ct]
`;
  }
  return `kind: VM
name: vm-${i}
cluster: ${CLUSTER}
node: ${node}
${pinned}power: running
config:
  memory: ${memory ?? 4096}
  cores: 2
  cpu: x86-64-v2-AES
  ostype: l26
  scsihw: virtio-scsi-single
  scsi0: local-lvm:32,discard=on,iothread=1,ssd=1
  scsi1: ceph-vm:100,iothread=1
  net0: { model: virtio, bridge: vmbr0, firewall: true }
  agent: 1,fstrim_cloned_disks=1
  ciuser: debian
  ipconfig0: ip=10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/8,gw=10.0.0.1
  sshkeys: [ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb9lZ0m8r8pXv2mQm3bXo6vB1k7aF0sJp5mT2nQe7Yd ops@example.net]
  onboot: true
  tags: [team-${i % 7}, env-lab]
`;
}

/** The estate's files (paths relative to the spec root). */
export function estateFiles(guests: number, layout: Layout, edit?: Edit): SpecFile[] {
  const changed = new Set(edit?.guests ?? []);
  const doc = (i: number): string => guestYaml(i, changed.has(i) ? edit?.memory : undefined);
  const files: SpecFile[] = [{ path: 'clusters.yaml', text: clustersYaml() }];
  if (layout.kind === 'per-guest') {
    for (let i = 0; i < guests; i++) files.push({ path: `guests/team-${i % 7}/${i % 5 === 0 ? 'ct' : 'vm'}-${i}.yaml`, text: doc(i) });
    return files;
  }
  const perFile = Math.ceil(guests / layout.files);
  for (let f = 0; f < layout.files; f++) {
    const docs: string[] = [];
    for (let i = f * perFile; i < Math.min(guests, (f + 1) * perFile); i++) docs.push(doc(i));
    if (docs.length > 0) files.push({ path: `guests/group-${String(f).padStart(4, '0')}.yaml`, text: `---\n${docs.join('---\n')}` });
  }
  return files;
}

/** Writes files under `root`. */
export async function writeEstate(root: string, files: readonly SpecFile[]): Promise<void> {
  const dirs = new Set(files.map((f) => join(root, f.path, '..')));
  for (const dir of dirs) await mkdir(dir, { recursive: true });
  for (const file of files) await writeFile(join(root, file.path), file.text);
}

const hex = (n: number): string => n.toString(16).padStart(2, '0').toUpperCase();
const mac = (vmid: number): string => `BC:24:11:${hex((vmid >> 16) & 255)}:${hex((vmid >> 8) & 255)}:${hex(vmid & 255)}`;
const DISK = /^(?:(?:ide|sata|scsi|virtio)\d+|rootfs|mp\d+)$/;

/** A spec's config as Proxmox stores it after creating the guest. */
function storedConfig(guest: GuestSpec): Record<string, string> {
  const config: Record<string, string> = {};
  let disk = 0;
  for (const [key, value] of Object.entries(guest.config)) {
    const allocation = DISK.test(key) ? /^([a-z][\w.-]*):(\d+)(?:,(.*))?$/.exec(value) : null;
    if (allocation) {
      const [, storage, size, rest] = allocation;
      config[key] = `${storage}:vm-${guest.vmid}-disk-${disk++}${rest ? `,${rest}` : ''},size=${size}G`;
    } else if (key === 'net0' && guest.type === 'qemu') {
      config[key] = value.replace(/^virtio/, `virtio=${mac(guest.vmid)}`);
    } else if (key === 'net0') {
      config[key] = `${value},hwaddr=${mac(guest.vmid)},type=veth`;
    } else if (key === 'tags') {
      config[key] = `${value};pve-gitops`;
    } else {
      config[key] = value;
    }
  }
  if (guest.type === 'qemu') {
    config.name = guest.name;
    config.boot = 'order=scsi0;net0';
    config.meta = 'creation-qemu=9.2.0,ctime=1700000000';
    config.smbios1 = `uuid=00000000-0000-4000-8000-${String(guest.vmid).padStart(12, '0')}`;
    config.vmgenid = `00000000-0000-4000-9000-${String(guest.vmid).padStart(12, '0')}`;
  } else {
    config.hostname = guest.name;
    config.arch = 'amd64';
    config.ostype = 'debian';
  }
  return config;
}

/** The simulator fixture holding `files`' guests as an apply of them would have left them. */
export function estateFixture(files: readonly SpecFile[]): unknown {
  const loaded = loadSpecs(files);
  if (loaded.errors.length > 0) throw new Error(`the generated estate is invalid: ${loaded.errors[0]?.message}`);
  return {
    clusterName: CLUSTER,
    nodes: NODES,
    guests: loaded.specs.guests.map((guest) => ({
      vmid: guest.vmid,
      type: guest.type,
      node: guest.node,
      running: guest.power === 'running',
      config: storedConfig(guest),
    })),
  };
}
