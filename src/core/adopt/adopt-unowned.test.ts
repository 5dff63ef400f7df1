/**
 * The drift report's unowned guests imported into new spec files beside the adopted values: the
 * import's own documents, a file that exists never overwritten (the guest left, with why), a
 * guest that could not be read left too, and nothing at all when the result would not load.
 */
import { describe, expect, it } from 'vitest';
import type { ListedGuest, ObservedGuest } from '../model.js';
import type { ImportRead } from '../import/read-estate.js';
import { loadSpecs } from '../spec/load-specs.js';
import type { Adoption } from './adopt-drift.js';
import { AdoptionError } from './adopt-drift.js';
import { withImported } from './adopt-unowned.js';

const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100, upper: 199 }\nownerTag: pve-gitops\nnodes: [pve-01]\n';
const FILES = [{ path: 'cluster.yaml', text: CLUSTER }];
const specs = loadSpecs(FILES).specs;

function live(vmid: number, name: string): { listed: ListedGuest; observed: ObservedGuest } {
  const current = { name, memory: '1024', net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr0' };
  return {
    listed: { vmid, type: 'qemu', node: 'pve-01', name, status: 'running' },
    observed: { vmid, type: 'qemu', node: 'pve-01', status: 'running', digest: 'd', current, pending: {}, pendingDelete: [] },
  };
}

function read(guests: ReturnType<typeof live>[], unread: Record<number, string> = {}): ImportRead {
  return {
    cluster: 'lab',
    nodes: ['pve-01'],
    wanted: guests.map((g) => g.listed),
    guests: new Map(guests.filter((g) => unread[g.listed.vmid] === undefined).map((g) => [g.listed.vmid, g.observed])),
    readErrors: new Map(Object.entries(unread).map(([vmid, why]) => [Number(vmid), why])),
    skipped: [],
  };
}

const asked = (...names: [number, string][]): Adoption => ({
  files: [],
  adopted: [],
  notAdopted: [],
  unmatched: [],
  toImport: names.map(([vmid, name]) => ({ cluster: 'lab', vmid, name })),
});

describe('withImported', () => {
  it("adds each guest's import as a new file, which loads with the specs", () => {
    const result = withImported(asked([150, 'app-07']), [read([live(150, 'app-07')])], specs, FILES);
    expect(result.files.map((f) => f.path)).toEqual(['lab/app-07.yaml']);
    expect(result.files[0]?.text).toMatch(/^kind: VM\nname: app-07\ncluster: lab\nnode: pve-01\nvmid: 150\nadopt: true\n/m);
    expect(result.imported).toEqual([{ subject: 'lab/app-07', file: 'lab/app-07.yaml', remarks: [] }]);
    expect(result.toImport).toBeUndefined();
    expect(loadSpecs([...FILES, ...result.files]).errors).toEqual([]);
  });

  it('never overwrites a file that exists, and leaves a guest that could not be read, each with why', () => {
    const files = [...FILES, { path: 'lab/app-07.yaml', text: '# kept as it is\n' }];
    const result = withImported(
      asked([150, 'app-07'], [151, 'app-08']),
      [read([live(150, 'app-07'), live(151, 'app-08')], { 151: '500 read timeout' })],
      specs,
      files,
    );
    expect(result.files).toEqual([]);
    expect(result.imported).toEqual([]);
    expect(result.notAdopted).toEqual([
      { subject: 'lab/app-07', key: 'unowned', reason: 'its spec file lab/app-07.yaml exists already: import it by hand' },
      { subject: 'lab/app-08', key: 'unowned', reason: 'not imported: could not be read, so nothing is guessed: 500 read timeout' },
    ]);
  });

  it('writes nothing when the new files would not load with the specs', () => {
    // A spec elsewhere already names its guest app-07: the imported document would be a second one.
    const files = [
      ...FILES,
      { path: 'other.yaml', text: 'kind: VM\nname: app-07\ncluster: lab\nnode: pve-01\nvmid: 160\nconfig: { memory: 512 }\n' },
    ];
    expect(() => withImported(asked([150, 'app-07']), [read([live(150, 'app-07')])], specs, files)).toThrow(AdoptionError);
  });
});
