import { describe, expect, it } from 'vitest';
import type { GuestPlan, Plan } from '../model.js';
import { PlanFormatError, PlanVersionError } from './plan-errors.js';
import { parsePlanJson, renderPlanJson } from './render-json.js';

function guest(overrides: Partial<GuestPlan> = {}): GuestPlan {
  return {
    kind: 'guest',
    key: 'lab/100101',
    cluster: 'lab',
    name: 'app-01',
    vmid: 100101,
    vmidDerived: false,
    type: 'qemu',
    node: 'pve-01',
    action: 'update',
    digest: 'abc',
    changes: [{ key: 'memory', from: '2048', to: '4096', impact: 'live' }],
    operations: [
      { op: 'config', set: { memory: '4096', cores: '2' }, delete: ['description'], from: { memory: '2048', description: 'x' } },
      { op: 'resize', disk: 'scsi0', size: '64G', from: '32G' },
      { op: 'start' },
    ],
    drift: [{ key: 'cores', expected: '2', actual: '4' }],
    pending: [
      { key: 'net0', current: 'virtio,bridge=vmbr0', pending: 'virtio,bridge=vmbr1' },
      { key: 'agent', delete: true },
    ],
    errors: [],
    warnings: ['note'],
    impact: 'live',
    severity: 'configuration',
    source: { file: 'guests/app.yaml', line: 3, col: 1 },
    target: {
      ownerTag: 'pve-gitops',
      prune: false,
      spec: {
        kind: 'VM',
        type: 'qemu',
        name: 'app-01',
        cluster: 'lab',
        node: 'pve-01',
        vmid: 100101,
        vmidDerived: false,
        power: 'running',
        state: 'present',
        adopt: false,
        ignore: ['description'],
        config: { memory: '4096', cores: '2' },
        source: { file: 'guests/app.yaml', line: 1, col: 1 },
        keySources: { memory: { file: 'guests/app.yaml', line: 8, col: 3 } },
      },
    },
    ...overrides,
  };
}

function plan(overrides: Partial<Plan> = {}): Plan {
  return {
    version: 2,
    createdAt: '2025-01-01T00:00:00.000Z',
    ref: 'abc1234',
    clusters: ['lab'],
    guests: [
      guest(),
      guest({
        name: 'app-02',
        vmid: 100102,
        key: 'lab/100102',
        action: 'create',
        digest: undefined,
        operations: [{ op: 'create', node: 'pve-01', params: { memory: '1024' } }],
      }),
    ],
    objects: [],
    errors: [{ cluster: 'lab', message: 'boom' }, { message: 'global' }],
    warnings: [{ message: 'careful' }],
    summary: { create: 1, update: 1, destroy: 0, noop: 0, orphan: 0, error: 2, drifted: 1, pending: 1 },
    ...overrides,
  };
}

/** Rebuilds every object with its keys inserted in reverse order: same data, other construction. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reverseKeys(v)]),
    );
  }
  return value;
}

describe('renderPlanJson', () => {
  it('round-trips through parsePlanJson', () => {
    const original = plan();
    const text = renderPlanJson(original);
    expect(parsePlanJson(text)).toEqual(original);
    expect(renderPlanJson(parsePlanJson(text))).toBe(text);
  });

  it('writes the same text whatever order the keys were inserted in', () => {
    const original = plan();
    expect(renderPlanJson(reverseKeys(original) as Plan)).toBe(renderPlanJson(original));
  });

  it('uses 2-space indent, starts with the version and ends with a newline', () => {
    const text = renderPlanJson(plan());
    expect(text.startsWith('{\n  "version": 2,\n  "createdAt"')).toBe(true);
    expect(text.endsWith('}\n')).toBe(true);
    expect(text.endsWith('\n\n')).toBe(false);
  });

  it('sorts record keys (config values, create params)', () => {
    const text = renderPlanJson(plan());
    expect(text.indexOf('"cores": "2"')).toBeLessThan(text.indexOf('"memory": "4096"'));
  });

  it('refuses to store a plan that could not be read back', () => {
    const bad = plan({ guests: [guest({ vmid: -1 })] });
    expect(() => renderPlanJson(bad)).toThrow(PlanFormatError);
  });
});

describe('parsePlanJson', () => {
  it.each([
    [3, 'plan version 3 is not supported by this pve-gitops (expects 2)'],
    [0, 'plan version 0 is not supported by this pve-gitops (expects 2)'],
    ['2', 'plan version "2" is not supported by this pve-gitops (expects 2)'],
    [null, 'plan version null is not supported by this pve-gitops (expects 2)'],
  ])('rejects version %j', (version, message) => {
    const text = JSON.stringify({ ...plan(), version });
    expect(() => parsePlanJson(text)).toThrow(PlanVersionError);
    expect(() => parsePlanJson(text)).toThrow(message);
  });

  it('checks the version before anything else', () => {
    // A future format may look nothing like this one; the version error is the useful one.
    expect(() => parsePlanJson(JSON.stringify({ version: 3, guests: 'whatever' }))).toThrow(PlanVersionError);
  });

  const valid = (): Record<string, unknown> => JSON.parse(renderPlanJson(plan())) as Record<string, unknown>;
  const withGuest = (patch: Record<string, unknown>): string => {
    const data = valid();
    const guests = data.guests as Record<string, unknown>[];
    guests[1] = { ...guests[1], ...patch };
    return JSON.stringify(data);
  };

  it.each([
    ['vmid of the wrong type', withGuest({ vmid: '100102' }), 'guests[1].vmid'],
    ['unknown action', withGuest({ action: 'rebuild' }), 'guests[1].action'],
    ['bad impact deep inside', withGuest({ changes: [{ key: 'memory', to: '1', impact: 'soon' }] }), 'guests[1].changes[0].impact'],
    ['unknown operation', withGuest({ operations: [{ op: 'reboot' }] }), 'guests[1].operations[0].op'],
    ['missing field', withGuest({ severity: undefined }), 'guests[1].severity'],
    ['unknown field', withGuest({ surprise: true }), 'guests[1]'],
    [
      'config value not a string',
      withGuest({ operations: [{ op: 'config', set: { memory: 1 }, delete: [], from: {} }] }),
      'guests[1].operations[0].set.memory',
    ],
    ['missing version', JSON.stringify({ ...valid(), version: undefined }), 'version'],
  ])('%s is reported with its path', (_name, text, path) => {
    let caught: unknown;
    try {
      parsePlanJson(text);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(PlanFormatError);
    expect((caught as PlanFormatError).path).toBe(path);
    expect((caught as PlanFormatError).message).toContain(path);
  });

  it.each([
    ['not JSON', '{"version": 1,', 'plan is not valid JSON'],
    ['an array', '[]', 'expected a JSON object'],
    ['a string', '"plan"', 'expected a JSON object'],
  ])('rejects %s', (_name, text, message) => {
    expect(() => parsePlanJson(text)).toThrow(PlanFormatError);
    expect(() => parsePlanJson(text)).toThrow(message);
  });

  it('names an unknown field in the message', () => {
    expect(() => parsePlanJson(withGuest({ surprise: true }))).toThrow(/surprise/);
  });
});
