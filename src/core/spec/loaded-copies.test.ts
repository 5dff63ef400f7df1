import { describe, expect, it } from 'vitest';
import { planScope } from '../plan/plan-specs.js';
import type { GuestSpec, SpecSet } from '../model.js';
import { loadSpecs, type SpecFile } from './load-specs.js';
import { sameLoadedCopies } from './loaded-copies.js';
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
function loadBoth(head: SpecFile[], shared = true): { base: SpecSet; head: SpecSet } {
  const cache = shared ? createSpecParseCache() : undefined;
  const options = cache ? { cache } : {};
  const base = loadSpecs(BASE, options);
  const loaded = loadSpecs(head, options);
  expect([...base.errors, ...loaded.errors]).toEqual([]);
  return { base: base.specs, head: loaded.specs };
}

const named = (set: SpecSet, name: string): GuestSpec => set.guests.find((g) => g.name === name) as GuestSpec;
/** Whether the base's and the head's guest `name` are copies of one loaded guest. */
const oneGuest = (sets: { base: SpecSet; head: SpecSet }, name: string): boolean =>
  sameLoadedCopies(sets.base, sets.head)(named(sets.base, name), named(sets.head, name));
const edited = (path: string, text: string): SpecFile[] => BASE.map((f) => (f.path === path ? { path, text } : f));

describe('sameLoadedCopies', () => {
  it('holds for a guest of a file whose bytes are the same in base and head, and not for one of a changed file', () => {
    const sets = loadBoth(edited('a.yaml', `${vm('a-1', 2048, 1001)}---\n${vm('a-2', 1024, 1002)}`));
    expect(oneGuest(sets, 'b-1')).toBe(true);
    expect(oneGuest(sets, 'd-1')).toBe(true);
    // a-2 did not change, but its file did: it was loaded again, and is compared field by field.
    expect(oneGuest(sets, 'a-2')).toBe(false);
    expect(oneGuest(sets, 'a-1')).toBe(false);
    // A set built from the loaded guests is not a loaded set.
    const b1 = named(sets.head, 'b-1');
    expect(sameLoadedCopies(sets.base, { clusters: [], guests: [b1] })(named(sets.base, 'b-1'), b1)).toBe(false);
  });

  it('does not hold for the same document when its derived VMID differs between the loads', () => {
    // A guest pinned to the VMID d-1 derived in the base moves d-1's derived VMID in the head.
    const { base } = loadBoth(BASE);
    const taken = named(base, 'd-1').vmid;
    const sets = loadBoth([...BASE, { path: 'c.yaml', text: vm('c-1', 1024, taken) }]);
    expect(named(sets.head, 'd-1').vmid).not.toBe(taken);
    expect(oneGuest(sets, 'd-1')).toBe(false);
  });

  it('does not hold between loads that share no cache', () => {
    expect(oneGuest(loadBoth(BASE, false), 'b-1')).toBe(false);
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
    const scope = (sets: { base: SpecSet; head: SpecSet }) => planScope(sets.head, sets.base);
    expect(scope(shared)).toEqual(scope(apart));
  });
});
