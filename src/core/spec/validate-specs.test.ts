import { describe, expect, it } from 'vitest';
import { formatSpecError } from './errors.js';
import { loadSpecs, type SpecFile } from './load-specs.js';
import { validateSpecs } from './validate-specs.js';

/** Two clusters; `lab` has a naming contract, `prod` has none. Line numbers matter below. */
const CLUSTERS = `kind: Cluster
name: lab
vmids: { lower: 100000, upper: 199999 }
nodes: [pve-01, pve-02]
storages: [local-lvm]
bridges: [vmbr0]
---
kind: Cluster
name: prod
vmids: { lower: 200000, upper: 299999 }
nodes: [pve-11]
`;

/** A valid VM of `lab` followed by extra config lines (indented by the caller). */
const vm = (extra = '', head = ''): string => `kind: VM
name: app-01
cluster: lab
node: pve-01
vmid: 100101
${head}config:
  memory: 2048
${extra}`;

const run = (files: Record<string, string>): string[] => {
  const list: SpecFile[] = Object.entries(files).map(([path, text]) => ({ path, text }));
  return loadSpecs(list).errors.map(formatSpecError);
};

describe('validateSpecs rules (file:line:col: message)', () => {
  it.each<[string, Record<string, string>, string[]]>([
    ['a valid VM', { 'g.yaml': vm() }, []],
    [
      'duplicate cluster name',
      { 'c2.yaml': 'kind: Cluster\nname: lab\nvmids: { lower: 500000, upper: 500100 }\nnodes: [x]\n' },
      ['c2.yaml:2:7: duplicate cluster "lab" (first defined at clusters.yaml:2:7)'],
    ],
    [
      'cluster names that differ only in case share one connection',
      { 'c2.yaml': 'kind: Cluster\nname: LAB\nvmids: { lower: 500000, upper: 500100 }\nnodes: [x]\n' },
      [
        'c2.yaml:2:7: cluster "LAB" differs from cluster "lab" (clusters.yaml:2:7) only in case or punctuation: both would use the connection PVE_CLUSTER_LAB_*; give it a distinct name',
      ],
    ],
    [
      'cluster names that differ only in punctuation share one connection',
      {
        'c2.yaml': 'kind: Cluster\nname: lab-2\nvmids: { lower: 500000, upper: 500100 }\nnodes: [x]\n',
        'c3.yaml': 'kind: Cluster\nname: lab_2\nvmids: { lower: 600000, upper: 600100 }\nnodes: [x]\n',
      },
      [
        'c3.yaml:2:7: cluster "lab_2" differs from cluster "lab-2" (c2.yaml:2:7) only in case or punctuation: both would use the connection PVE_CLUSTER_LAB_2_*; give it a distinct name',
      ],
    ],
    [
      'cluster names whose connections differ',
      { 'c2.yaml': 'kind: Cluster\nname: l-a-b\nvmids: { lower: 500000, upper: 500100 }\nnodes: [x]\n' },
      [],
    ],
    [
      'cluster range with lower not below upper',
      { 'c2.yaml': 'kind: Cluster\nname: dev\nvmids: { lower: 500000, upper: 500000 }\nnodes: [x]\n' },
      ['c2.yaml:3:8: vmids: lower (500000) must be below upper (500000)'],
    ],
    [
      'cluster range outside what Proxmox accepts',
      { 'c2.yaml': 'kind: Cluster\nname: dev\nvmids: { lower: 50, upper: 90 }\nnodes: [x]\n' },
      ['c2.yaml:3:8: vmids: the range must lie within [100, 1000000000)'],
    ],
    [
      'overlapping cluster ranges',
      { 'c2.yaml': 'kind: Cluster\nname: dev\nvmids: { lower: 150000, upper: 250000 }\nnodes: [x]\n' },
      ['c2.yaml:3:8: vmids [150000, 250000) overlaps cluster "lab" [100000, 199999); give each cluster its own range'],
    ],
    [
      'ranges that only touch do not overlap',
      { 'c2.yaml': 'kind: Cluster\nname: dev\nvmids: { lower: 199999, upper: 200000 }\nnodes: [x]\n' },
      [],
    ],
    [
      'invalid owner tag',
      { 'c2.yaml': 'kind: Cluster\nname: dev\nvmids: { lower: 500000, upper: 500100 }\nownerTag: "owned by git"\nnodes: [x]\n' },
      ['c2.yaml:4:11: ownerTag "owned by git" is not a valid Proxmox tag'],
    ],
    [
      'node listed twice',
      { 'c2.yaml': 'kind: Cluster\nname: dev\nvmids: { lower: 500000, upper: 500100 }\nnodes: [a, b, a]\n' },
      ['c2.yaml:4:15: node "a" is listed twice'],
    ],
    [
      'unknown cluster',
      { 'g.yaml': vm().replace('cluster: lab', 'cluster: labs') },
      ['g.yaml:3:10: unknown cluster "labs" (clusters: lab, prod)'],
    ],
    [
      'unknown node',
      { 'g.yaml': vm().replace('node: pve-01', 'node: pve-11') },
      ['g.yaml:4:7: node "pve-11" is not a node of cluster "lab" (pve-01, pve-02)'],
    ],
    [
      'duplicate guest name in one cluster',
      { 'a.yaml': vm(), 'b.yaml': vm().replace('vmid: 100101', 'vmid: 100102') },
      ['b.yaml:2:7: duplicate guest name "app-01" in cluster "lab" (first defined at a.yaml:2:7)'],
    ],
    [
      'the same name in two clusters',
      { 'a.yaml': vm(), 'b.yaml': vm().replace('cluster: lab', 'cluster: prod').replace('pve-01', 'pve-11').replace('100101', '200101') },
      [],
    ],
    [
      'pinned VMID outside the cluster range',
      { 'g.yaml': vm().replace('vmid: 100101', 'vmid: 199999') },
      ['g.yaml:5:7: vmid 199999 is outside cluster "lab" range [100000, 199999)'],
    ],
    [
      'duplicate VMID in one cluster',
      { 'a.yaml': vm(), 'b.yaml': vm().replace('app-01', 'app-02') },
      ['b.yaml:5:7: vmid 100101 is already used by "app-01" (a.yaml:1:1)'],
    ],
    [
      'unknown config key, with a suggestion',
      { 'g.yaml': vm('  memroy: 1\n') },
      ['g.yaml:8:3: unknown config key "memroy" for a VM (did you mean "memory"?)'],
    ],
    [
      'unknown indexed config key, with a suggestion keeping the index',
      { 'g.yaml': vm('  nett1: virtio,bridge=vmbr0\n') },
      ['g.yaml:8:3: unknown config key "nett1" for a VM (did you mean "net1"?)'],
    ],
    ['a key of the other guest type', { 'g.yaml': vm('  rootfs: local-lvm:8\n') }, ['g.yaml:8:3: unknown config key "rootfs" for a VM']],
    [
      'unknown config key with a hint',
      { 'g.yaml': vm('  start: 1\n') },
      ['g.yaml:8:3: unknown config key "start" for a VM (use power: running)'],
    ],
    [
      'indexed key out of Proxmox range',
      { 'g.yaml': vm('  net32: virtio,bridge=vmbr0\n  scsi31: local-lvm:1\n') },
      [
        'g.yaml:8:3: config key "net32" is out of range for a VM (net0 to net31)',
        'g.yaml:9:3: config key "scsi31" is out of range for a VM (scsi0 to scsi30)',
      ],
    ],
    [
      'server-managed keys',
      { 'g.yaml': vm('  lock: backup\n  digest: abc\n  unused0: local-lvm:vm-100101-disk-1\n  meta: ctime=1\n') },
      [
        'g.yaml:8:3: config key "lock" is managed by Proxmox and cannot be set',
        'g.yaml:9:3: config key "digest" is managed by Proxmox and cannot be set',
        'g.yaml:10:3: config key "unused0" is managed by Proxmox and cannot be set',
        'g.yaml:11:3: config key "meta" is managed by Proxmox and cannot be set',
      ],
    ],
    ['API parameters', { 'g.yaml': vm('  delete: cores\n') }, ['g.yaml:8:3: "delete" is an API parameter, not a config key']],
    [
      'document fields under config',
      { 'g.yaml': vm('  vmid: 100101\n  node: pve-01\n') },
      [
        'g.yaml:8:3: "vmid" belongs at the top level of the document, not under config',
        'g.yaml:9:3: "node" belongs at the top level of the document, not under config',
      ],
    ],
    [
      'create-only option under config',
      { 'g.yaml': vm('  pool: prod\n') },
      ['g.yaml:8:3: "pool" is a create-only option: put it under create:'],
    ],
    [
      'cipassword is refused',
      { 'g.yaml': vm('  cipassword: hunter2\n') },
      [
        'g.yaml:8:3: cipassword cannot be managed from git: Proxmox never returns it (reads show **********) and a password does not belong in a repository; use sshkeys',
      ],
    ],
    [
      'a VM config name that differs from the guest name',
      { 'g.yaml': vm('  name: other\n') },
      ['g.yaml:8:9: config name "other" differs from the guest\'s name "app-01"; leave it out, it is the guest\'s name'],
    ],
    [
      'a guest name that is not a DNS name',
      { 'g.yaml': vm().replace('name: app-01', 'name: app_01') },
      ['g.yaml:2:7: name "app_01" is not a valid DNS name'],
    ],
    ['an invalid tag', { 'g.yaml': vm('  tags: [ok, "b@d"]\n') }, ['g.yaml:8:9: tag "b@d" is not a valid Proxmox tag']],
    [
      'disks outside the storage contract',
      { 'g.yaml': vm('  scsi0: fast:32,ssd=1\n  efidisk0: { file: "nvme:1", efitype: 4m }\n  ide2: fast:cloudinit\n') },
      [
        'g.yaml:8:10: storage "fast" of scsi0 is not in cluster "lab" storages (local-lvm)',
        'g.yaml:9:13: storage "nvme" of efidisk0 is not in cluster "lab" storages (local-lvm)',
        'g.yaml:10:9: storage "fast" of ide2 is not in cluster "lab" storages (local-lvm)',
      ],
    ],
    [
      'installation media, empty drives and host devices are not disks',
      {
        'g.yaml': vm(
          '  ide2: local:iso/debian.iso,media=cdrom\n  ide0: none,media=cdrom\n  sata0: /dev/disk/by-id/ata-X\n  scsi0: local-lvm:32\n',
        ),
      },
      [],
    ],
    [
      'container disks outside the storage contract',
      {
        'g.yaml':
          'kind: Container\nname: ct-01\ncluster: lab\nnode: pve-01\nvmid: 100500\ncreate: { ostemplate: "local:vztmpl/debian.tar.zst" }\nconfig:\n  rootfs: fast:8\n  mp0: slow:8,mp=/data\n',
      },
      [
        'g.yaml:8:11: storage "fast" of rootfs is not in cluster "lab" storages (local-lvm)',
        'g.yaml:9:8: storage "slow" of mp0 is not in cluster "lab" storages (local-lvm)',
      ],
    ],
    [
      'a NIC outside the bridge contract',
      { 'g.yaml': vm('  net0: { model: virtio, bridge: vmbr7 }\n') },
      ['g.yaml:8:9: bridge "vmbr7" of net0 is not in cluster "lab" bridges (vmbr0)'],
    ],
    [
      'no contract, no check',
      {
        'g.yaml': vm('  scsi0: anything:32\n  net0: virtio,bridge=vmbr9\n')
          .replace('cluster: lab', 'cluster: prod')
          .replace('pve-01', 'pve-11')
          .replace('100101', '200101'),
      },
      [],
    ],
    [
      'create.storage outside the contract',
      { 'g.yaml': vm('', 'create: { storage: fast }\n') },
      ['g.yaml:6:20: storage "fast" is not in cluster "lab" storages (local-lvm)'],
    ],
    [
      'ignore names an unknown key',
      { 'g.yaml': vm('', 'ignore: [descripton]\n') },
      ['g.yaml:6:10: ignore: unknown config key "descripton" for a VM (did you mean "description"?)'],
    ],
    [
      'ignore names tags',
      { 'g.yaml': vm('', 'ignore: [description, tags]\n') },
      ['g.yaml:6:23: ignore: tags cannot be ignored, the owner tag is kept there'],
    ],
    [
      'ignore names a key the spec sets',
      { 'g.yaml': vm('', 'ignore: [memory]\n') },
      ['g.yaml:6:10: ignore: "memory" is also set under config; a key is either owned or ignored'],
    ],
    [
      'power running with state absent',
      { 'g.yaml': vm('', 'state: absent\npower: running\n') },
      ['g.yaml:7:8: power: running contradicts state: absent (an absent guest is destroyed)'],
    ],
    [
      'a running template',
      { 'g.yaml': vm('', 'template: true\npower: running\n') },
      ['g.yaml:7:8: power: running is impossible for a template (template: true); a template is never started'],
    ],
    [
      'a container without a template to create it from',
      { 'g.yaml': 'kind: Container\nname: ct-01\ncluster: lab\nnode: pve-01\nvmid: 100500\n' },
      [
        'g.yaml:1:1: a container needs create.ostemplate (the template it is created from), create.clone, or adopt: true to take over an existing one',
      ],
    ],
    [
      'an adopted or absent container needs no template',
      {
        'a.yaml': 'kind: Container\nname: ct-01\ncluster: lab\nnode: pve-01\nvmid: 100500\nadopt: true\n',
        'b.yaml': 'kind: Container\nname: ct-02\ncluster: lab\nnode: pve-01\nvmid: 100501\nstate: absent\n',
      },
      [],
    ],
    [
      'a container hostname that is not a DNS name',
      {
        'g.yaml':
          'kind: Container\nname: ct-01\ncluster: lab\nnode: pve-01\nvmid: 100500\nadopt: true\nconfig:\n  hostname: ct_01.example\n',
      },
      ['g.yaml:8:13: hostname "ct_01.example" is not a valid DNS name'],
    ],
    [
      'vmgenid that Proxmox would regenerate',
      { 'g.yaml': vm('  vmgenid: 1\n') },
      [
        'g.yaml:8:12: vmgenid must be a UUID: other values make Proxmox generate one, which then differs from the spec on every plan; leave it out to let Proxmox choose',
      ],
    ],
    [
      'description longer than Proxmox keeps',
      { 'g.yaml': vm(`  description: ${'x'.repeat(8193)}\n`) },
      ['g.yaml:8:16: description may only be 8192 characters long'],
    ],
    [
      'values Proxmox rejects, with its own texts',
      { 'g.yaml': vm('  cores: many\n  net0: { model: virtio9, bridge: vmbr0 }\n  ostype: l99\n').replace('memory: 2048', 'memory: 8') },
      [
        'g.yaml:7:11: config.memory: invalid format - format error; memory.current: value must have a minimum value of 16',
        "g.yaml:8:10: config.cores: type check ('integer') failed - got 'many'",
        "g.yaml:9:9: config.net0: invalid format - format error; net0.model: value 'virtio9' does not have a value in the enumeration 'e1000, e1000-82540em, e1000-82544gc, e1000-82545em, e1000e, i82551, i82557b, i82559er, ne2k_isa, ne2k_pci, pcnet, rtl8139, virtio, vmxnet3'",
        "g.yaml:10:11: config.ostype: value 'l99' does not have a value in the enumeration 'other, wxp, w2k, w2k3, w2k8, wvista, win7, win8, win10, win11, l24, l26, solaris'",
      ],
    ],
    [
      'create options Proxmox rejects',
      {
        'g.yaml':
          'kind: Container\nname: ct-01\ncluster: lab\nnode: pve-01\nvmid: 100500\ncreate: { ostemplate: "local:vztmpl/debian.tar.zst", pool: "bad pool" }\n',
      },
      ["g.yaml:6:60: create.pool: invalid format - pool name 'bad pool' contains invalid characters"],
    ],
    [
      'a derived VMID in a full range',
      {
        'c2.yaml': 'kind: Cluster\nname: tiny\nvmids: { lower: 500000, upper: 500001 }\nnodes: [n1]\n',
        'g.yaml': 'kind: VM\nname: a\ncluster: tiny\nnode: n1\nvmid: 500000\n---\nkind: VM\nname: b\ncluster: tiny\nnode: n1\n',
      },
      ['g.yaml:7:1: no free VMID left in cluster "tiny" range [500000, 500001) for "b"; widen the range or pin a vmid'],
    ],
    [
      'guests of a cluster whose document failed are not reported again',
      {
        'c2.yaml': 'kind: Cluster\nname: dev\nvmids: { lower: 500000, upper: 500100 }\nnodes: [n1]\nprun: true\n',
        'g.yaml': 'kind: VM\nname: a\ncluster: dev\nnode: n1\n',
      },
      ['c2.yaml:5:1: unknown key "prun" in Cluster (did you mean "prune"?)'],
    ],
  ])('%s', (_name, files, expected) => {
    expect(run({ 'clusters.yaml': CLUSTERS, ...files })).toEqual(expected);
  });
});

describe('validateSpecs without positions', () => {
  it('reports at the document source, and at a config key through keySources', () => {
    const { specs } = loadSpecs([
      { path: 'clusters.yaml', text: CLUSTERS },
      { path: 'g.yaml', text: vm('  lock: backup\n').replace('node: pve-01', 'node: pve-09') },
    ]);
    expect(validateSpecs(specs).map(formatSpecError)).toEqual([
      'g.yaml:1:1: node "pve-09" is not a node of cluster "lab" (pve-01, pve-02)',
      'g.yaml:8:3: config key "lock" is managed by Proxmox and cannot be set',
    ]);
  });
});

describe('identity checks of a set asked again', () => {
  it('answers a set that differs in one guest’s identity anew, after an equal set was found clean', () => {
    const clean = { 'clusters.yaml': CLUSTERS, 'g.yaml': vm() };
    expect(run(clean)).toEqual([]);
    expect(run(clean)).toEqual([]);
    // The same guest moved to a node the cluster does not have: the clean answer must not stand.
    expect(run({ ...clean, 'g.yaml': vm().replace('node: pve-01', 'node: pve-09') })).toEqual([
      'g.yaml:4:7: node "pve-09" is not a node of cluster "lab" (pve-01, pve-02)',
    ]);
    // And the cluster losing that node, with the guests as they were.
    expect(run({ ...clean, 'clusters.yaml': CLUSTERS.replace('nodes: [pve-01, pve-02]', 'nodes: [pve-02]') })).toEqual([
      'g.yaml:4:7: node "pve-01" is not a node of cluster "lab" (pve-02)',
    ]);
  });
});
