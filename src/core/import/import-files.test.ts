import { describe, expect, it } from 'vitest';
import type { ClusterSpec, GuestSpec, ListedGuest, ObservedGuest, SpecSet } from '../model.js';
import { loadSpecs } from '../spec/load-specs.js';
import { importFiles } from './import-files.js';
import type { ImportRead } from './read-estate.js';
import { parseVmidRange, selectGuests } from './select-guests.js';

function guest(
  vmid: number,
  name: string,
  node = 'pve-01',
  extra: Record<string, string> = {},
): { listed: ListedGuest; observed: ObservedGuest } {
  const current = {
    name,
    memory: '2048',
    scsi0: `local-lvm:vm-${vmid}-disk-0,size=8G`,
    net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr0',
    ...extra,
  };
  return {
    listed: { vmid, type: 'qemu', node, name, status: 'running' },
    observed: { vmid, type: 'qemu', node, status: 'running', digest: 'd', current, pending: {}, pendingDelete: [] },
  };
}

function read(cluster: string, guests: ReturnType<typeof guest>[], unread: Record<number, string> = {}): ImportRead {
  return {
    cluster,
    nodes: ['pve-01', 'pve-02'],
    wanted: guests.map((g) => g.listed),
    guests: new Map(guests.filter((g) => unread[g.listed.vmid] === undefined).map((g) => [g.listed.vmid, g.observed])),
    readErrors: new Map(Object.entries(unread).map(([vmid, why]) => [Number(vmid), why])),
    skipped: [],
  };
}

const NONE: SpecSet = { clusters: [], guests: [] };
const source = { file: 'cluster.yaml', line: 1, col: 1 };

describe('importFiles', () => {
  it('writes a Cluster document around the guests found and one file per guest, which load as valid specs', () => {
    const result = importFiles([read('lab', [guest(1234, 'b'), guest(1201, 'a', 'pve-02')])], NONE, 'guest');
    expect(result.files.map((f) => f.path)).toEqual(['cluster-lab.yaml', 'lab/a.yaml', 'lab/b.yaml']);
    expect(result.files[0]?.text).toMatch(/^vmids: \{lower: 1200, upper: 1300\}$/m);
    expect(result.files[0]?.text).toMatch(/^storages: \[local-lvm\]\nbridges: \[vmbr0\]$/m);
    const loaded = loadSpecs(result.files.map((f) => ({ path: f.path, text: f.text })));
    expect(loaded.errors).toEqual([]);
    expect(loaded.specs.guests.map((g) => [g.vmid, g.adopt])).toEqual([
      [1201, true],
      [1234, true],
    ]);
  });

  it('keeps a new range off the ranges the specs already claim', () => {
    const existing: ClusterSpec = {
      name: 'prod',
      vmids: { lower: 1250, upper: 1260 },
      ownerTag: 'pve-gitops',
      nodes: ['pve-01'],
      prune: false,
      source,
    };
    const result = importFiles([read('lab', [guest(1234, 'b'), guest(1270, 'c')])], { clusters: [existing], guests: [] }, 'guest');
    expect(result.files[0]?.text).toMatch(/^vmids: \{lower: 1234, upper: 1271\}$/m);
  });

  it('refuses guests that do not fit the existing Cluster document, that share a name, or that were not read', () => {
    const lab: ClusterSpec = {
      name: 'lab',
      vmids: { lower: 1000, upper: 2000 },
      ownerTag: 'ours',
      nodes: ['pve-01'],
      storages: ['local-lvm'],
      bridges: ['vmbr0'],
      prune: false,
      source,
    };
    const described = { cluster: 'lab', name: 'taken', vmid: 1500 } as GuestSpec;
    const result = importFiles(
      [
        read(
          'lab',
          [
            guest(1001, 'ok', 'pve-01', { tags: 'ours;web' }),
            guest(2500, 'far'),
            guest(1002, 'elsewhere', 'pve-02'),
            guest(1003, 'ceph', 'pve-01', { scsi1: 'ceph-vm:vm-1003-disk-1,size=8G' }),
            guest(1004, 'bridged', 'pve-01', { net1: 'virtio=BC:24:11:00:00:02,bridge=vmbr9' }),
            guest(1005, 'taken'),
            guest(1006, 'ok'),
            guest(1007, 'lost'),
          ],
          { 1007: 'got timeout' },
        ),
      ],
      { clusters: [lab], guests: [described] },
      'guest',
    );
    expect(result.imported.map((g) => g.vmid)).toEqual([1001]);
    expect(result.files.map((f) => f.path)).toEqual(['lab/ok.yaml']);
    // The cluster's own owner tag is the one left out of the tags.
    expect(result.files[0]?.text).toMatch(/^ {2}tags: \[web\]$/m);
    expect(Object.fromEntries(result.refused.map((r) => [r.vmid, r.why]))).toEqual({
      2500: expect.stringMatching(/outside the cluster document's range \[1000, 2000\)/),
      1002: expect.stringMatching(/node pve-02 is not among/),
      1003: expect.stringMatching(/storage ceph-vm is not among/),
      1004: expect.stringMatching(/bridge vmbr9 is not among/),
      1005: expect.stringMatching(/guest 1500 of the cluster is also named taken/),
      1006: expect.stringMatching(/guest 1001 of the cluster is also named ok/),
      1007: 'could not be read, so nothing is guessed: got timeout',
    });
  });

  it('groups per cluster and per pool, the same reads giving the same files', () => {
    const reads = (): ImportRead[] => {
      const r = read('lab', [guest(1001, 'a'), guest(1002, 'b'), guest(1003, 'c')]);
      r.pools = new Map([[1002, 'web']]);
      r.poolComments = new Map([['web', 'Web servers']]);
      return [r, read('prod', [guest(3001, 'p')])];
    };
    expect(importFiles(reads(), NONE, 'cluster').files.map((f) => [f.path, f.guests.length])).toEqual([
      ['cluster-lab.yaml', 0],
      ['cluster-prod.yaml', 0],
      ['lab/guests.yaml', 3],
      ['pools-lab.yaml', 0],
      ['prod/guests.yaml', 1],
    ]);
    const byPool = importFiles(reads(), NONE, 'pool');
    expect(byPool.files.map((f) => f.path)).toEqual([
      'cluster-lab.yaml',
      'cluster-prod.yaml',
      'lab/no-pool.yaml',
      'lab/pool-web.yaml',
      'pools-lab.yaml',
      'prod/no-pool.yaml',
    ]);
    expect(byPool.files.find((f) => f.path === 'lab/pool-web.yaml')?.text).toMatch(/^adopt: true\npool: web\nconfig:$/m);
    expect(byPool.files.find((f) => f.path === 'pools-lab.yaml')?.text).toMatch(
      /^kind: Pool\nname: web\ncluster: lab\ncomment: Web servers\n$/m,
    );
    expect(importFiles([...reads()].reverse(), NONE, 'pool')).toEqual(byPool);
  });

  it('reports a cluster that could not be listed', () => {
    const failed: ImportRead = { ...read('lab', []), error: '401 authentication failure' };
    expect(importFiles([failed], NONE, 'guest')).toMatchObject({
      files: [],
      clusterErrors: [{ cluster: 'lab', message: '401 authentication failure' }],
    });
  });

  it('says which parts of a cluster were not read, and writes its guests without them', () => {
    const partial: ImportRead = { ...read('lab', [guest(1001, 'a')]), haError: 'Permission check failed (/, Sys.Audit)' };
    const result = importFiles([partial], NONE, 'guest');
    expect(result.clusterNotes).toEqual([
      { cluster: 'lab', message: 'HA resources not read, so no guest says ha: (Permission check failed (/, Sys.Audit))' },
    ]);
    expect(result.files.find((f) => f.path === 'lab/a.yaml')?.text).not.toMatch(/^ha:/m);
  });
});

describe('selectGuests', () => {
  const listing: ListedGuest[] = [
    { vmid: 120, type: 'qemu', node: 'pve-02', name: 'b', tags: 'web;prod' },
    { vmid: 100, type: 'qemu', node: 'pve-01', name: 'a', tags: 'Web' },
    { vmid: 300, type: 'lxc', node: 'pve-01', name: 'c' },
  ];
  const described: SpecSet = {
    clusters: [],
    guests: [{ cluster: 'lab', vmid: 100, name: 'a', source: { file: 'lab/a.yaml', line: 1, col: 1 } } as GuestSpec],
  };
  const vmids = (filter: Parameters<typeof selectGuests>[2], specs = NONE, pools?: Map<number, string>): number[] =>
    selectGuests('lab', listing, filter, specs, pools).wanted.map((l) => l.vmid);

  it.each([
    ['no filter', {}, [100, 120, 300]],
    ['a VMID range, both ends included', { vmids: { lower: 100, upper: 120 } }, [100, 120]],
    ['a node', { node: 'pve-01' }, [100, 300]],
    ['a tag, as Proxmox compares tags', { tag: 'WEB' }, [100, 120]],
  ])('%s', (_what, filter, expected) => {
    expect(vmids(filter)).toEqual(expected);
  });

  it('filters by pool and skips what the specs describe, saying where', () => {
    expect(vmids({ pool: 'web' }, NONE, new Map([[300, 'web']]))).toEqual([300]);
    const selected = selectGuests('lab', listing, {}, described);
    expect(selected.wanted.map((l) => l.vmid)).toEqual([120, 300]);
    expect(selected.skipped).toEqual([{ cluster: 'lab', vmid: 100, name: 'a', why: 'already described by lab/a.yaml' }]);
  });

  it.each([
    ['150', { lower: 150, upper: 150 }],
    ['100-199', { lower: 100, upper: 199 }],
    ['199-100', undefined],
    ['a-b', undefined],
  ])('parses --vmid %s', (text, expected) => {
    expect(parseVmidRange(text)).toEqual(expected);
  });
});
