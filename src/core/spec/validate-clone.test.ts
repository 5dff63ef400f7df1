import { describe, expect, it } from 'vitest';
import { formatSpecError } from './errors.js';
import { loadSpecs } from './load-specs.js';

const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100000, upper: 199999 }\nnodes: [pve-01, pve-02]\n';

/** A VM or container document of `lab` with `lines` after its header (line 5 onwards). */
const guest = (kind: 'VM' | 'Container', lines: string): string => `kind: ${kind}\nname: web-03\ncluster: lab\nnode: pve-01\n${lines}`;

const load = (text: string) =>
  loadSpecs([
    { path: 'clusters.yaml', text: CLUSTER },
    { path: 'g.yaml', text },
  ]);
const errorsOf = (text: string): string[] => load(text).errors.map(formatSpecError);

describe('create.clone and template: true in validate', () => {
  it.each<[string, string, string[]]>([
    ['a linked clone by name', guest('VM', 'create:\n  clone:\n    template: debian-12-cloud\n'), []],
    [
      'a full clone by VMID onto a storage',
      guest('VM', 'create:\n  clone: { template: 9000, full: true, storage: local-lvm, format: raw }\n'),
      [],
    ],
    [
      'storage on a linked clone',
      guest('VM', 'create:\n  clone:\n    template: debian-12-cloud\n    storage: local-lvm\n'),
      [
        `g.yaml:8:14: create.clone.storage: Proxmox refuses it for a linked clone ("parameter 'storage' not allowed for linked clones"); set full: true or leave it out`,
      ],
    ],
    [
      'format on a linked clone',
      guest('VM', 'create:\n  clone: { template: tpl, full: false, format: qcow2 }\n'),
      [
        `g.yaml:6:48: create.clone.format: Proxmox refuses it for a linked clone ("parameter 'format' not allowed for linked clones"); set full: true or leave it out`,
      ],
    ],
    ['a container clone needs no ostemplate', guest('Container', 'create:\n  clone: { template: ct-tpl }\n'), []],
    [
      'a container clone with an ostemplate',
      guest('Container', 'create:\n  ostemplate: local:vztmpl/x.tar.zst\n  clone: { template: ct-tpl }\n'),
      ['g.yaml:6:15: create.ostemplate does nothing for a clone (the template gives the root disk)'],
    ],
    [
      'a container clone has no format',
      guest('Container', 'create:\n  clone: { template: ct-tpl, full: true, format: raw }\n'),
      [expect.stringContaining('g.yaml:6:') as unknown as string],
    ],
    [
      'config: template is refused',
      guest('VM', 'config:\n  template: 1\n'),
      [
        'g.yaml:6:13: config.template: write `template: true` on the document instead; Proxmox would set the flag without converting the disks to base images',
      ],
    ],
    [
      'template: true',
      guest('VM', 'template: true\nconfig:\n  scsi0: local-lvm:0,import-from=local:import/debian-12-genericcloud-amd64.qcow2\n'),
      [],
    ],
  ])('%s', (_name, text, expected) => {
    expect(errorsOf(text)).toEqual(expected);
  });

  it('keeps the clone and the template flag on the loaded spec, the VMID as a string', () => {
    const specs = load(guest('VM', 'template: true\ncreate:\n  clone: { template: 9000, full: true }\n')).specs;
    const [spec] = specs.guests;
    expect(spec?.clone).toEqual({ template: '9000', full: true });
    expect(spec?.template).toBe(true);
    expect(spec?.createOptions).toBeUndefined();
  });
});
