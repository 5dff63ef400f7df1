/**
 * The pool kinds' pure parts: the document's schema, the checks across documents, and plans made
 * from what observe would have read. The reads and writes themselves run against the simulator in
 * test/kinds/pool.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { GuestPlan, GuestSpec, ObjectSpec, SpecSet } from '../../model.js';
import type { KindPlanInput } from '../kind.js';
import { newPoolIdProblem, poolIdProblem } from './pool-id.js';
import { PoolDocument, type PoolObserved, poolKind } from './pool-kind.js';
import { type MemberObserved, poolMemberKind } from './pool-member-kind.js';

const AT = { file: 'lab.yaml', line: 3, col: 1 };
const CLUSTER = { name: 'lab', vmids: { lower: 100, upper: 1000 }, ownerTag: 'pve-gitops', nodes: ['pve-01'], prune: false, source: AT };

function pool(id: string, fields: Record<string, unknown> = {}, state: 'present' | 'absent' = 'present'): ObjectSpec {
  return { kind: 'pool', document: 'Pool', cluster: 'lab', id, state, fields, source: AT };
}

function guest(vmid: number, refs?: Record<string, string | null>, extra: Partial<GuestSpec> = {}): GuestSpec {
  return {
    kind: 'VM',
    type: 'qemu',
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
    ...extra,
  };
}

function guestPlan(vmid: number, action: GuestPlan['action']): GuestPlan {
  return {
    kind: 'guest',
    key: `lab/${vmid}`,
    cluster: 'lab',
    name: `g-${vmid}`,
    vmid,
    vmidDerived: false,
    type: 'qemu',
    node: 'pve-01',
    action,
    changes: [],
    operations: [],
    drift: [],
    pending: [],
    errors: [],
    warnings: [],
    severity: 'read-only',
    target: { ownerTag: 'pve-gitops', prune: false },
  };
}

function specs(objects: ObjectSpec[], guests: GuestSpec[] = []): SpecSet {
  return { clusters: [CLUSTER], guests, objects };
}

function input<O>(observed: O, parts: Partial<KindPlanInput<O>> = {}): KindPlanInput<O> {
  return { cluster: 'lab', head: [], headGuests: [], baseGuests: [], guestPlans: [], full: false, observed, ...parts };
}

describe('the pool id', () => {
  it.each([
    ['web', undefined],
    ['team.a/web-1', undefined],
    ['a/b/c/d', "pool name 'a/b/c/d' nested too deeply (max levels = 3)"],
    ['bad pool', "pool name 'bad pool' contains invalid characters"],
  ])('%s', (id, problem) => expect(poolIdProblem(id)).toBe(problem));

  it('must start with a letter to be created', () => {
    expect(newPoolIdProblem('1web')).toBe('pool name must start with a letter');
    expect(poolIdProblem('1web')).toBeUndefined();
    expect(PoolDocument.safeParse({ kind: 'Pool', name: 'web', cluster: 'lab', colour: 'red' }).success).toBe(false);
    expect(PoolDocument.parse({ kind: 'Pool', name: 'web', cluster: 'lab' }).state).toBe('present');
  });

  it('is the id of a loaded document', () => {
    expect(poolKind.load({ kind: 'Pool', name: 'web', cluster: 'lab', comment: 'Web' }, AT)).toEqual({
      kind: 'pool',
      document: 'Pool',
      cluster: 'lab',
      id: 'web',
      state: 'present',
      fields: { comment: 'Web' },
      source: AT,
    });
  });
});

describe('validate', () => {
  it('refuses a pool declared twice on one cluster', () => {
    const errors = poolKind.validate(specs([pool('web'), { ...pool('web'), source: { ...AT, line: 9 } }]));
    expect(errors.map((e) => e.message)).toEqual(["pool 'web' of cluster 'lab' is declared twice (first at lab.yaml:3:1)"]);
  });

  it('refuses to destroy a pool the specs still put guests in', () => {
    const errors = poolKind.validate(specs([pool('web', {}, 'absent')], [guest(100, { pool: 'web' }), guest(101)]));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toContain('g-100 (100) names it as its pool');
  });

  it('refuses a guest whose create.pool and pool: differ, and accepts them equal', () => {
    const differ = guest(100, { pool: 'web' }, { createOptions: { pool: 'db' } });
    const same = guest(101, { pool: 'web' }, { createOptions: { pool: 'web' } });
    const none = guest(102, { pool: null }, { createOptions: { pool: 'web' } });
    expect(poolMemberKind.validate(specs([], [differ, same, none])).map((e) => e.message)).toEqual([
      "g-100: create.pool 'db' and pool 'web' differ; write the pool once, as pool:",
      "g-102: create.pool 'web' and pool none differ; write the pool once, as pool:",
    ]);
  });
});

describe('the pool plan', () => {
  it('is an error naming the privilege when the pool cannot be read', () => {
    const observed: PoolObserved = { pools: { web: { state: 'unreadable', error: 'cannot read pool web: Pool.Audit on /pool/web' } } };
    const [item] = poolKind.plan(input(observed, { head: [pool('web', { comment: 'x' })] }));
    expect(item).toMatchObject({ action: 'error', operations: [], errors: ['cannot read pool web: Pool.Audit on /pool/web'] });
  });

  it('leaves a comment alone when the document has none', () => {
    const observed: PoolObserved = { pools: { web: { state: 'present', comment: 'GUI', vmids: [], storage: [] } } };
    expect(poolKind.plan(input(observed, { head: [pool('web')] }))[0]?.action).toBe('noop');
  });

  it('creates a nested pool after its parent', () => {
    const observed: PoolObserved = { pools: { a: { state: 'absent' }, 'a/b': { state: 'absent' } } };
    const items = poolKind.plan(input(observed, { head: [pool('a/b'), pool('a')] }));
    expect(items.map((i) => [i.key, i.after])).toEqual([
      ['lab/pool/a', undefined],
      ['lab/pool/a/b', ['lab/pool/a']],
    ]);
  });

  it('describes each operation for a reviewer', () => {
    expect(poolKind.describe({ op: 'update-pool', poolid: 'web', comment: 'New', from: 'Old' })).toBe(
      "set the comment of pool 'web' from 'Old' to 'New'",
    );
    expect(poolMemberKind.describe({ op: 'join-pool', vmid: 100, pool: 'web', from: 'db', allowMove: true })).toBe(
      "move guest 100 from pool 'db' to pool 'web' (allow-move)",
    );
  });

  it('refuses a stored item with an unknown operation or a move it did not show', () => {
    const [item] = poolKind.plan(input({ pools: { web: { state: 'absent' } } }, { head: [pool('web')] }));
    if (!item) throw new Error('no item');
    expect(() => poolKind.checkStored(item)).not.toThrow();
    expect(() => poolKind.checkStored({ ...item, operations: [{ op: 'rename-pool', poolid: 'web' }] })).toThrow(/unknown pool operation/);
    const join = {
      ...item,
      kind: 'pool-member',
      payload: { vmid: 100 },
      operations: [{ op: 'join-pool', vmid: 100, pool: 'web', from: null, allowMove: true }],
    };
    expect(() => poolMemberKind.checkStored(join)).toThrow(/allow-move/);
  });
});

describe('the membership plan', () => {
  const listed: MemberObserved = {
    listing: { '100': 'web', '101': null },
    pools: { web: { state: 'present', vmids: [100], storage: [] } },
  };

  it('joins a guest being created after its create, and its pool after the pool item', () => {
    const observed: MemberObserved = { listing: {}, pools: { apps: { state: 'absent' } } };
    const [item] = poolMemberKind.plan(
      input(observed, { headGuests: [guest(300, { pool: 'apps' })], guestPlans: [guestPlan(300, 'create')] }),
    );
    expect(item).toMatchObject({
      action: 'update',
      after: ['lab/300', 'lab/pool/apps'],
      operations: [{ op: 'join-pool', vmid: 300, pool: 'apps', from: null }],
    });
  });

  it('has nothing to do for a new guest whose create.pool already puts it there', () => {
    const observed: MemberObserved = { listing: {}, pools: { web: { state: 'present', vmids: [], storage: [] } } };
    const spec = guest(300, { pool: 'web' }, { createOptions: { pool: 'web' } });
    expect(poolMemberKind.plan(input(observed, { headGuests: [spec], guestPlans: [guestPlan(300, 'create')] }))[0]?.action).toBe('noop');
  });

  it('plans nothing for a guest being destroyed (Proxmox takes it out of its pool)', () => {
    expect(
      poolMemberKind.plan(input(listed, { headGuests: [guest(100, { pool: null })], guestPlans: [guestPlan(100, 'destroy')] })),
    ).toEqual([]);
  });

  it('is an error for a guest the token cannot see, never a join', () => {
    const [item] = poolMemberKind.plan(input(listed, { headGuests: [guest(555, { pool: 'web' })] }));
    expect(item).toMatchObject({ action: 'error', operations: [] });
    expect(item?.errors[0]).toContain('VM.Audit on /vms/555');
  });

  it('is an error naming the privilege when the wanted pool cannot be read', () => {
    const observed: MemberObserved = {
      listing: { '101': null },
      pools: { db: { state: 'unreadable', error: "cannot read pool 'db': the token lacks Pool.Audit on /pool/db" } },
    };
    const [item] = poolMemberKind.plan(input(observed, { headGuests: [guest(101, { pool: 'db' })] }));
    expect(item?.errors).toEqual(["cannot read pool 'db': the token lacks Pool.Audit on /pool/db"]);
  });

  it('in a pull request plans new guests and changed pools only; in full, all', () => {
    const base = [guest(100, { pool: 'web' }), guest(101)];
    const head = [guest(100, { pool: 'web' }), guest(101, { pool: 'web' })];
    const pr = poolMemberKind.plan(input(listed, { headGuests: head, baseGuests: base, base: [] }));
    expect(pr.map((i) => i.key)).toEqual(['lab/pool-member/101']);
    const full = poolMemberKind.plan(input(listed, { headGuests: head, baseGuests: base, base: [], full: true }));
    expect(full.map((i) => [i.key, i.action])).toEqual([
      ['lab/pool-member/100', 'noop'],
      ['lab/pool-member/101', 'update'],
    ]);
  });
});
