import { describe, expect, it } from 'vitest';
import { planScope } from '../plan/plan-specs.js';
import type { GuestSpec } from '../model.js';
import { loadSpecs, type SpecFile } from './load-specs.js';
import { copiesOfOneGuest } from './loaded-copies.js';
import { createSpecParseCache } from './parse-cache.js';

const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 1000, upper: 2000 }\nnodes: [pve-01]\n';
const vm = (name: string, memory: number, vmid?: number): string =>
  `kind: VM\nname: ${name}\ncluster: lab\nnode: pve-01\n${vmid ? `vmid: ${vmid}\n` : ''}config:\n  memory: ${memory}\n`;

const BASE: SpecFile[] = [
  { path: 'clusters.yaml', text: CLUSTER },
  { path: 'a.yaml', text: `${vm('a-1', 1024, 1001)}---\n${vm('a-2', 1024, 1002)}` },
  { path: 'b.yaml', text: vm('b-1', 1024, 1003) },
  { path: 'derived.yaml', text: vm('d-1', 1024) },
];

/** Base and head loaded as `plan --base` loads them: one parse cache for both. */
function loadBoth(head: SpecFile[], shared = true): { base: GuestSpec[]; head: GuestSpec[] } {
  const cache = shared ? createSpecParseCache() : undefined;
  const options = cache ? { cache } : {};
  const base = loadSpecs(BASE, options);
  const loaded = loadSpecs(head, options);
  expect([...base.errors, ...loaded.errors]).toEqual([]);
  return { base: base.specs.guests, head: loaded.specs.guests };
}

const named = (guests: GuestSpec[], name: string): GuestSpec => guests.find((g) => g.name === name) as GuestSpec;
const edited = (path: string, text: string): SpecFile[] => BASE.map((f) => (f.path === path ? { path, text } : f));

describe('copiesOfOneGuest', () => {
  it('holds for a guest of a file whose bytes are the same in base and head, and not for one of a changed file', () => {
    const { base, head } = loadBoth(edited('a.yaml', `${vm('a-1', 2048, 1001)}---\n${vm('a-2', 1024, 1002)}`));
    expect(copiesOfOneGuest(named(base, 'b-1'), named(head, 'b-1'))).toBe(true);
    expect(copiesOfOneGuest(named(base, 'd-1'), named(head, 'd-1'))).toBe(true);
    // a-2 did not change, but its file did: it was loaded again, and is compared field by field.
    expect(copiesOfOneGuest(named(base, 'a-2'), named(head, 'a-2'))).toBe(false);
    expect(copiesOfOneGuest(named(base, 'a-1'), named(head, 'a-1'))).toBe(false);
  });

  it('does not hold for the same document when its derived VMID differs between the loads', () => {
    // A guest pinned to the VMID d-1 derived in the base moves d-1's derived VMID in the head.
    const { base } = loadBoth(BASE);
    const taken = named(base, 'd-1').vmid;
    const { base: again, head } = loadBoth([...BASE, { path: 'c.yaml', text: vm('c-1', 1024, taken) }]);
    expect(named(head, 'd-1').vmid).not.toBe(taken);
    expect(copiesOfOneGuest(named(again, 'd-1'), named(head, 'd-1'))).toBe(false);
  });

  it('does not hold between loads that share no cache, or for a guest and itself loaded once', () => {
    const { base, head } = loadBoth(BASE, false);
    expect(copiesOfOneGuest(named(base, 'b-1'), named(head, 'b-1'))).toBe(false);
  });
});

describe('the scope of a change loaded with one cache', () => {
  it.each<[string, SpecFile[]]>([
    ['no change', BASE],
    ['one guest edited', edited('a.yaml', `${vm('a-1', 2048, 1001)}---\n${vm('a-2', 1024, 1002)}`)],
    ['a file only reformatted', edited('b.yaml', `# moved\n${vm('b-1', 1024, 1003)}`)],
    ['a derived VMID moved', [...BASE, { path: 'c.yaml', text: vm('c-1', 1024, 1000) }]],
  ])('is the scope without one: %s', (_what, head) => {
    const shared = loadBoth(head);
    const apart = loadBoth(head, false);
    const scope = (g: { base: GuestSpec[]; head: GuestSpec[] }) =>
      planScope({ clusters: [], guests: g.head }, { clusters: [], guests: g.base });
    expect(scope(shared)).toEqual(scope(apart));
  });
});
