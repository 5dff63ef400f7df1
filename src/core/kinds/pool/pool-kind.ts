/**
 * The pool kind: a resource pool declared by a `kind: Pool` document (docs/adding-a-kind.md, the
 * worked example). Planned before guests (phase `referenced`, a guest may join it), created,
 * its comment kept, destroyed only when its document says `state: absent` and it is empty —
 * Proxmox refuses otherwise — and never implicitly: a removed document leaves the pool alone.
 * Proxmox's side: pve-manager `API2/Pool.pm` (docs/proxmox-behaviour.md, "Resource pools").
 */
import { z } from 'zod';
import type { GuestSpec, ObjectOperation, ObjectPlan, ObjectSpec, SpecSet } from '../../model.js';
import {
  type KindError,
  type KindObserveInput,
  type KindPlanInput,
  type ObjectApplyOutcome,
  type ObjectKind,
  SAMPLE_CLUSTER,
} from '../kind.js';
import { POOL_KIND, poolKey, quoted } from './common.js';
import { item, storedString, runOperations } from '../object-item.js';
import { NewPoolId } from './pool-id.js';
import type { PoolPort } from './port.js';
import { parentPools, type PoolRead, readPools } from './read.js';

/** `kind: Pool` as written. */
export const PoolDocument = z.strictObject({
  kind: z.literal('Pool'),
  /** The pool's id (`pve-poolid`). */
  name: NewPoolId,
  cluster: z.string().min(1),
  /** The pool's comment; left out, the comment is not managed. */
  comment: z.string().min(1).optional(),
  /** `absent` destroys the pool (Proxmox refuses while it has members). */
  state: z.enum(['present', 'absent']).default('present'),
});

/** What observe read: every pool the cluster's Pool documents name (head and base). */
export interface PoolObserved {
  pools: Record<string, PoolRead>;
}

export const POOL_OPERATIONS = ['create-pool', 'update-pool', 'destroy-pool'] as const;

function comment(spec: ObjectSpec): string | undefined {
  const value = spec.fields.comment;
  return typeof value === 'string' ? value : undefined;
}

/** Whether two documents of one pool say the same. */
function sameSpec(a: ObjectSpec, b: ObjectSpec): boolean {
  return a.state === b.state && comment(a) === comment(b);
}

function onCluster(specs: readonly ObjectSpec[] | undefined, cluster: string): ObjectSpec[] {
  return (specs ?? []).filter((s) => s.kind === POOL_KIND && s.cluster === cluster);
}

/** The pools the cluster's guests name in `pool:`, with the guests naming each. */
function guestPools(guests: readonly GuestSpec[], cluster: string): Map<string, GuestSpec[]> {
  const pools = new Map<string, GuestSpec[]>();
  for (const guest of guests) {
    const pool = guest.refs?.pool;
    if (guest.cluster !== cluster || guest.state !== 'present' || typeof pool !== 'string') continue;
    pools.set(pool, [...(pools.get(pool) ?? []), guest]);
  }
  return pools;
}

/**
 * Checks across documents beyond the generic ones (`core/spec/validate-objects.ts`: a known
 * cluster, one document per pool): no guest is wanted in a pool the specs destroy.
 */
function validate(specs: SpecSet): KindError[] {
  const errors: KindError[] = [];
  for (const pool of (specs.objects ?? []).filter((o) => o.kind === POOL_KIND)) {
    if (pool.state === 'absent') {
      const members = specs.guests.filter(
        (g) =>
          g.cluster === pool.cluster &&
          g.state === 'present' &&
          ((g.refs?.pool as string | null | undefined) ?? g.createOptions?.pool) === pool.id,
      );
      if (members.length > 0) {
        errors.push({
          at: pool.source,
          message: `pool '${pool.id}' has state: absent, but ${members.map((g) => `${g.name} (${g.vmid})`).join(', ')} ${members.length === 1 ? 'names it as its pool' : 'name it as their pool'}: Proxmox destroys only an empty pool`,
        });
      }
    }
  }
  return errors;
}

async function observe(port: PoolPort, input: KindObserveInput): Promise<PoolObserved> {
  const ids = [...onCluster(input.head, input.cluster), ...onCluster(input.base, input.cluster)].flatMap((s) => [
    s.id,
    ...parentPools(s.id),
  ]);
  ids.push(...guestPools(input.headGuests, input.cluster).keys());
  if (ids.length === 0) return { pools: {} };
  return { pools: await readPools(port, ids) };
}

function plan(input: KindPlanInput<PoolObserved>): ObjectPlan[] {
  const head = onCluster(input.head, input.cluster);
  const base = input.base === undefined ? undefined : onCluster(input.base, input.cluster);
  const headIds = new Set(head.map((s) => s.id));
  const items: ObjectPlan[] = [];
  for (const spec of [...head].sort((a, b) => a.id.localeCompare(b.id))) {
    const before = base?.find((s) => s.id === spec.id);
    const unchanged = before !== undefined && sameSpec(before, spec);
    if (!input.full && base !== undefined && unchanged) continue;
    items.push(planPool(spec, input.observed.pools[spec.id], unchanged, head, input.cluster));
  }
  // A guest's pool must be declared here or exist on the cluster: nothing else would create it.
  for (const [poolid, guests] of guestPools(input.headGuests, input.cluster)) {
    if (headIds.has(poolid) || input.observed.pools[poolid]?.state !== 'absent') continue;
    items.push(
      item(POOL_KIND, poolKey(input.cluster, poolid), input.cluster, poolid, {
        action: 'error',
        errors: [
          `pool '${poolid}', named by ${guests.map((g) => `${g.name} (${g.vmid})`).join(', ')}, is neither a Pool document nor on cluster '${input.cluster}'`,
        ],
        source: (guests[0] as GuestSpec).source,
        payload: { poolid },
      }),
    );
  }
  for (const removed of base ?? []) {
    if (headIds.has(removed.id) || items.some((i) => i.payload.poolid === removed.id)) continue;
    items.push(
      item(POOL_KIND, poolKey(input.cluster, removed.id), input.cluster, removed.id, {
        action: 'noop',
        warnings: [
          `the Pool document of '${removed.id}' was removed: pve-gitops leaves the pool on the cluster as it is (to destroy it, keep the document with state: absent)`,
        ],
        payload: { poolid: removed.id },
      }),
    );
  }
  return items;
}

/** The item of one pool's head document. `unchanged`: the base says the same, so a difference is drift. */
function planPool(spec: ObjectSpec, read: PoolRead | undefined, unchanged: boolean, head: ObjectSpec[], cluster: string): ObjectPlan {
  const key = poolKey(cluster, spec.id);
  const base = { source: spec.source, payload: { poolid: spec.id } };
  const want = comment(spec);
  if (read === undefined)
    return item(POOL_KIND, key, cluster, spec.id, { ...base, action: 'error', errors: [`pool '${spec.id}' was not read`] });
  if (read.state === 'unreadable') return item(POOL_KIND, key, cluster, spec.id, { ...base, action: 'error', errors: [read.error] });
  if (spec.state === 'absent') {
    if (read.state === 'absent') return item(POOL_KIND, key, cluster, spec.id, { ...base, action: 'noop' });
    const members = [...read.vmids.map((v) => `VM ${v}`), ...read.storage.map((s) => `storage '${s}'`)];
    if (members.length > 0) {
      return item(POOL_KIND, key, cluster, spec.id, {
        ...base,
        action: 'error',
        errors: [
          `pool '${spec.id}' is not empty (contains ${members.join(', ')}): Proxmox destroys only an empty pool; move the members out first`,
        ],
      });
    }
    return item(POOL_KIND, key, cluster, spec.id, {
      ...base,
      action: 'destroy',
      changes: read.comment === undefined ? [] : [{ key: 'comment', from: read.comment, impact: 'live' }],
      operations: [{ op: 'destroy-pool', poolid: spec.id }],
      ...(unchanged ? { drift: [{ key: 'pool', expected: undefined, actual: spec.id }] } : {}),
    });
  }
  if (read.state === 'absent') {
    const parents = parentPools(spec.id);
    const missingParent = parents.find((p) => !head.some((s) => s.id === p && s.state === 'present'));
    return item(POOL_KIND, key, cluster, spec.id, {
      ...base,
      action: 'create',
      changes: want === undefined ? [] : [{ key: 'comment', to: want, impact: 'live' }],
      operations: [{ op: 'create-pool', poolid: spec.id, ...(want !== undefined ? { comment: want } : {}) }],
      ...(unchanged ? { drift: [{ key: 'pool', expected: spec.id, actual: undefined }] } : {}),
      ...(missingParent !== undefined
        ? { warnings: [`the parent pool '${missingParent}' has no Pool document: Proxmox creates '${spec.id}' only once it exists`] }
        : {}),
      after: parents.map((p) => poolKey(cluster, p)),
    });
  }
  if (want === undefined || want === read.comment) return item(POOL_KIND, key, cluster, spec.id, { ...base, action: 'noop' });
  return item(POOL_KIND, key, cluster, spec.id, {
    ...base,
    action: 'update',
    changes: [{ key: 'comment', ...(read.comment !== undefined ? { from: read.comment } : {}), to: want, impact: 'live' }],
    operations: [{ op: 'update-pool', poolid: spec.id, comment: want, ...(read.comment !== undefined ? { from: read.comment } : {}) }],
    ...(unchanged ? { drift: [{ key: 'comment', expected: want, actual: read.comment }] } : {}),
  });
}

function checkStored(stored: ObjectPlan): void {
  storedString(stored.payload.poolid, 'payload.poolid');
  for (const op of stored.operations) {
    if (!(POOL_OPERATIONS as readonly string[]).includes(op.op)) throw new Error(`stored item: unknown pool operation '${op.op}'`);
    if (storedString(op.poolid, `${op.op}.poolid`) !== stored.payload.poolid) throw new Error(`stored item: ${op.op} names another pool`);
    if (op.comment !== undefined) storedString(op.comment, `${op.op}.comment`);
    if (op.op === 'update-pool') storedString(op.comment, 'update-pool.comment');
    if (op.from !== undefined) storedString(op.from, `${op.op}.from`);
  }
}

function describe(op: ObjectOperation): string | undefined {
  const poolid = String(op.poolid);
  if (op.op === 'create-pool') return `create pool '${poolid}'${op.comment !== undefined ? ` with comment '${String(op.comment)}'` : ''}`;
  if (op.op === 'update-pool')
    return `set the comment of pool '${poolid}' from ${quoted(op.from as string | undefined)} to '${String(op.comment)}'`;
  if (op.op === 'destroy-pool') return `destroy pool '${poolid}' (it is empty)`;
  return undefined;
}

async function execute(stored: ObjectPlan, port: PoolPort): Promise<ObjectApplyOutcome> {
  const steps: ObjectApplyOutcome['steps'] = [];
  return runOperations(stored.operations, steps, async (op, started) => {
    const poolid = String(op.poolid);
    const now = await port.readPool(poolid);
    if (op.op === 'create-pool') {
      if (now) return { status: 'conflict', steps, conflict: [`pool '${poolid}' was created on the cluster after the review`] };
      await port.createPool(poolid, op.comment as string | undefined);
      const after = await port.readPool(poolid);
      if (!after) return { status: 'failed', steps, error: `pool '${poolid}' is not there after its create` };
      steps.push({ op: 'create-pool', detail: `pool '${poolid}'`, ms: Date.now() - started });
    } else if (op.op === 'update-pool') {
      const want = op.comment as string;
      if (!now) return { status: 'conflict', steps, conflict: [`pool '${poolid}' was removed from the cluster after the review`] };
      if (now.comment === want) return { status: 'unchanged', steps };
      if (now.comment !== op.from) {
        return {
          status: 'conflict',
          steps,
          conflict: [
            `comment of pool '${poolid}': reviewed ${quoted(op.from as string | undefined)} → '${want}', now ${quoted(now.comment)}`,
          ],
        };
      }
      await port.updatePool(poolid, { comment: want });
      const after = await port.readPool(poolid);
      if (after?.comment !== want)
        return { status: 'failed', steps, error: `pool '${poolid}' has comment ${quoted(after?.comment)} after its update` };
      steps.push({ op: 'update-pool', detail: `comment '${want}'`, ms: Date.now() - started });
    } else if (op.op === 'destroy-pool') {
      if (!now) return { status: 'unchanged', steps };
      const members = [...now.vmids.map((v) => `VM ${v}`), ...now.storage.map((s) => `storage '${s}'`)];
      if (members.length > 0)
        return { status: 'conflict', steps, conflict: [`pool '${poolid}' has members since the review: ${members.join(', ')}`] };
      await port.deletePool(poolid);
      if (await port.readPool(poolid)) return { status: 'failed', steps, error: `pool '${poolid}' is still there after its destroy` };
      steps.push({ op: 'destroy-pool', detail: `pool '${poolid}'`, ms: Date.now() - started });
    } else {
      return { status: 'failed', steps, error: `unknown pool operation '${op.op}'` };
    }
    return undefined;
  });
}

export const poolKind: ObjectKind<PoolPort, PoolObserved> = {
  name: POOL_KIND,
  documents: [{ name: 'Pool', schema: PoolDocument }],
  phase: 'referenced',
  hasNode: false,
  operations: POOL_OPERATIONS,
  simRoutes: ['pool'],
  testFactory: () => ({
    yaml: [...SAMPLE_CLUSTER, 'kind: Pool', 'name: web', 'cluster: lab', 'comment: Web servers', ''].join('\n'),
  }),
  load(document, source) {
    const doc = PoolDocument.parse(document);
    return {
      kind: POOL_KIND,
      document: 'Pool',
      cluster: doc.cluster,
      id: doc.name,
      state: doc.state,
      fields: doc.comment !== undefined ? { comment: doc.comment } : {},
      source,
    };
  },
  validate,
  observe,
  plan,
  checkStored,
  label: (stored) => `pool ${stored.name}`,
  // pve-manager `API2/Pool.pm`: Pool.Audit to read a pool, Pool.Allocate on it to create, change or destroy it.
  requiredPrivileges: ({ objects }, mode) =>
    objects.map((pool) =>
      mode === 'read'
        ? { path: `/pool/${pool.id}`, privilege: 'Pool.Audit', why: 'to read pools' }
        : { path: `/pool/${pool.id}`, privilege: 'Pool.Allocate', why: 'to create, change and destroy pools' },
    ),
  describe,
  execute: (stored, port) => execute(stored, port),
};
