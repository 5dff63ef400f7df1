/**
 * The HA kind's pure parts: the guest key's schema, plans made from what observe would have read
 * (defaults, `enabled`, a guest being created or destroyed, a read error), the stored-item check
 * and the descriptions. The reads and writes themselves run against the simulator in
 * test/kinds/ha.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { GuestPlan, GuestSpec, ObjectPlan } from '../../model.js';
import { formatSpecError } from '../../spec/errors.js';
import { loadSpecs } from '../../spec/load-specs.js';
import type { KindPlanInput } from '../kind.js';
import { type HaObserved, haKind } from './ha-kind.js';

const AT = { file: 'lab.yaml', line: 3, col: 1 };

function guest(vmid: number, refs?: Record<string, unknown>, type: 'qemu' | 'lxc' = 'qemu'): GuestSpec {
  return {
    kind: type === 'qemu' ? 'VM' : 'Container',
    type,
    name: `g-${vmid}`,
    cluster: 'lab',
    node: 'pve-01',
    vmid,
    vmidDerived: false,
    power: 'ignore',
    state: 'present',
    adopt: false,
    ignore: [],
    config: {},
    ...(refs ? { refs } : {}),
    source: AT,
  };
}

function guestPlan(spec: GuestSpec, action: GuestPlan['action']): GuestPlan {
  return {
    kind: 'guest',
    key: `lab/${spec.vmid}`,
    cluster: 'lab',
    name: spec.name,
    vmid: spec.vmid,
    vmidDerived: false,
    type: spec.type,
    node: 'pve-01',
    action,
    changes: [],
    operations: [],
    drift: [],
    pending: [],
    errors: [],
    warnings: [],
    severity: 'read-only',
    target: { spec, ownerTag: 'pve-gitops', prune: false },
  };
}

function plan(guests: GuestSpec[], observed: HaObserved, action: GuestPlan['action'] = 'noop'): ObjectPlan[] {
  const input: KindPlanInput<HaObserved> = {
    cluster: 'lab',
    head: [],
    headGuests: guests,
    baseGuests: [],
    guestPlans: guests.map((g) => guestPlan(g, action)),
    full: false,
    observed,
  };
  return haKind.plan(input);
}

const schema = haKind.guestKeys?.[0]?.schema;

describe('the ha: guest key', () => {
  it('takes the five fields, null, and nothing else', () => {
    expect(schema?.safeParse({ state: 'started', max_restart: 0, max_relocate: 2, failback: false, comment: 'x' }).success).toBe(true);
    expect(schema?.safeParse(null).success).toBe(true);
    expect(schema?.safeParse({ group: 'g1' }).success).toBe(false);
    expect(schema?.safeParse({ state: 'enabled' }).success).toBe(false);
    expect(schema?.safeParse({ max_restart: -1 }).success).toBe(false);
    expect(schema?.safeParse('started').success).toBe(false);
  });
});

const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100000, upper: 199999 }\nnodes: [pve-01]\n';

function load(extra: string) {
  return loadSpecs([
    { path: 'clusters.yaml', text: CLUSTER },
    { path: 'g.yaml', text: `kind: VM\nname: db-01\ncluster: lab\nnode: pve-01\n${extra}` },
  ]);
}

describe('ha: in a guest document', () => {
  it('is kept on the guest as written, null included', () => {
    expect(load('ha: { state: started, comment: primary db }\n').specs.guests[0]?.refs).toEqual({
      ha: { state: 'started', comment: 'primary db' },
    });
    expect(load('ha: ~\n').specs.guests[0]?.refs).toEqual({ ha: null });
    expect(load('').specs.guests[0]?.refs?.ha).toBeUndefined();
  });

  it('is suggested for a typo of it, not for any short word', () => {
    expect(load('hq: {}\n').errors.map(formatSpecError)).toEqual(['g.yaml:5:1: unknown key "hq" in VM (did you mean "ha"?)']);
    expect(load('bad: 1\n').errors.map(formatSpecError)).toEqual(['g.yaml:5:1: unknown key "bad" in VM']);
  });
});

describe('the HA plan from what was read', () => {
  it('counts Proxmox defaults and `enabled` as what they mean: nothing to change', () => {
    const items = plan([guest(100, { ha: { state: 'started', failback: true, max_restart: 1 } })], {
      resources: { 'vm:100': { sid: 'vm:100', state: 'enabled' } },
    });
    expect(items.map((i) => i.action)).toEqual(['noop']);
  });

  it('plans the creation of a guest being created without reading it, after the guest', () => {
    const items = plan([guest(100, { ha: {} }, 'lxc')], { error: 'not read' }, 'create');
    expect(items[0]?.operations).toEqual([{ op: 'add-ha', vmid: 100, sid: 'ct:100', set: {} }]);
    expect(items[0]?.after).toEqual(['lab/100']);
  });

  it('plans nothing for a guest being destroyed, or without ha:', () => {
    expect(plan([guest(100, { ha: {} })], { resources: {} }, 'destroy')).toEqual([]);
    expect(plan([guest(100)], { resources: {} })).toEqual([]);
  });

  it('an unreadable listing is an error, never an add', () => {
    const items = plan([guest(100, { ha: {} })], { error: 'cannot read HA resources: the token lacks Sys.Audit on /' });
    expect(items[0]).toMatchObject({
      action: 'error',
      operations: [],
      errors: ['cannot read HA resources: the token lacks Sys.Audit on /'],
    });
  });

  it('a resource of the other type for the VMID is an error', () => {
    const items = plan([guest(100, { ha: {} })], { resources: { 'ct:100': { sid: 'ct:100' } } });
    expect(items[0]?.action).toBe('error');
  });
});

describe('stored HA items', () => {
  const good = (): ObjectPlan =>
    plan([guest(100, { ha: { state: 'stopped' } })], { resources: { 'vm:100': { sid: 'vm:100', state: 'enabled' } } })[0] as ObjectPlan;

  it('pass as planned, with a read `enabled` in what was reviewed', () => {
    expect(() => haKind.checkStored(good())).not.toThrow();
  });

  it('are refused with another guest, a field not managed, or an unknown operation', () => {
    const other = good();
    (other.operations[0] as Record<string, unknown>).sid = 'vm:101';
    expect(() => haKind.checkStored(other)).toThrow('does not name guest 100');
    const group = good();
    (group.operations[0] as Record<string, unknown>).set = { group: 'g1' };
    expect(() => haKind.checkStored(group)).toThrow('not a set of HA fields');
    const deleting = good();
    (deleting.operations[0] as Record<string, unknown>).delete = ['group'];
    expect(() => haKind.checkStored(deleting)).toThrow('a field the HA kind does not manage');
    const unknown = good();
    (unknown.operations[0] as Record<string, unknown>).op = 'migrate-ha';
    expect(() => haKind.checkStored(unknown)).toThrow("unknown ha operation 'migrate-ha'");
  });

  it('describe each operation for people', () => {
    expect(haKind.describe(good().operations[0] as ObjectPlan['operations'][number])).toBe('update HA resource vm:100 (state=stopped)');
    expect(haKind.describe({ op: 'remove-ha', sid: 'ct:7' })).toBe('remove HA resource ct:7 (the guest is no longer HA-managed)');
    expect(haKind.label(good())).toBe('HA resource of g-100 (vm:100)');
  });
});
