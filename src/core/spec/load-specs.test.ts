import { describe, expect, it } from 'vitest';
import { formatSpecError } from './errors.js';
import { loadSpecs } from './load-specs.js';
import { vmidSlot } from './vmid.js';

const CLUSTER = `kind: Cluster
name: lab
vmids: { lower: 100000, upper: 199999 }
nodes: [pve-01]
`;

const errorsOf = (text: string, path = 'g.yaml'): string[] =>
  loadSpecs([
    { path: 'clusters.yaml', text: CLUSTER },
    { path, text },
  ]).errors.map(formatSpecError);

describe('loadSpecs: document and shape errors', () => {
  it.each<[string, string, string[]]>([
    [
      'YAML syntax',
      'kind: VM\nname: [a\n',
      ['g.yaml:3:1: YAML: Flow sequence in block collection must be sufficiently indented and end with a ]'],
    ],
    ['duplicate keys', 'kind: VM\nname: a\nname: b\n', ['g.yaml:3:1: YAML: Map keys must be unique']],
    [
      'a document without kind',
      'name: a\ncluster: lab\n',
      [
        'g.yaml:1:1: document has no kind (Cluster, VM, Container, Pool or BackupJob); every YAML document under the spec root must be a spec',
      ],
    ],
    [
      'a misspelt kind key in the second document',
      '# first\nkind: Cluster\nname: dev\nvmids: { lower: 500, upper: 600 }\nnodes: [n]\n---\n# second\nkidn: VM\n',
      [
        'g.yaml:8:1: document has no kind (Cluster, VM, Container, Pool or BackupJob); every YAML document under the spec root must be a spec',
      ],
    ],
    ['an unknown kind', 'kind: Vm\nname: a\n', ['g.yaml:1:7: unknown kind "Vm" (expected Cluster, VM, Container, Pool or BackupJob)']],
    [
      'a document that is not a mapping',
      '- kind: VM\n',
      ['g.yaml:1:1: a spec document must be a mapping with a kind (Cluster, VM, Container, Pool or BackupJob)'],
    ],
    ['a missing required key', 'kind: VM\nname: a\nnode: pve-01\n', ['g.yaml:1:1: missing required key "cluster"']],
    [
      'a missing nested key',
      'kind: Cluster\nname: dev\nvmids: { lower: 500 }\nnodes: [n]\n',
      ['g.yaml:3:8: missing required key "upper" in vmids'],
    ],
    [
      'an unknown top-level key, with a suggestion',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\npowr: running\n',
      ['g.yaml:5:1: unknown key "powr" in VM (did you mean "power"?)'],
    ],
    [
      'a Proxmox option outside config',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nmemory: 2048\n',
      ['g.yaml:5:1: unknown key "memory" in VM (Proxmox options go under config:)'],
    ],
    [
      'an unknown nested key',
      'kind: Cluster\nname: dev\nvmids: { lower: 500, upper: 600, step: 1 }\nnodes: [n]\n',
      ['g.yaml:3:34: unknown key "step" in vmids'],
    ],
    [
      'a password create option',
      'kind: Container\nname: a\ncluster: lab\nnode: pve-01\ncreate:\n  ostemplate: local:vztmpl/x.tar.zst\n  password: secret\n',
      ['g.yaml:7:3: unknown key "password" in create (a password does not belong in a repository; use ssh-public-keys)'],
    ],
    [
      'a create option of the other kind',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\ncreate: { ostemplate: x }\n',
      ['g.yaml:5:11: unknown key "ostemplate" in create (create options for a VM: pool, storage, clone)'],
    ],
    [
      'a wrongly typed value',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nvmid: abc\n',
      ['g.yaml:5:7: vmid: expected a number, got "abc"'],
    ],
    [
      'a fractional VMID',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nvmid: 100.5\n',
      ['g.yaml:5:7: vmid: expected an integer, got 100.5'],
    ],
    ['a VMID Proxmox refuses', 'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nvmid: 99\n', ['g.yaml:5:7: vmid: must be at least 100']],
    [
      'a value outside an enum',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\npower: on\n',
      ['g.yaml:5:8: power: expected one of running, stopped, ignore, got "on"'],
    ],
    ['an empty list', 'kind: Cluster\nname: dev\nvmids: { lower: 500, upper: 600 }\nnodes: []\n', ['g.yaml:4:8: nodes: must not be empty']],
    [
      'a list item of the wrong type',
      'kind: Cluster\nname: dev\nvmids: { lower: 500, upper: 600 }\nnodes: [n1, [n2]]\n',
      ['g.yaml:4:13: nodes[1]: expected a string, got a list'],
    ],
    [
      'a boolean written as a word',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nadopt: yes\n',
      ['g.yaml:5:8: adopt: expected true or false, got "yes"'],
    ],
    [
      'an empty config value',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nconfig:\n  description:\n',
      ['g.yaml:6:3: config.description: expected a string, number, boolean, list or mapping of scalars'],
    ],
    [
      'a list where Proxmox takes no list',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nconfig:\n  cores: [1, 2]\n',
      ['g.yaml:6:10: config.cores: a list is only accepted for tags, sshkeys, nameserver and searchdomain'],
    ],
    [
      'a mapping for an option that is no property string',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nconfig:\n  cores: { n: 1 }\n',
      ['g.yaml:6:10: config.cores: a mapping is only accepted for property-string options (netN, disks, ipconfigN, agent, …)'],
    ],
    [
      'a multi-line value where Proxmox keeps one line',
      'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nconfig:\n  ciuser: |\n    a\n    b\n',
      ['g.yaml:6:11: config.ciuser: must be a single line'],
    ],
  ])('%s', (_name, text, expected) => {
    expect(errorsOf(text)).toEqual(expected);
  });

  it('orders errors by file and position whatever order the checks ran in', () => {
    const result = loadSpecs([
      { path: 'clusters.yaml', text: CLUSTER },
      { path: 'b.yaml', text: 'kind: VM\nname: b_1\ncluster: lab\nnode: nope\n' },
      { path: 'a.yaml', text: 'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nbad: 1\n' },
    ]);
    expect(result.errors.map(formatSpecError)).toEqual([
      'a.yaml:5:1: unknown key "bad" in VM',
      'b.yaml:2:7: name "b_1" is not a valid DNS name',
      'b.yaml:4:7: node "nope" is not a node of cluster "lab" (pve-01)',
    ]);
  });

  it('reports positions in files with a byte-order mark and CRLF line ends', () => {
    const text = '\uFEFFkind: VM\r\nname: a\r\ncluster: lab\r\nnode: pve-01\r\nbogus: 1\r\n';
    expect(errorsOf(text)).toEqual(['g.yaml:5:1: unknown key "bogus" in VM']);
  });

  it('accepts the example of the product design', () => {
    const design = `kind: Cluster
name: lab
vmids: { lower: 100000, upper: 199999 }
ownerTag: pve-gitops
nodes: [pve-01, pve-02]
storages: [local-lvm, shared-rbd]
bridges: [vmbr0, vmbr1]
prune: false
---
kind: VM
name: app-01
cluster: lab
node: pve-01
vmid: 100101
power: running
state: present
adopt: false
ignore: [description]
config:
  memory: 8192
  cores: 4
  net0: virtio,bridge=vmbr0
  scsi0: local-lvm:32
  tags: [env-prod]
  protection: 1
`;
    const { errors, specs } = loadSpecs([{ path: 'design.yaml', text: design }]);
    expect(errors).toEqual([]);
    expect(specs.guests[0]?.config).toEqual({
      memory: '8192',
      cores: '4',
      net0: 'virtio,bridge=vmbr0',
      scsi0: 'local-lvm:32',
      tags: 'env-prod',
      protection: '1',
    });
  });

  it('skips empty files and empty documents', () => {
    const result = loadSpecs([
      { path: 'empty.yaml', text: '' },
      { path: 'comments.yaml', text: '# nothing here yet\n' },
      { path: 'c.yaml', text: `---\n${CLUSTER}---\n# trailing\n---\n` },
    ]);
    expect(result.errors).toEqual([]);
    expect(result.specs.clusters.map((c) => c.name)).toEqual(['lab']);
  });
});

describe('loadSpecs: the loaded model', () => {
  it('fills defaults and maps kinds to guest types', () => {
    const { specs, errors } = loadSpecs([
      { path: 'clusters.yaml', text: CLUSTER },
      {
        path: 'g.yaml',
        text: 'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nvmid: 100100\n---\nkind: Container\nname: b\ncluster: lab\nnode: pve-01\nvmid: 100200\nadopt: true\n',
      },
    ]);
    expect(errors).toEqual([]);
    expect(specs.clusters[0]).toEqual({
      name: 'lab',
      vmids: { lower: 100000, upper: 199999 },
      ownerTag: 'pve-gitops',
      nodes: ['pve-01'],
      prune: false,
      source: { file: 'clusters.yaml', line: 1, col: 1 },
    });
    const [vm, ct] = specs.guests;
    expect(vm).toMatchObject({
      kind: 'VM',
      type: 'qemu',
      vmid: 100100,
      vmidDerived: false,
      power: 'ignore',
      state: 'present',
      adopt: false,
      ignore: [],
      config: {},
      source: { file: 'g.yaml', line: 1, col: 1 },
    });
    expect(vm?.createOptions).toBeUndefined();
    expect(ct).toMatchObject({ kind: 'Container', type: 'lxc', adopt: true, source: { file: 'g.yaml', line: 7, col: 1 } });
  });

  it('converts config values to wire strings and records key positions', () => {
    const { specs, errors } = loadSpecs([
      { path: 'clusters.yaml', text: CLUSTER },
      {
        path: 'g.yaml',
        text: [
          'kind: VM',
          'name: a',
          'cluster: lab',
          'node: pve-01',
          'vmid: 100100',
          'config:',
          '  memory: 8192',
          '  onboot: true',
          '  numa: false',
          '  cpulimit: 1.5',
          '  tags: [Web, env-prod, web]',
          '  net0: { model: virtio, bridge: vmbr0, firewall: true }',
          '  net1: { virtio: "BC:24:11:00:00:01", bridge: vmbr0 }',
          '  scsi0: { ssd: true, file: "local-lvm:32" }',
          '  agent: { enabled: true, fstrim_cloned_disks: true }',
          '  nameserver: [10.0.0.2, 10.0.0.3]',
          '  sshkeys: ["ssh-ed25519 AAAA a@b", "ssh-rsa BBBB c@d"]',
          '  description: |',
          '    line one',
          '    line two',
          '',
        ].join('\n'),
      },
    ]);
    expect(errors).toEqual([]);
    const guest = specs.guests[0];
    expect(guest?.config).toEqual({
      memory: '8192',
      onboot: '1',
      numa: '0',
      cpulimit: '1.5',
      tags: 'env-prod;web',
      net0: 'virtio,bridge=vmbr0,firewall=1',
      net1: 'virtio=BC:24:11:00:00:01,bridge=vmbr0',
      scsi0: 'local-lvm:32,ssd=1',
      agent: '1,fstrim_cloned_disks=1',
      nameserver: '10.0.0.2 10.0.0.3',
      sshkeys: 'ssh-ed25519%20AAAA%20a%40b%0Assh-rsa%20BBBB%20c%40d',
      description: 'line one\nline two',
    });
    expect(guest?.keySources?.net0).toEqual({ file: 'g.yaml', line: 12, col: 3 });
    expect(guest?.keySources?.description).toEqual({ file: 'g.yaml', line: 18, col: 3 });
  });

  it('collects create-only options separately from config', () => {
    const { specs, errors } = loadSpecs([
      { path: 'clusters.yaml', text: CLUSTER },
      {
        path: 'ct.yaml',
        text: 'kind: Container\nname: ct\ncluster: lab\nnode: pve-01\nvmid: 100300\ncreate:\n  ostemplate: local:vztmpl/debian.tar.zst\n  ssh-public-keys: [ssh-ed25519 AAAA a@b, ssh-ed25519 CCCC c@d]\nconfig: { memory: 512 }\n',
      },
    ]);
    expect(errors).toEqual([]);
    expect(specs.guests[0]?.createOptions).toEqual({
      ostemplate: 'local:vztmpl/debian.tar.zst',
      'ssh-public-keys': 'ssh-ed25519 AAAA a@b\nssh-ed25519 CCCC c@d',
    });
    expect(specs.guests[0]?.config).toEqual({ memory: '512' });
  });

  it('derives a missing VMID from cluster/name, whatever file the cluster is in', () => {
    const { specs, errors } = loadSpecs([
      { path: 'a.yaml', text: 'kind: VM\nname: derived-01\ncluster: lab\nnode: pve-01\n' },
      { path: 'z.yaml', text: CLUSTER },
    ]);
    expect(errors).toEqual([]);
    expect(specs.guests[0]).toMatchObject({
      vmid: vmidSlot('lab', 'derived-01', { lower: 100000, upper: 199999 }),
      vmidDerived: true,
    });
  });

  it('resolves YAML anchors and merge keys within a document', () => {
    const { specs, errors } = loadSpecs([
      { path: 'clusters.yaml', text: CLUSTER },
      {
        path: 'g.yaml',
        text: 'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nvmid: 100100\nconfig:\n  net0: &nic { model: virtio, bridge: vmbr0 }\n  net1: *nic\n  net2: { <<: *nic, bridge: vmbr1 }\n',
      },
    ]);
    expect(errors).toEqual([]);
    expect(specs.guests[0]?.config).toEqual({
      net0: 'virtio,bridge=vmbr0',
      net1: 'virtio,bridge=vmbr0',
      net2: 'virtio,bridge=vmbr1',
    });
  });
});
