import { isDeepStrictEqual } from 'node:util';
import { pick, seededRandom } from '../../../test/helpers/seeded-random.js';
import { describe, expect, it } from 'vitest';
import { estateFiles } from '../../../test/bench/estate.js';
import { quickGuestDocument } from './guest-document.js';
import { parseSpecText } from './parse-spec-file.js';
import { ContainerDocument, VmDocument } from './schema.js';

const SCHEMAS = { VM: VmDocument, Container: ContainerDocument } as const;

/** The quick check's answer: undefined (the schema's turn) or exactly what the schema makes of the document. */
function compare(raw: Record<string, unknown>, kind: 'VM' | 'Container'): boolean {
  const quick = quickGuestDocument(raw, kind);
  if (quick === undefined) return false;
  const parsed = SCHEMAS[kind].safeParse(raw);
  expect(parsed.success, JSON.stringify(raw)).toBe(true);
  if (!isDeepStrictEqual(quick, parsed.data)) expect(quick, JSON.stringify(raw)).toEqual(parsed.data);
  return true;
}

const VM = {
  kind: 'VM',
  name: 'web-01',
  cluster: 'lab',
  node: 'pve-01',
  vmid: 100101,
  power: 'running',
  config: { memory: 4096, net0: { model: 'virtio', bridge: 'vmbr0', firewall: true }, tags: ['a', 'b'], onboot: true, cpu: 'host' },
};

describe('the quick guest document check gives the schema’s result or none', () => {
  it('accepts the generated estate’s guests exactly as the schema parses them', () => {
    let guests = 0;
    for (const file of estateFiles(200, { kind: 'grouped', files: 4 })) {
      for (const doc of parseSpecText(file.text).documents) {
        if (doc.kind !== 'mapping' || doc.raw.kind === 'Cluster') continue;
        expect(compare(doc.raw, doc.raw.kind as 'VM' | 'Container')).toBe(true);
        guests += 1;
      }
    }
    expect(guests).toBe(200);
  });

  it('fills in the defaults and copies what a later edit could share', () => {
    const raw = { kind: 'Container', name: 'ct', cluster: 'lab', node: 'n', ignore: ['description'], create: { 'ssh-public-keys': ['k'] } };
    const doc = quickGuestDocument(raw, 'Container');
    expect(doc).toEqual({
      kind: 'Container',
      name: 'ct',
      cluster: 'lab',
      node: 'n',
      power: 'ignore',
      state: 'present',
      adopt: false,
      ignore: ['description'],
      config: {},
      create: { 'ssh-public-keys': ['k'] },
    });
    expect(doc?.ignore).not.toBe(raw.ignore);
    expect((doc?.create as Record<string, unknown> | undefined)?.['ssh-public-keys']).toEqual(['k']);
    expect((doc?.create as Record<string, unknown> | undefined)?.['ssh-public-keys']).not.toBe(raw.create['ssh-public-keys']);
  });

  it.each([
    ['an unknown key', { ...VM, powr: 'running' }],
    ['a document of the other kind', { ...VM, kind: 'Container', checkedAs: 'VM' }],
    ['an empty name', { ...VM, name: '' }],
    ['a missing node', { ...VM, node: undefined }],
    ['a VMID below the range', { ...VM, vmid: 99 }],
    ['a VMID that is not an integer', { ...VM, vmid: 100.5 }],
    ['a VMID beyond 2^53', { ...VM, vmid: 2 ** 53 }],
    ['a power state that does not exist', { ...VM, power: 'on' }],
    ['a null power state', { ...VM, power: null }],
    ['adopt as text', { ...VM, adopt: 'yes' }],
    ['an empty ignore entry', { ...VM, ignore: [''] }],
    ['config as a list', { ...VM, config: ['memory'] }],
    ['an infinite number', { ...VM, config: { memory: Number.POSITIVE_INFINITY } }],
    ['NaN', { ...VM, config: { memory: Number.NaN } }],
    ['a null value', { ...VM, config: { memory: null } }],
    ['a nested mapping two levels deep', { ...VM, config: { net0: { model: { x: 1 } } } }],
    ['a list of lists', { ...VM, config: { tags: [['a']] } }],
    ['a boolean in a list', { ...VM, config: { tags: [true] } }],
    ['a container option on a VM', { ...VM, create: { ostemplate: 'local:vztmpl/x.tar.zst' } }],
    ['an empty pool', { ...VM, create: { pool: '' } }],
    ['a password', { ...VM, kind: 'Container', create: { password: 'x' } }],
  ])('leaves %s to the schema', (_name, { checkedAs, ...raw }: Record<string, unknown>) => {
    const kind = (checkedAs ?? raw.kind) as 'VM' | 'Container';
    expect(quickGuestDocument(raw, kind)).toBeUndefined();
  });

  it('agrees with the schema on generated documents, valid and not', () => {
    const random = seededRandom(7);
    let accepted = 0;
    let valid = 0;
    const runs = 6_000;
    for (let n = 0; n < runs; n++) {
      const kind = random() < 0.5 ? 'VM' : 'Container';
      const raw = generateDocument(random, kind);
      if (SCHEMAS[kind].safeParse(raw).success) valid += 1;
      if (compare(raw, kind)) accepted += 1;
    }
    // Both sides are exercised, and the quick check takes nearly every document the schema accepts.
    expect(accepted).toBeGreaterThan(runs * 0.3);
    expect(accepted).toBeLessThan(runs * 0.9);
    expect(accepted).toBeGreaterThan(valid * 0.9);
  });
});

/** Values of every type YAML gives, and a few it cannot (to be sure nothing odd slips through). */
const ODD: readonly unknown[] = [
  null,
  undefined,
  '',
  'x',
  0,
  -1,
  1.5,
  99,
  100,
  999_999_999,
  1_000_000_000,
  2 ** 53,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  false,
  [],
  ['a'],
  [1, 'b'],
  [true],
  [['x']],
  [null],
  {},
  { a: 1 },
  { a: { b: 1 } },
  { a: [1] },
  { a: null },
  new Date(0),
  Object.create(null),
];

function generateDocument(random: () => number, kind: 'VM' | 'Container'): Record<string, unknown> {
  const doc: Record<string, unknown> = { kind, name: 'g-1', cluster: 'lab', node: 'pve-01' };
  if (random() < 0.5) doc.vmid = pick(random, [100, 100101, 999_999_999]);
  if (random() < 0.5) doc.power = pick(random, ['running', 'stopped', 'ignore']);
  if (random() < 0.3) doc.state = pick(random, ['present', 'absent']);
  if (random() < 0.3) doc.adopt = random() < 0.5;
  if (random() < 0.3) doc.ignore = pick(random, [[], ['description'], ['a', 'b']]);
  if (random() < 0.9) {
    const config: Record<string, unknown> = {};
    const keys = Math.floor(random() * 6);
    for (let k = 0; k < keys; k++) {
      config[pick(random, ['memory', 'cores', 'net0', 'tags', 'onboot', 'description', 'constructor', 'toString'])] = pick(random, [
        4096,
        'virtio,bridge=vmbr0',
        true,
        ['a', 2],
        { model: 'virtio', firewall: false, tag: 30 },
        -0,
        0.25,
      ]);
    }
    doc.config = config;
  }
  if (random() < 0.4) {
    doc.create = pick(random, [
      {},
      { pool: 'p' },
      { storage: 'local-lvm' },
      { ostemplate: 'local:vztmpl/x.tar.zst' },
      { 'ssh-public-keys': 'ssh-ed25519 AAA' },
      { 'ssh-public-keys': ['a', ''] },
      { 'ssh-public-keys': '' },
    ]);
  }
  // Now and then one field gets a value of another type, or an extra key.
  const edits = random() < 0.5 ? 0 : 1 + Math.floor(random() * 2);
  for (let e = 0; e < edits; e++) {
    const field = pick(random, [
      'kind',
      'name',
      'cluster',
      'node',
      'vmid',
      'power',
      'state',
      'adopt',
      'ignore',
      'config',
      'create',
      'extra',
    ]);
    const value = pick(random, ODD);
    if (field === 'config' && random() < 0.7) {
      doc.config = { ...(doc.config as object), [pick(random, ['memory', 'net0', 'tags', '__proto__'])]: value };
    } else if (field === 'create' && random() < 0.7) {
      doc.create = { ...(doc.create as object), [pick(random, ['pool', 'storage', 'ostemplate', 'ssh-public-keys', 'password'])]: value };
    } else {
      doc[field] = value;
    }
  }
  return doc;
}
