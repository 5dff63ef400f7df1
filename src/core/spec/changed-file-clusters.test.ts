import { describe, expect, it } from 'vitest';
import { changedFileClusters } from './changed-file-clusters.js';
import { loadSpecs } from './load-specs.js';
import { createSpecParseCache } from './parse-cache.js';
import { resolveSpecLimits } from './spec-limits.js';
import type { SpecFileInput } from './spec-text.js';

const LIMITS = resolveSpecLimits();
const guest = (name: string, cluster: string, memory = 2048): string =>
  `kind: VM\nname: ${name}\ncluster: ${cluster}\nnode: pve-01\nconfig:\n  memory: ${memory}\n`;
const clusterDoc = (name: string): string => `kind: Cluster\nname: ${name}\nvmids: { lower: 1000, upper: 2000 }\nnodes: [pve-01]\n`;

const BASE: SpecFileInput[] = [
  { path: 'clusters.yaml', text: `${clusterDoc('lab')}---\n${clusterDoc('prod')}` },
  { path: 'lab.yaml', text: `${guest('a', 'lab')}---\n${guest('b', 'lab')}` },
  { path: 'prod.yaml', text: guest('c', 'prod') },
];
const withFile = (files: SpecFileInput[], file: SpecFileInput): SpecFileInput[] => [...files.filter((f) => f.path !== file.path), file];

describe('changedFileClusters', () => {
  it.each<[string, SpecFileInput[], string[]]>([
    ['no file differs', BASE, []],
    [
      'a guest changed in one file',
      withFile(BASE, { path: 'lab.yaml', text: `${guest('a', 'lab', 4096)}---\n${guest('b', 'lab')}` }),
      ['lab'],
    ],
    ['a guest moved to another cluster', withFile(BASE, { path: 'prod.yaml', text: guest('c', 'lab') }), ['lab', 'prod']],
    ['a Cluster document changed', withFile(BASE, { path: 'clusters.yaml', text: clusterDoc('lab') }), ['lab', 'prod']],
    ['a file added', [...BASE, { path: 'new.yaml', text: guest('d', 'edge') }], ['edge']],
    ['a file removed (its clusters are the base’s)', BASE.filter((f) => f.path !== 'prod.yaml'), ['prod']],
    ['a file that is not UTF-8, which names nothing', [...BASE, { path: 'bad.yaml', bytes: new Uint8Array([0xff]) }], []],
    ['a file whose YAML is invalid', [...BASE, { path: 'bad.yaml', text: 'kind: [VM\n' }], []],
  ])('%s', (_what, head, expected) => {
    expect(changedFileClusters(head, BASE, LIMITS)).toEqual(expected);
  });

  it('does not guess when more text changed than it parses', () => {
    const head = withFile(BASE, { path: 'lab.yaml', text: guest('a', 'lab', 4096) });
    expect(changedFileClusters(head, BASE, LIMITS, 10)).toBeUndefined();
    expect(changedFileClusters(head, BASE, LIMITS)).toEqual(['lab']);
  });

  it('leaves its parses of the changed texts in the cache the trees are loaded with', () => {
    const head = withFile(BASE, { path: 'lab.yaml', text: guest('a', 'lab', 4096) });
    const cache = createSpecParseCache();
    expect(changedFileClusters(head, BASE, LIMITS, undefined, cache)).toEqual(['lab']);
    expect(cache.size).toBe(2);
    const misses = cache.misses;
    loadSpecs(head, { cache });
    loadSpecs(BASE, { cache });
    // Each tree parses only what is in neither the other tree nor the guess: the two unchanged files.
    expect(cache.misses - misses).toBe(2);
  });
});
