/**
 * The pool kinds against the simulator over HTTP: the adapter's reads and writes, and each kind's
 * observe → plan → execute as the pipeline runs them, with real tokens. What a cluster answers is
 * the simulator's (docs/proxmox-behaviour.md, "Resource pools"); nothing of our own is mocked.
 */
import { describe, expect, it } from 'vitest';
import type { KindObserveInput, KindPlanInput } from '../../src/core/kinds/kind.js';
import { type PoolObserved, poolKind } from '../../src/core/kinds/pool/pool-kind.js';
import { type MemberObserved, poolMemberKind } from '../../src/core/kinds/pool/pool-member-kind.js';
import type { GuestSpec, ObjectPlan, ObjectSpec } from '../../src/core/model.js';
import { PortError } from '../../src/core/port-errors.js';
import { PoolAdapter } from '../../src/pve/kinds/pool-adapter.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { makeGuestSpec, makeSpecGuestPlan } from '../helpers/factories.js';
import { useKindSimulator } from './kind-simulator.js';
import { WEB_CONFIG } from '../sim/helpers.js';

const SOURCE = { file: 'specs/lab.yaml', line: 1, col: 1 };
const LIMITED = 'ops@pve!limited=s3cret';

let sim: RunningSimulator;
let adapter: (token: string, readOnly?: boolean) => PoolAdapter;
let writer: PoolAdapter;
let reader: PoolAdapter;

useKindSimulator(
  {
    storages: ['local-lvm'],
    pools: [
      { poolid: 'web', comment: 'Web servers', vmids: [100] },
      { poolid: 'db', vmids: [101] },
      { poolid: 'empty', comment: 'nothing here' },
    ],
    tokens: [{ id: 'ops@pve!limited', secret: 's3cret', role: 'admin', vmids: [100, 101, 102], guestsOnly: true }],
    guests: [
      { vmid: 100, type: 'qemu', node: 'pve-01', config: WEB_CONFIG },
      { vmid: 101, type: 'qemu', node: 'pve-01', config: 'name: db-01\n' },
      { vmid: 102, type: 'qemu', node: 'pve-01', config: 'name: app-01\n' },
    ],
  },
  (client) => new PoolAdapter(client),
  (kit) => {
    ({ sim, writer, reader, adapter } = kit);
  },
);

function pool(id: string, fields: Record<string, unknown> = {}, state: 'present' | 'absent' = 'present'): ObjectSpec {
  return { kind: 'pool', document: 'Pool', cluster: 'lab', id, state, fields, source: SOURCE };
}

function guest(vmid: number, name: string, refs?: Record<string, string | null>): GuestSpec {
  return makeGuestSpec({ vmid, name, ...(refs ? { refs } : {}), source: SOURCE });
}

interface Scope {
  head?: ObjectSpec[];
  base?: ObjectSpec[];
  headGuests?: GuestSpec[];
  baseGuests?: GuestSpec[];
  full?: boolean;
  hasBase?: boolean;
}

function observeInput(scope: Scope): KindObserveInput {
  return {
    cluster: 'lab',
    head: scope.head ?? [],
    base: scope.base ?? [],
    headGuests: scope.headGuests ?? [],
    baseGuests: scope.baseGuests ?? [],
  };
}

function planInput<O>(scope: Scope, observed: O): KindPlanInput<O> {
  const headGuests = scope.headGuests ?? [];
  return {
    cluster: 'lab',
    head: scope.head ?? [],
    ...(scope.hasBase || scope.base ? { base: scope.base ?? [] } : {}),
    headGuests,
    baseGuests: scope.baseGuests ?? [],
    guestPlans: headGuests.map((g) => makeSpecGuestPlan(g)),
    full: scope.full ?? false,
    observed,
  };
}

async function planPools(scope: Scope, port = reader): Promise<ObjectPlan[]> {
  const observed: PoolObserved = await poolKind.observe(port, observeInput(scope));
  return poolKind.plan(planInput(scope, observed));
}

async function planMembers(scope: Scope, port = reader): Promise<ObjectPlan[]> {
  const observed: MemberObserved = await poolMemberKind.observe(port, observeInput(scope));
  return poolMemberKind.plan(planInput(scope, observed));
}

function only(items: ObjectPlan[]): ObjectPlan {
  expect(items).toHaveLength(1);
  return items[0] as ObjectPlan;
}

describe('the pool adapter over HTTP', () => {
  it('lists the pools a token may audit, and reads any pool with its members', async () => {
    expect(await reader.listPools()).toEqual([
      { poolid: 'db' },
      { poolid: 'empty', comment: 'nothing here' },
      { poolid: 'web', comment: 'Web servers' },
    ]);
    const limited = adapter(LIMITED, true);
    expect(await limited.listPools()).toEqual([]);
    expect(await limited.readPool('web')).toEqual({ poolid: 'web', comment: 'Web servers', vmids: [100], storage: [] });
    expect(await reader.readPool('nope')).toBeUndefined();
  });

  it('sees a guest pool in the listing only with Pool.Audit on it', async () => {
    expect(await reader.memberships()).toEqual([{ vmid: 100, pool: 'web' }, { vmid: 101, pool: 'db' }, { vmid: 102 }]);
    expect(await adapter(LIMITED, true).memberships()).toEqual([{ vmid: 100 }, { vmid: 101 }, { vmid: 102 }]);
  });

  it('refuses a move without allow-move, in Proxmox words, and writes nothing', async () => {
    const err = await writer.updatePool('web', { vms: [101] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PortError);
    expect((err as Error).message).toBe("update pools failed: VM 101 belongs already to pool 'db' and 'allow-move' is not set");
    expect(sim.sim.poolOf(101)).toBe('db');
    await writer.updatePool('web', { vms: [101], allowMove: true });
    expect(sim.sim.poolOf(101)).toBe('web');
    expect((await reader.readPool('db'))?.vmids).toEqual([]);
  });

  it('refuses to destroy a pool with members, and destroys an empty one', async () => {
    const err = await writer.deletePool('web').catch((e: unknown) => e);
    expect((err as Error).message).toBe("delete pool failed: pool 'web' is not empty (contains VM 100)");
    await writer.deletePool('empty');
    expect(await reader.readPool('empty')).toBeUndefined();
  });

  it('refuses writes to a token without Pool.Allocate', async () => {
    const err = await adapter(LIMITED)
      .createPool('mine')
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe('Permission check failed (/pool/mine, Pool.Allocate)');
  });
});

describe('the pool kind: plan and apply', () => {
  it('creates a pool with its comment, and a re-plan has nothing to do', async () => {
    const head = [pool('apps', { comment: 'Applications' })];
    const created = only(await planPools({ head }));
    expect(created).toMatchObject({
      key: 'lab/pool/apps',
      action: 'create',
      changes: [{ key: 'comment', to: 'Applications' }],
      operations: [{ op: 'create-pool', poolid: 'apps', comment: 'Applications' }],
    });
    expect(await poolKind.execute(created, writer, {})).toMatchObject({ status: 'applied', steps: [{ op: 'create-pool' }] });
    expect(await reader.readPool('apps')).toEqual({ poolid: 'apps', comment: 'Applications', vmids: [], storage: [] });
    expect(only(await planPools({ head })).action).toBe('noop');
  });

  it('changes a comment, and finds a comment changed since the review a conflict', async () => {
    const head = [pool('web', { comment: 'Frontends' })];
    const update = only(await planPools({ head }));
    expect(update).toMatchObject({ action: 'update', changes: [{ key: 'comment', from: 'Web servers', to: 'Frontends' }] });
    await writer.updatePool('web', { comment: 'someone else' });
    const writesBefore = sim.sim.stats().writes.total;
    expect(await poolKind.execute(update, writer, {})).toMatchObject({ status: 'conflict' });
    expect(sim.sim.stats().writes.total).toBe(writesBefore);
    const again = only(await planPools({ head }));
    expect(await poolKind.execute(again, writer, {})).toMatchObject({ status: 'applied' });
    expect((await reader.readPool('web'))?.comment).toBe('Frontends');
  });

  it('destroys an empty pool whose document says state: absent', async () => {
    const item = only(await planPools({ head: [pool('empty', {}, 'absent')] }));
    expect(item).toMatchObject({ action: 'destroy', operations: [{ op: 'destroy-pool', poolid: 'empty' }] });
    expect(await poolKind.execute(item, writer, {})).toMatchObject({ status: 'applied' });
    expect(await reader.readPool('empty')).toBeUndefined();
    expect(only(await planPools({ head: [pool('empty', {}, 'absent')] })).action).toBe('noop');
  });

  it('does not plan to destroy a pool with members: the error names them', async () => {
    const item = only(await planPools({ head: [pool('web', {}, 'absent')] }));
    expect(item.action).toBe('error');
    expect(item.errors[0]).toContain('contains VM 100');
    expect(item.operations).toEqual([]);
  });

  it('never destroys a pool whose document was removed: a warning says it stays', async () => {
    const item = only(await planPools({ head: [], base: [pool('web', { comment: 'Web servers' })] }));
    expect(item).toMatchObject({ action: 'noop', operations: [] });
    expect(item.warnings[0]).toContain('leaves the pool on the cluster');
  });

  it('reports a comment changed on the cluster as drift when the spec did not change', async () => {
    await writer.updatePool('web', { comment: 'edited in the GUI' });
    const spec = [pool('web', { comment: 'Web servers' })];
    expect(await planPools({ head: spec, base: spec })).toEqual([]);
    const item = only(await planPools({ head: spec, base: spec, full: true }));
    expect(item.drift).toEqual([{ key: 'comment', expected: 'Web servers', actual: 'edited in the GUI' }]);
  });

  it('makes a guest pool that is neither declared nor on the cluster a plan error', async () => {
    const item = only(await planPools({ headGuests: [guest(102, 'app-01', { pool: 'ghost' })] }));
    expect(item).toMatchObject({ key: 'lab/pool/ghost', action: 'error' });
    expect(item.errors[0]).toContain("is neither a Pool document nor on cluster 'lab'");
  });
});

describe('the pool-member kind: plan and apply', () => {
  it('reads nothing when no guest of the cluster says pool:', async () => {
    const before = sim.sim.stats().requests.total;
    expect(await planMembers({ headGuests: [guest(100, 'web-01')] })).toEqual([]);
    expect(sim.sim.stats().requests.total).toBe(before);
  });

  it('joins a guest to a pool after its guest, and a re-plan has nothing to do', async () => {
    const headGuests = [guest(102, 'app-01', { pool: 'web' })];
    const join = only(await planMembers({ headGuests }));
    expect(join).toMatchObject({
      key: 'lab/pool-member/102',
      action: 'update',
      after: ['lab/102'],
      changes: [{ key: 'pool', to: 'web' }],
      operations: [{ op: 'join-pool', vmid: 102, pool: 'web', from: null }],
    });
    expect(await poolMemberKind.execute(join, writer, {})).toMatchObject({ status: 'applied' });
    expect(sim.sim.poolOf(102)).toBe('web');
    expect(only(await planMembers({ headGuests })).action).toBe('noop');
  });

  it('moves a guest with allow-move, only as the plan showed it', async () => {
    const move = only(await planMembers({ headGuests: [guest(101, 'db-01', { pool: 'web' })] }));
    expect(move).toMatchObject({
      changes: [{ key: 'pool', from: 'db', to: 'web' }],
      operations: [{ op: 'join-pool', from: 'db', allowMove: true }],
    });
    expect(await poolMemberKind.execute(move, writer, {})).toMatchObject({ status: 'applied' });
    expect(sim.sim.poolOf(101)).toBe('web');
  });

  it('finds a guest moved since the review a conflict, and writes nothing', async () => {
    const move = only(await planMembers({ headGuests: [guest(101, 'db-01', { pool: 'web' })] }));
    await writer.updatePool('empty', { vms: [101], allowMove: true });
    const outcome = await poolMemberKind.execute(move, writer, {});
    expect(outcome.status).toBe('conflict');
    expect(outcome.conflict?.[0]).toContain("now 'empty'");
    expect(sim.sim.poolOf(101)).toBe('empty');
  });

  it('takes a guest out of its pool for pool: null', async () => {
    const leave = only(await planMembers({ headGuests: [guest(100, 'web-01', { pool: null })] }));
    expect(leave).toMatchObject({ changes: [{ key: 'pool', from: 'web' }], operations: [{ op: 'leave-pool', vmid: 100, pool: 'web' }] });
    expect(await poolMemberKind.execute(leave, writer, {})).toMatchObject({ status: 'applied' });
    expect(sim.sim.poolOf(100)).toBeUndefined();
  });

  it('tells "cannot see" from "not a member" for a token without Pool.Audit', async () => {
    const limited = adapter(LIMITED, true);
    // The listing hides web from this token; the pool's own read still lists guest 100.
    expect(only(await planMembers({ headGuests: [guest(100, 'web-01', { pool: 'web' })] }, limited)).action).toBe('noop');
    // A guest named in a pool's base document is found there too: no false leave.
    const leave = only(
      await planMembers(
        { headGuests: [guest(100, 'web-01', { pool: null })], baseGuests: [guest(100, 'web-01', { pool: 'web' })] },
        limited,
      ),
    );
    expect(leave.operations).toEqual([{ op: 'leave-pool', vmid: 100, pool: 'web' }]);
    // Guest 101 is in db, which this token cannot audit: no false join, an error naming the privilege.
    const hidden = only(await planMembers({ headGuests: [guest(101, 'db-01', { pool: 'web' })] }, limited));
    expect(hidden).toMatchObject({ action: 'error', operations: [] });
    expect(hidden.errors[0]).toContain('lacks Pool.Audit on /pool');
    // The admin token sees it is a move.
    const move = only(await planMembers({ headGuests: [guest(101, 'db-01', { pool: 'web' })] }));
    expect(move.operations).toEqual([{ op: 'join-pool', vmid: 101, pool: 'web', from: 'db', allowMove: true }]);
  });

  it('reports a guest moved out of its pool on the cluster as drift', async () => {
    await writer.updatePool('web', { vms: [100], delete: true });
    const specs = [guest(100, 'web-01', { pool: 'web' })];
    expect(await planMembers({ headGuests: specs, baseGuests: specs, hasBase: true })).toEqual([]);
    const item = only(await planMembers({ headGuests: specs, baseGuests: specs, hasBase: true, full: true }));
    expect(item.drift).toEqual([{ key: 'pool', expected: 'web' }]);
    expect(item.operations).toEqual([{ op: 'join-pool', vmid: 100, pool: 'web', from: null }]);
  });

  it('plans a membership in a pull request only when the guest pool changed', async () => {
    const base = [guest(100, 'web-01', { pool: 'web' }), guest(102, 'app-01')];
    const head = [guest(100, 'web-01', { pool: 'web' }), guest(102, 'app-01', { pool: 'web' })];
    const items = await planMembers({ headGuests: head, baseGuests: base, hasBase: true });
    expect(items.map((i) => i.key)).toEqual(['lab/pool-member/102']);
  });
});
