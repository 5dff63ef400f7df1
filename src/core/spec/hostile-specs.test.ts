/**
 * Specs written to cost the validator: megabytes of unknown keys, which once took about 6 s per MB
 * in "did you mean" searches. The work is counted (not timed): it must grow with the size of the
 * repository, and the searches must find what a search over every name finds.
 */
import { describe, expect, it } from 'vitest';
import { pick, seededRandom } from '../../../test/helpers/seeded-random.js';
import { isServerManaged, optionNames } from '../config-options.js';
import type { GuestType } from '../guest-flavours.js';
import { editDistance, MAX_SUGGESTIONS_PER_DOCUMENT, suggestKey } from './config-keys.js';
import { formatSpecError, MAX_ERRORS_PER_FILE } from './errors.js';
import { loadSpecs, type SpecFile } from './load-specs.js';
import { boundedEditDistance, suggestionWork } from './nearest-name.js';

const CLUSTER: SpecFile = {
  path: 'cluster.yaml',
  text: 'kind: Cluster\nname: lab\nvmids: { lower: 100000, upper: 199999 }\nnodes: [pve-01]\n',
};

/**
 * About `bytes` of VM documents with `keysPerDocument` unknown config keys each, short and made of
 * option-name letters (the costliest to search: every one is near many names), in `files` files.
 */
function unknownKeys(bytes: number, options: { files: number; keysPerDocument: number; seed?: number }): SpecFile[] {
  const random = seededRandom(options.seed ?? 7);
  const letters = 'acdefhimnoprstu';
  const files: SpecFile[] = [CLUSTER];
  const perFile = bytes / options.files;
  let guest = 0;
  for (let f = 0; f < options.files; f++) {
    const docs: string[] = [];
    let size = 0;
    while (size < perFile) {
      const keys = Array.from({ length: options.keysPerDocument }, (_, k) => {
        const length = 4 + Math.floor(random() * 6);
        return `  ${Array.from({ length }, () => pick(random, [...letters])).join('')}${k}: 1`;
      });
      const doc = `kind: VM\nname: vm-${guest++}\ncluster: lab\nnode: pve-01\nconfig:\n${keys.join('\n')}\n`;
      docs.push(doc);
      size += doc.length + 4;
    }
    files.push({ path: `g-${f}.yaml`, text: docs.join('---\n') });
  }
  return files;
}

/** Work units of the "did you mean" searches of one load. */
function workOf(files: SpecFile[]): { work: number; errors: string[] } {
  const before = suggestionWork();
  const errors = loadSpecs(files).errors.map(formatSpecError);
  return { work: suggestionWork() - before, errors };
}

describe('validating megabytes of unknown keys', () => {
  it('does "did you mean" work only for the errors a file shows: three times the bytes of small documents, no more work', () => {
    const small = workOf(unknownKeys(300_000, { files: 12, keysPerDocument: 20 }));
    const large = workOf(unknownKeys(900_000, { files: 12, keysPerDocument: 20 }));
    expect(small.work).toBeGreaterThan(0);
    // Each file shows its first 100 errors, five documents' worth; the documents after them are
    // only counted. Searching them too made the work three times as large, and 3 MB took 2.8 s.
    expect(large.work / small.work).toBeLessThan(1.2);
    expect(large.work).toBeLessThan(12 * MAX_ERRORS_PER_FILE * 200);
    expect(large.errors.filter((line) => /more errors in this file are not shown$/.test(line))).toHaveLength(12);
  });

  it('still suggests for every error a file shows, and counts the ones it does not', () => {
    // Eight documents of 20 unknown keys, each with a typo of memory: the first five documents are
    // the file's 100 shown errors, the other three its "60 more".
    const docs = Array.from({ length: 8 }, (_, d) => {
      const keys = Array.from({ length: 19 }, (_, k) => `  zzqzzq${d}x${k}: 1`);
      return `kind: VM\nname: vm-${d}\ncluster: lab\nnode: pve-01\nconfig:\n  memroy: 1\n${keys.join('\n')}\n`;
    });
    const { errors } = workOf([CLUSTER, { path: 'g.yaml', text: docs.join('---\n') }]);
    expect(errors.filter((line) => line.includes('"memroy" for a VM (did you mean "memory"?)'))).toHaveLength(5);
    expect(errors.filter((line) => /^g\.yaml:\d+:/.test(line))).toHaveLength(MAX_ERRORS_PER_FILE);
    expect(errors.at(-1)).toBe('g.yaml: 60 more errors in this file are not shown');
  });

  it('counts a document it does not show as the errors it would have built: 100 and a line for the rest', () => {
    const doc = (d: number): string =>
      `kind: VM\nname: vm-${d}\ncluster: lab\nnode: pve-01\nconfig:\n${Array.from({ length: 150 }, (_, k) => `  zzqzzq${d}x${k}: 1`).join('\n')}\n`;
    const { errors } = workOf([CLUSTER, { path: 'g.yaml', text: [doc(0), doc(1), doc(2)].join('---\n') }]);
    // Each document: 100 errors and "50 more errors in this document are not shown"; the file shows the first 100.
    expect(errors.at(-1)).toBe('g.yaml: 203 more errors in this file are not shown');
  });

  it('searches for at most a few keys of one document, however many it has', () => {
    const { work, errors } = workOf(unknownKeys(1_000_000, { files: 1, keysPerDocument: 70_000 }));
    // One document of about 70,000 keys: ten searches of at most (1 + 10 + 45) lookups and their checks.
    expect(work).toBeLessThan(MAX_SUGGESTIONS_PER_DOCUMENT * 2_000);
    expect(errors.filter((line) => line.includes('did you mean')).length).toBeLessThanOrEqual(MAX_SUGGESTIONS_PER_DOCUMENT);
  });

  it('reports at most 100 errors of a file and says how many more there were', () => {
    const { errors } = workOf(unknownKeys(300_000, { files: 1, keysPerDocument: 20 }));
    const ofFile = errors.filter((line) => line.startsWith('g-0.yaml'));
    expect(ofFile).toHaveLength(MAX_ERRORS_PER_FILE + 1);
    expect(ofFile.at(-1)).toMatch(/^g-0\.yaml: \d+ more errors in this file are not shown$/);
    const shown = Number(/(\d+) more/.exec(ofFile.at(-1) ?? '')?.[1]);
    expect(shown).toBeGreaterThan(10_000);
  });
});

describe('keys named like the properties of every object', () => {
  it('are unknown config keys, not Object.prototype’s functions', () => {
    const files: SpecFile[] = [
      CLUSTER,
      {
        path: 'v.yaml',
        text: 'kind: VM\nname: v\ncluster: lab\nnode: pve-01\nconfig:\n  constructor: 1\n  toString: 2\n  hasOwnProperty: 3\n',
      },
    ];
    expect(loadSpecs(files).errors.map(formatSpecError)).toEqual([
      'v.yaml:6:3: unknown config key "constructor" for a VM',
      'v.yaml:7:3: unknown config key "toString" for a VM',
      'v.yaml:8:3: unknown config key "hasOwnProperty" for a VM',
    ]);
  });
});

describe('the indexed "did you mean"', () => {
  /** What the search over every name found (the code before the index), as the reference. */
  function everyName(type: GuestType, key: string): string | undefined {
    const indexed = /^([a-z][a-z_-]*?)(0|[1-9][0-9]*)$/.exec(key);
    const names = optionNames(type).filter(
      (name) =>
        !['delete', 'revert', 'skiplock', 'force', 'background_delay', 'import-working-storage', 'vmid', 'node'].includes(name) &&
        !isServerManaged(name),
    );
    let best: string | undefined;
    let bestDistance = 3;
    for (const name of names) {
      let distance: number;
      let suggestion: string;
      if (name.endsWith('[n]')) {
        if (!indexed) continue;
        distance = editDistance(indexed[1] ?? '', name.slice(0, -3));
        suggestion = `${name.slice(0, -3)}${indexed[2] ?? ''}`;
      } else {
        distance = editDistance(key, name);
        suggestion = name;
      }
      if (distance > 0 && distance < bestDistance) {
        bestDistance = distance;
        best = suggestion;
      }
    }
    return best;
  }

  it.each(['qemu', 'lxc'] as const)('suggests what a search over every %s option suggests, for typos and noise', (type) => {
    const random = seededRandom(type === 'qemu' ? 11 : 12);
    const letters = 'abcdefghijklmnopqrstuvwxyz0123456789-_';
    const keys: string[] = [];
    for (const name of optionNames(type)) {
      const base = name.replace('[n]', String(Math.floor(random() * 4)));
      for (let t = 0; t < 6; t++) {
        const chars = [...base];
        const at = Math.floor(random() * chars.length);
        const edit = Math.floor(random() * 4);
        if (edit === 0) chars.splice(at, 1);
        else if (edit === 1) chars.splice(at, 0, pick(random, [...letters]));
        else if (edit === 2) chars[at] = pick(random, [...letters]);
        else if (at + 1 < chars.length) [chars[at], chars[at + 1]] = [chars[at + 1] ?? '', chars[at] ?? ''];
        keys.push(chars.join(''));
      }
    }
    for (let n = 0; n < 300; n++)
      keys.push(Array.from({ length: 2 + Math.floor(random() * 10) }, () => pick(random, [...letters])).join(''));
    const mismatches = keys.map((key) => [key, suggestKey(type, key), everyName(type, key)]).filter(([, got, want]) => got !== want);
    expect(mismatches).toEqual([]);
    expect(keys.filter((key) => suggestKey(type, key) !== undefined).length).toBeGreaterThan(keys.length / 3);
  });

  it('stops a distance at its bound', () => {
    expect(boundedEditDistance('memory', 'memroy', 2)).toBe(1);
    expect(boundedEditDistance('kitten', 'sitting', 2)).toBe(3);
    expect(boundedEditDistance('a'.repeat(1000), 'memory', 2)).toBe(3);
  });
});
