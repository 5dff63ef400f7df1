import { describe, expect, it } from 'vitest';
import type { DriftFinding, DriftObject, DriftReport } from '../drift/drift-report.js';
import { loadSpecs, type SpecFile } from '../spec/load-specs.js';
import { type AdoptSelection, adoptDrift, AdoptionError } from './adopt-drift.js';

const CLUSTER = [
  'kind: Cluster',
  'name: lab',
  'vmids: { lower: 100000, upper: 199999 }',
  'ownerTag: pve-gitops',
  'nodes: [pve-01]',
  'bridges: [vmbr0, vmbr1]',
  '---',
  'kind: Pool',
  'name: web',
  'cluster: lab',
  'comment: the web tier   # shown in the GUI',
  '',
].join('\n');

const WEB = [
  '# The shop front.',
  'kind: VM',
  'name: web-01',
  'cluster: lab',
  'node: pve-01',
  'vmid: 100101',
  'power: running',
  'pool: web',
  'ha: { state: started }   # fenced by the HA stack',
  'config:',
  '  memory: 2048',
  '  cores: 2',
  '  net0: { model: virtio, bridge: vmbr0 }',
  '  tags: [web]',
  '',
].join('\n');

const FILES: SpecFile[] = [
  { path: 'cluster.yaml', text: CLUSTER },
  { path: 'web.yaml', text: WEB },
];

function finding(
  key: string,
  expected: string | undefined,
  actual: string | undefined,
  kind: DriftFinding['kind'] = 'config',
): DriftFinding {
  return {
    id: `lab/100101#${key}`,
    kind,
    key,
    ...(expected !== undefined ? { expected } : {}),
    ...(actual !== undefined ? { actual } : {}),
    firstSeen: '2030-01-01T00:00:00.000Z',
  };
}

function report(findings: DriftFinding[], objects: DriftObject[] = []): DriftReport {
  return {
    ref: 'main',
    checkedAt: '2030-01-01T00:00:00.000Z',
    clusters: [],
    problems: [],
    guests: [{ cluster: 'lab', name: 'web-01', vmid: 100101, node: 'pve-01', type: 'qemu', findings }],
    objects,
    pending: [],
    guestErrors: [],
    expiredAllows: [],
    allowed: 0,
    firstSeen: {},
  };
}

function adopt(drift: DriftReport, select?: AdoptSelection, files = FILES) {
  const loaded = loadSpecs(files);
  expect(loaded.errors).toEqual([]);
  return adoptDrift({ report: drift, specs: loaded.specs, files, ...(select ? { select } : {}) });
}

function text(result: ReturnType<typeof adopt>, path: string): string {
  return result.files.find((f) => f.path === path)?.text ?? '';
}

describe('adoptDrift', () => {
  it.each<[string, DriftFinding, string]>([
    ['a number as a number', finding('memory', '2048', '4096'), '  memory: 4096\n'],
    ['a new key after the last', finding('balloon', undefined, '1024'), '  tags: [web]\n  balloon: 1024\n'],
    ['a list without the owner tag', finding('tags', 'pve-gitops;web', 'blue;pve-gitops;web'), '  tags: [blue, web]\n'],
    [
      'a mapping with the MAC',
      finding('net0', 'virtio,bridge=vmbr0', 'virtio=BC:24:11:00:00:01,bridge=vmbr1'),
      '  net0: { virtio: BC:24:11:00:00:01, bridge: vmbr1 }\n',
    ],
    ['power as the document field', finding('power', 'running', 'stopped', 'power'), 'power: stopped\n'],
  ])('writes %s', (_what, drift, line) => {
    const result = adopt(report([drift]));
    expect(result.notAdopted).toEqual([]);
    expect(text(result, 'web.yaml')).toContain(line);
    expect(text(result, 'web.yaml')).toContain('# The shop front.\n');
    expect(result.adopted).toEqual([expect.objectContaining({ subject: 'lab/web-01', file: 'web.yaml', key: drift.key })]);
  });

  it('removes a key deleted on the cluster', () => {
    const result = adopt(report([finding('cores', '2', undefined)]));
    expect(text(result, 'web.yaml')).not.toContain('cores');
    expect(result.adopted[0]).toEqual({ subject: 'lab/web-01', file: 'web.yaml', key: 'cores', from: '2' });
  });

  it('takes a pool membership, an HA field and a pool comment into their documents', () => {
    const objects: DriftObject[] = [
      { cluster: 'lab', kind: 'pool-member', key: 'lab/pool-member/100101', name: 'web-01', findings: [finding('pool', 'web', undefined)] },
      {
        cluster: 'lab',
        kind: 'ha',
        key: 'lab/ha/100101',
        name: 'web-01',
        findings: [finding('ha.state', 'started', 'stopped'), finding('ha.max_restart', '1', '3')],
      },
      {
        cluster: 'lab',
        kind: 'pool',
        key: 'lab/pool/web',
        name: 'web',
        source: { file: 'cluster.yaml', line: 8, col: 1 },
        findings: [finding('comment', 'the web tier', 'web and api')],
      },
    ];
    const result = adopt(report([], objects));
    expect(result.notAdopted).toEqual([]);
    expect(text(result, 'web.yaml')).toContain('pool: null\n');
    expect(text(result, 'web.yaml')).toContain('ha: { state: stopped, max_restart: 3 }   # fenced by the HA stack\n');
    expect(text(result, 'cluster.yaml')).toContain('comment: web and api   # shown in the GUI\n');
  });

  it.each<[string, DriftFinding | DriftObject, RegExp]>([
    ['a secret', finding('cipassword', undefined, '**********'), /sensitive: pve-gitops never writes/],
    ['a missing guest', finding('missing', 'present', undefined, 'missing'), /gone from the cluster/],
    ['an orphan', finding('orphan', undefined, 'owned, no spec', 'orphan'), /pve-gitops import/],
    ['a key the spec does not set, deleted', finding('name', 'web-01', undefined), /the spec does not set it/],
    [
      'a backup job',
      {
        cluster: 'lab',
        kind: 'backup-job',
        key: 'lab/backup-job/nightly',
        name: 'nightly',
        findings: [finding('schedule', '02:00', '03:00')],
      },
      /cannot be adopted: edit its document by hand/,
    ],
  ])('leaves %s, saying why', (_what, item, reason) => {
    const drift = 'findings' in item ? report([], [item]) : report([item]);
    const result = adopt(drift);
    expect(result.files).toEqual([]);
    expect(result.notAdopted).toEqual([expect.objectContaining({ reason: expect.stringMatching(reason) })]);
  });

  it('takes only what the selection names, and says which selectors matched nothing', () => {
    const drift = report([finding('memory', '2048', '4096'), finding('cores', '2', '4')]);
    const result = adopt(drift, { guests: ['lab/100101'], keys: ['cores', 'nosuch'] });
    expect(result.adopted.map((a) => a.key)).toEqual(['cores']);
    expect(text(result, 'web.yaml')).toContain('  memory: 2048\n');
    expect(result.unmatched).toEqual(['nosuch']);
  });

  it('writes nothing when the edited specs would not load', () => {
    // vmbr9 is not among the Cluster document's bridges: adopting it would make the repository invalid.
    expect(() => adopt(report([finding('net0', 'virtio,bridge=vmbr0', 'virtio=BC:24:11:00:00:01,bridge=vmbr9')]))).toThrow(AdoptionError);
  });
});
