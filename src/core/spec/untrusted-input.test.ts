import { describe, expect, it } from 'vitest';
import { formatSpecError } from './errors.js';
import { loadSpecs } from './load-specs.js';
import type { SpecFileInput } from './spec-text.js';
import { createSpecParseCache } from './parse-cache.js';
import { DEFAULT_SPEC_LIMITS } from './spec-limits.js';

const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100000, upper: 199999 }\nnodes: [pve-01]\n';
const vm = (name: string, extra = ''): string => `kind: VM\nname: ${name}\ncluster: lab\nnode: pve-01\n${extra}`;
const lines = (files: SpecFileInput[], options: Parameters<typeof loadSpecs>[1] = {}): string[] =>
  loadSpecs(files, options).errors.map(formatSpecError);

describe('the spec repository is bounded', () => {
  it('refuses a repository with more files than allowed, naming the setting', () => {
    const files = [{ path: 'c.yaml', text: CLUSTER }, ...['a', 'b', 'c'].map((n) => ({ path: `${n}.yaml`, text: vm(n) }))];
    expect(lines(files, { limits: { maxFiles: 3 }, label: 'specs' })).toEqual([
      'specs: 4 spec files is more than allowed; the limit is 3 (PVE_GITOPS_MAX_FILES)',
    ]);
    expect(lines(files, { limits: { maxFiles: 4 } })).toEqual([]);
  });

  it('refuses a repository over its total bytes before parsing any of it', () => {
    const files = [
      { path: 'c.yaml', text: CLUSTER },
      { path: 'broken.yaml', text: `${vm('x')}: [` },
    ];
    expect(lines(files, { limits: { maxTotalBytes: 100 } })).toEqual([
      'spec repository: 126 bytes of spec files is more than allowed; the limit is 100 bytes (PVE_GITOPS_MAX_TOTAL_BYTES)',
    ]);
  });

  it('refuses a file over the per-file limit alone, counting bytes, not characters', () => {
    const files = [
      { path: 'c.yaml', text: CLUSTER },
      { path: 'ok.yaml', text: vm('ok') },
      { path: 'big.yaml', text: vm('big', `config:\n  description: ${'é'.repeat(600)}\n`) },
    ];
    const loaded = loadSpecs(files, { limits: { maxFileBytes: 1024 } });
    expect(loaded.errors.map(formatSpecError)).toEqual([
      'big.yaml: 1.2 KiB is more than a spec file may hold; the limit is 1 KiB (PVE_GITOPS_MAX_FILE_BYTES)',
    ]);
    expect(loaded.specs.guests.map((g) => g.name)).toEqual(['ok']);
  });

  it('refuses alias expansion beyond the limit ("billion laughs") in a few lines, quickly', () => {
    const ten = (item: string): string => `[${Array(10).fill(item).join(', ')}]`;
    const levels = 'abcdefghi'.split('');
    const text = `kind: VM\n${levels.map((name, i) => `${name}: &${name} ${i === 0 ? ten('lol') : ten(`*${levels[i - 1]}`)}`).join('\n')}\n`;
    expect(lines([{ path: 'laughs.yaml', text }])).toEqual([
      'laughs.yaml:8:20: YAML: too large with its aliases expanded (over 5,000,000 values); the limit is 5,000,000 (PVE_GITOPS_MAX_YAML_NODES)',
    ]);
  });

  it('counts expansion across the whole repository, not per file', () => {
    const ten = (item: string): string => `[${Array(10).fill(item).join(', ')}]`;
    const text = (n: number): string => vm(`g-${n}`, `x-a: &a ${ten('x')}\nx-b: &b ${ten('*a')}\nx-c: ${ten('*b')}\n`);
    const files = [0, 1, 2].map((n) => ({ path: `g-${n}.yaml`, text: text(n) }));
    // Each file alone holds about 1,100 values; the three together are over 3,000.
    expect(lines([files[0] as SpecFileInput], { limits: { maxExpandedNodes: 3000 } }).join('\n')).not.toMatch(/expanded/);
    expect(lines(files, { limits: { maxExpandedNodes: 3000 } })).toEqual([
      'spec repository: the spec files hold 3,735 values with their aliases expanded, more than allowed; the limit is 3,000 (PVE_GITOPS_MAX_YAML_NODES)',
    ]);
  });

  it('refuses more aliases in one document than allowed, and a recursive alias', () => {
    const many = vm('many', `config: &c { cores: 1 }\nignore: [${Array(5).fill('*c').join(', ')}]\n`);
    expect(lines([{ path: 'many.yaml', text: many }], { limits: { maxAliases: 4 } })).toEqual([
      'many.yaml:6:26: YAML: more than 4 aliases in one document; the limit is 4 (PVE_GITOPS_MAX_YAML_ALIASES)',
    ]);
    expect(lines([{ path: 'r.yaml', text: `${vm('r')}extra: &r { self: *r }\n` }])).toEqual([
      'r.yaml:5:19: YAML: alias *r refers to a value that contains it (a recursive alias)',
    ]);
  });

  it('refuses nesting deeper than allowed, also thousands of levels deep, without exhausting the stack', () => {
    const nested = (depth: number): string => `${vm('deep')}config:\n  description: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
    expect(lines([{ path: 'deep.yaml', text: nested(40) }])).toEqual([
      'deep.yaml:6:46: YAML: nested deeper than 32 levels; the limit is 32 (PVE_GITOPS_MAX_YAML_DEPTH)',
    ]);
    expect(lines([{ path: 'deep.yaml', text: nested(20_000) }]).join('\n')).toMatch(
      /^deep\.yaml:6:\d+: YAML: nested deeper than 32 levels/,
    );
    // Through an alias: the alias's depth plus the depth of what it names.
    const viaAlias = `${vm('deep')}x: &x ${'['.repeat(20)}${']'.repeat(20)}\ny: ${'['.repeat(20)}*x${']'.repeat(20)}\n`;
    expect(lines([{ path: 'alias.yaml', text: viaAlias }])).toEqual([
      'alias.yaml:6:24: YAML: nested deeper than 32 levels; the limit is 32 (PVE_GITOPS_MAX_YAML_DEPTH)',
    ]);
  });

  it('has limits far above what a spec document needs', () => {
    expect(DEFAULT_SPEC_LIMITS).toEqual({
      maxFileBytes: 8 * 1024 * 1024,
      maxFiles: 50_000,
      maxTotalBytes: 64 * 1024 * 1024,
      maxAliases: 1_000,
      maxExpandedNodes: 5_000_000,
      maxDepth: 32,
    });
    expect(() => loadSpecs([], { limits: { maxFiles: 0 } })).toThrow(/maxFiles must be a positive integer/);
  });
});

describe('values are taken exactly as written, or refused', () => {
  it.each([
    [
      'vmid',
      'vmid: 9007199254740993\n',
      'r.yaml:5:7: vmid: integer 9007199254740993 is beyond 2^53 and cannot be kept exactly; quote it if it is text',
    ],
    [
      'a config value',
      'config:\n  memory: 18446744073709551616\n',
      'r.yaml:6:11: config.memory: integer 18446744073709551616 is beyond 2^53',
    ],
    ['a hexadecimal one', 'config:\n  memory: 0x20000000000001\n', 'r.yaml:6:11: config.memory: integer 0x20000000000001 is beyond 2^53'],
    [
      'one of several keys on a line',
      'config: { cores: 2, balloon: 9007199254740993, memory: 4096 }\n',
      'r.yaml:5:30: config.balloon: integer 9007199254740993 is beyond 2^53',
    ],
    ['a list item', 'config:\n  tags: [a, 9007199254740993]\n', 'r.yaml:6:13: config.tags[1]: integer 9007199254740993 is beyond 2^53'],
  ])('an integer beyond 2^53 is an error, not a rounded number: %s', (_name, extra, message) => {
    expect(
      lines([
        { path: 'c.yaml', text: CLUSTER },
        { path: 'r.yaml', text: vm('r', extra) },
      ]).join('\n'),
    ).toContain(message);
  });

  it('keeps 2^53 - 1 and quoted big numbers', () => {
    const loaded = loadSpecs([
      { path: 'c.yaml', text: CLUSTER },
      { path: 'r.yaml', text: vm('r', 'config:\n  description: "18446744073709551616"\n  balloon: 9007199254740991\n') },
    ]);
    expect(loaded.errors.map(formatSpecError).join('\n')).not.toMatch(/2\^53/);
    expect(loaded.specs.guests[0]?.config.description).toBe('18446744073709551616');
  });

  it('refuses bytes that are not UTF-8 instead of replacing them, and text with a lone surrogate', () => {
    const bytes = Buffer.concat([Buffer.from(vm('r', 'config:\n  description: ab')), Buffer.from([0xc3, 0x28]), Buffer.from('\n')]);
    expect(
      lines([
        { path: 'c.yaml', text: CLUSTER },
        { path: 'r.yaml', bytes },
      ]),
    ).toEqual(['r.yaml:6:18: not valid UTF-8 at byte 68 (0xc3); spec files must be UTF-8']);
    const overlong = Buffer.from([0x61, 0x3a, 0x20, 0xc0, 0xaf]);
    expect(lines([{ path: 'o.yaml', bytes: overlong }])).toEqual([
      'o.yaml:1:4: not valid UTF-8 at byte 3 (0xc0); spec files must be UTF-8',
    ]);
    expect(lines([{ path: 's.yaml', text: `kind: VM\nname: a\uD800b\n` }])).toEqual([
      's.yaml:2:8: text is not valid Unicode (a lone surrogate)',
    ]);
  });

  it('reads UTF-8 bytes, with or without a byte order mark, as the same text', () => {
    const text = vm('café-01'.replace('é', 'e'), 'config:\n  description: "Café ☕ 😀"\n');
    const plain = loadSpecs([
      { path: 'c.yaml', text: CLUSTER },
      { path: 'r.yaml', bytes: Buffer.from(text) },
    ]);
    const bom = loadSpecs([
      { path: 'c.yaml', text: CLUSTER },
      { path: 'r.yaml', bytes: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]) },
    ]);
    expect(plain.errors).toEqual([]);
    expect(plain.specs.guests[0]?.config.description).toBe('Café ☕ 😀');
    expect(bom.specs).toEqual(plain.specs);
  });
});

describe('the parse cache', () => {
  const estate = (memory: number): SpecFileInput[] => [
    { path: 'clusters.yaml', text: CLUSTER },
    ...Array.from({ length: 20 }, (_, i) => ({
      path: `g-${i}.yaml`,
      text: vm(`g-${i}`, `config:\n  memory: ${i === 7 ? memory : 1024}\n`),
    })),
  ];

  it('parses each distinct text once across loads, with the same result as without it', () => {
    const cache = createSpecParseCache();
    const base = loadSpecs(estate(1024), { cache });
    expect(cache.size).toBe(21);
    const head = loadSpecs(estate(2048), { cache });
    // 20 of 21 files are the same in base and head: one parse for the edited file.
    expect(cache.size).toBe(22);
    expect(cache.hits).toBe(20);
    expect(head.specs).toEqual(loadSpecs(estate(2048)).specs);
    expect(base.specs).toEqual(loadSpecs(estate(1024)).specs);
    expect(head.specs.guests.find((g) => g.name === 'g-7')?.config.memory).toBe('2048');
  });

  it('still checks across files: the same bytes in two files are two guests with one name', () => {
    const cache = createSpecParseCache();
    const text = vm('twin');
    const loaded = loadSpecs(
      [
        { path: 'c.yaml', text: CLUSTER },
        { path: 'a.yaml', text },
        { path: 'b.yaml', bytes: Buffer.from(text) },
      ],
      { cache },
    );
    expect(cache.hits).toBe(1);
    expect(loaded.specs.guests.map((g) => g.source.file)).toEqual(['a.yaml', 'b.yaml']);
    expect(loaded.errors.map(formatSpecError)).toEqual([
      'b.yaml:2:7: duplicate guest name "twin" in cluster "lab" (first defined at a.yaml:2:7)',
    ]);
  });

  it('never answers with a parse made under other limits', () => {
    const cache = createSpecParseCache();
    const files = [{ path: 'd.yaml', text: `${vm('d')}x: [[[[1]]]]\n` }];
    expect(lines(files, { cache }).join('\n')).not.toMatch(/nested deeper/);
    expect(lines(files, { cache, limits: { maxDepth: 3 } }).join('\n')).toMatch(/nested deeper than 3 levels/);
  });

  it('drops the least recently used entries beyond maxEntries', () => {
    const cache = createSpecParseCache({ maxEntries: 2 });
    loadSpecs([{ path: 'a.yaml', text: 'a: 1\n' }], { cache });
    loadSpecs([{ path: 'b.yaml', text: 'b: 1\n' }], { cache });
    loadSpecs([{ path: 'a.yaml', text: 'a: 1\n' }], { cache });
    loadSpecs([{ path: 'c.yaml', text: 'c: 1\n' }], { cache });
    expect(cache.size).toBe(2);
    expect(cache.get('a: 1\n')).toBeDefined();
    expect(cache.get('b: 1\n')).toBeUndefined();
  });

  it('drops the least recently used texts beyond maxBytes, counted in UTF-8, and keeps none larger than the bound', () => {
    // Three texts of about 40 KB under a 100 KB bound: two fit. `b` is 40 KB of three-byte
    // characters, 13,000 of them: counted in characters, all three would fit.
    const big = (name: string, filler: string, bytes = 40_000): string =>
      vm(name, `config:\n  description: |\n    ${filler.repeat(bytes / Buffer.byteLength(filler))}\n`);
    const [a, b, c] = [big('a', 'x'), big('b', '€'), big('c', 'y')];
    const cache = createSpecParseCache({ maxBytes: 100_000 });
    for (const [name, text] of [
      ['a', a],
      ['b', b],
      ['c', c],
    ] as const)
      loadSpecs([{ path: `${name}.yaml`, text }], { cache });
    expect(cache.size).toBe(2);
    expect(cache.bytes).toBe(Buffer.byteLength(b) + Buffer.byteLength(c));
    expect(cache.get(a)).toBeUndefined();
    expect(cache.get(b)).toBeDefined();
    // A text over the bound by itself is parsed and loaded, but not kept, and evicts nothing.
    const huge = big('huge', 'z', 120_000);
    expect(loadSpecs([{ path: 'huge.yaml', text: huge }], { cache }).specs.guests.map((g) => g.name)).toEqual(['huge']);
    expect(cache.get(huge)).toBeUndefined();
    expect(cache.size).toBe(2);
  });
});

describe('errors quote the repository safely', () => {
  it('shows control characters and bidirectional overrides in file names and messages as escapes', () => {
    const loaded = loadSpecs([
      { path: 'c.yaml', text: CLUSTER },
      { path: 'evil\u001b[2J.yaml', text: vm('r', 'config:\n  "bogus\u202e0": 1\n  "x\u001b]0;owned\u0007": 2\n') },
    ]);
    const out = loaded.errors.map(formatSpecError);
    expect(out.join('\n')).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u202a-\u202e]/);
    expect(out).toContain('evil\\x1b[2J.yaml:6:3: unknown config key "bogus\\u202e0" for a VM');
    expect(out.some((line) => line.startsWith('evil\\x1b[2J.yaml:7:3: unknown config key "x\\x1b]0;owned\\x07"'))).toBe(true);
  });
});

describe('loads that share a parse cache', () => {
  const clusters = (storages: string): SpecFileInput => ({ path: 'clusters.yaml', text: `${CLUSTER}storages: [${storages}]\n` });
  const guests: SpecFileInput = { path: 'g.yaml', text: vm('web', 'config:\n  scsi0: local-lvm:32\n  memory: 1024\n') };

  it('check each guest again when its Cluster document changed', () => {
    const cache = createSpecParseCache();
    expect(lines([clusters('local-lvm'), guests], { cache })).toEqual([]);
    expect(lines([clusters('ceph'), guests], { cache })).toEqual([
      'g.yaml:6:10: storage "local-lvm" of scsi0 is not in cluster "lab" storages (ceph)',
    ]);
    expect(lines([clusters('local-lvm'), guests], { cache })).toEqual([]);
  });

  it('hand each load its own specs: editing one load’s result changes no other', () => {
    const cache = createSpecParseCache();
    const first = loadSpecs([clusters('local-lvm'), guests], { cache });
    const web = first.specs.guests[0];
    const lab = first.specs.clusters[0];
    if (!web || !lab) throw new Error('nothing loaded');
    web.config.memory = '1';
    web.name = 'changed';
    lab.nodes.push('pve-99');
    const second = loadSpecs([clusters('local-lvm'), guests], { cache });
    expect(second.specs.guests[0]?.config.memory).toBe('1024');
    expect(second.specs.guests[0]?.name).toBe('web');
    expect(second.specs.clusters[0]?.nodes).toEqual(['pve-01']);
  });
});
