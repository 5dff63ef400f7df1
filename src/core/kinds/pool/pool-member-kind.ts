/**
 * The pool-member kind: a guest's membership in a resource pool, written as a top-level `pool:`
 * on VM and Container documents (no document of its own). Absent: membership is not managed;
 * `pool: web`: the guest is a member of web; `pool: null`: it is in no pool. Planned, applied
 * and drift-reported after creation too, in the phase after guests (each item follows its guest's
 * item). Moves between pools need Proxmox's `allow-move`, sent only for a move the plan showed.
 * Proxmox's side: pve-manager `API2/Pool.pm`, `update_pool` (docs/proxmox-behaviour.md).
 *
 * What the token sees is kept apart from what is: `/cluster/resources` drops a guest's `pool`
 * when the token lacks Pool.Audit on it, so a guest listed without one is looked up in the pools
 * the specs name (`GET /pools?poolid=` answers members for any token); a pool that cannot be read
 * makes the item an error that names the privilege, never a join or a leave.
 */
import { z } from 'zod';
import type { GuestPlan, GuestSpec, ObjectOperation, ObjectPlan, SpecSet } from '../../model.js';
import {
  type KindError,
  type KindObserveInput,
  type KindPlanInput,
  type ObjectApplyOutcome,
  type ObjectKind,
  SAMPLE_CLUSTER,
} from '../kind.js';
import { declaresGuestKey, planGuestParts } from '../guest-part.js';
import { guestKeyText } from '../resource-key.js';
import { memberKey, POOL_MEMBER_KIND, poolKey, quoted } from './common.js';
import { type ItemParts, item, storedString, runOperations } from '../object-item.js';
import { PoolId } from './pool-id.js';
import type { PoolPort } from './port.js';
import { type PoolRead, readPools } from './read.js';

/** What observe read for one cluster. */
export interface MemberObserved {
  /** The pool each listed guest shows in `/cluster/resources`, by VMID; null: none shown. Absent: not read. */
  listing?: Record<string, string | null>;
  /** The pools the guests' `pool:` name (head and base), and the pools they show. */
  pools: Record<string, PoolRead>;
  /** Why the listing could not be read. */
  error?: string;
  /** Set when a guest is listed without a pool and the token may not audit every pool: it may be in one the listing hides. */
  hiddenPools?: true;
}

export const MEMBER_OPERATIONS = ['join-pool', 'leave-pool'] as const;

/** The guest key: `pool: web`, or `pool: null` for none. */
const PoolKey = z.union([PoolId, z.null()]);

/** Whether the guest's document manages its pool (`pool:` written, null included). */
const managed = declaresGuestKey('pool');

function wanted(guest: GuestSpec): string | null {
  const pool = guest.refs?.pool;
  return typeof pool === 'string' ? pool : null;
}

function onCluster(guests: readonly GuestSpec[], cluster: string): GuestSpec[] {
  return guests.filter((g) => g.cluster === cluster && managed(g));
}

function validate(specs: SpecSet): KindError[] {
  const errors: KindError[] = [];
  for (const guest of specs.guests) {
    if (!managed(guest)) continue;
    const create = guest.createOptions?.pool;
    if (create !== undefined && create !== wanted(guest)) {
      errors.push({
        at: guest.source,
        message: `${guest.name}: create.pool '${create}' and pool ${quoted(wanted(guest))} differ; write the pool once, as pool:`,
      });
    }
  }
  return errors;
}

async function observe(port: PoolPort, input: KindObserveInput): Promise<MemberObserved> {
  const guests = [...onCluster(input.headGuests, input.cluster), ...onCluster(input.baseGuests, input.cluster)];
  if (guests.length === 0) return { pools: {} };
  let listing: Record<string, string | null>;
  try {
    listing = Object.fromEntries((await port.memberships()).map((m) => [String(m.vmid), m.pool ?? null]));
  } catch (err) {
    return { pools: {}, error: `cannot list the guests' pools: ${err instanceof Error ? err.message : String(err)}` };
  }
  const ids = new Set<string>();
  for (const guest of guests) {
    const want = wanted(guest);
    if (want !== null) ids.add(want);
    const shown = listing[String(guest.vmid)];
    if (shown) ids.add(shown);
  }
  const pools = await readPools(port, ids);
  const observed: MemberObserved = { listing, pools };
  const unexplained = guests.some(
    (g) => listing[String(g.vmid)] === null && !Object.values(pools).some((p) => p.state === 'present' && p.vmids.includes(g.vmid)),
  );
  if (unexplained) {
    try {
      if (!(await port.auditsEveryPool())) observed.hiddenPools = true;
    } catch {
      observed.hiddenPools = true;
    }
  }
  return observed;
}

/** Where the guest is now: its pool, null for none, or why that cannot be told. */
type Current = { pool: string | null } | { error: string };

function currentPool(observed: MemberObserved, vmid: number): Current {
  if (observed.error !== undefined) return { error: observed.error };
  const shown = observed.listing?.[String(vmid)];
  if (shown === undefined) return { error: `the token cannot see guest ${vmid} (VM.Audit on /vms/${vmid})` };
  if (shown !== null) return { pool: shown };
  // Listed without a pool: none, or one the token lacks Pool.Audit on. The pools read say which.
  for (const [poolid, read] of Object.entries(observed.pools)) {
    if (read.state === 'present' && read.vmids.includes(vmid)) return { pool: poolid };
  }
  if (observed.hiddenPools) {
    return {
      error: `cannot tell whether guest ${vmid} is in a pool: the token lacks Pool.Audit on /pool, and the listing hides the pools it may not audit`,
    };
  }
  return { pool: null };
}

function plan(input: KindPlanInput<MemberObserved>): ObjectPlan[] {
  return planGuestParts(
    input,
    { declares: managed, same: (before, head) => wanted(before) === wanted(head) },
    (guest, guestPlan, unchanged) => planMember(guest, guestPlan, input.observed, unchanged),
  );
}

function planMember(guest: GuestSpec, guestPlan: GuestPlan | undefined, observed: MemberObserved, unchanged: boolean): ObjectPlan {
  const cluster = guest.cluster;
  const vmid = guest.vmid;
  const want = wanted(guest);
  const base = {
    source: guest.source,
    payload: { vmid, guest: guest.name },
    after: [guestKeyText(cluster, vmid)],
  };
  const make = (parts: Omit<ItemParts, 'payload'>) =>
    item(POOL_MEMBER_KIND, memberKey(cluster, vmid), cluster, guest.name, { ...base, ...parts });
  const wantRead = want === null ? undefined : observed.pools[want];
  if (wantRead?.state === 'unreadable') return make({ action: 'error', errors: [wantRead.error] });
  // The pool is created by its document first, in the phase before guests.
  const poolAfter = want !== null && wantRead?.state !== 'present' ? [poolKey(cluster, want)] : [];
  const creating = guestPlan?.action === 'create';
  let from: string | null;
  if (creating) from = guest.createOptions?.pool ?? null;
  else {
    const now = currentPool(observed, vmid);
    if ('error' in now) return make({ action: 'error', errors: [now.error] });
    from = now.pool;
    const fromRead = from === null ? undefined : observed.pools[from];
    if (fromRead?.state === 'unreadable') return make({ action: 'error', errors: [fromRead.error] });
  }
  if (from === want) return make({ action: 'noop', ...(poolAfter.length > 0 ? { after: [...base.after, ...poolAfter] } : {}) });
  const change = { key: 'pool', ...(from !== null ? { from } : {}), ...(want !== null ? { to: want } : {}), impact: 'live' as const };
  const drift =
    unchanged && !creating
      ? [{ key: 'pool', ...(want !== null ? { expected: want } : {}), ...(from !== null ? { actual: from } : {}) }]
      : [];
  const operation: ObjectOperation =
    want === null
      ? { op: 'leave-pool', vmid, pool: from as string }
      : { op: 'join-pool', vmid, pool: want, from, ...(from !== null ? { allowMove: true } : {}) };
  const warnings: string[] = [];
  if (guestPlan?.action === 'error')
    warnings.push(`the plan of guest ${vmid} has an error: its membership applies only once the guest's own changes do`);
  // The pool kind's plan says when no Pool document declares it either (a plan error there).
  if (poolAfter.length > 0)
    warnings.push(`pool '${want}' is not on cluster '${cluster}' yet: its Pool document creates it before the guest joins`);
  return make({ action: 'update', changes: [change], drift, operations: [operation], warnings, after: [...base.after, ...poolAfter] });
}

function checkStored(stored: ObjectPlan): void {
  const vmid = stored.payload.vmid;
  if (typeof vmid !== 'number' || !Number.isInteger(vmid)) throw new Error('stored item: payload.vmid is not a VMID');
  for (const op of stored.operations) {
    if (!(MEMBER_OPERATIONS as readonly string[]).includes(op.op)) throw new Error(`stored item: unknown pool-member operation '${op.op}'`);
    if (op.vmid !== vmid) throw new Error(`stored item: ${op.op} names another guest`);
    storedString(op.pool, `${op.op}.pool`);
    if (op.op === 'join-pool') {
      if (op.from !== null) storedString(op.from, 'join-pool.from');
      if (op.allowMove !== undefined && op.allowMove !== (op.from !== null))
        throw new Error('stored item: allow-move without the move the plan showed');
    }
  }
}

function describe(op: ObjectOperation): string | undefined {
  const vmid = String(op.vmid);
  if (op.op === 'join-pool') {
    return op.from === null || op.from === undefined
      ? `add guest ${vmid} to pool '${String(op.pool)}'`
      : `move guest ${vmid} from pool '${String(op.from)}' to pool '${String(op.pool)}' (allow-move)`;
  }
  if (op.op === 'leave-pool') return `remove guest ${vmid} from pool '${String(op.pool)}'`;
  return undefined;
}

/** Where the guest is now, read for an apply: the listing, then the pools it names. */
async function poolNow(port: PoolPort, vmid: number, candidates: readonly string[]): Promise<string | null> {
  const shown = (await port.memberships()).find((m) => m.vmid === vmid)?.pool;
  if (shown !== undefined) return shown;
  for (const poolid of candidates) {
    const pool = await port.readPool(poolid);
    if (pool?.vmids.includes(vmid)) return poolid;
  }
  return null;
}

async function execute(stored: ObjectPlan, port: PoolPort): Promise<ObjectApplyOutcome> {
  const steps: ObjectApplyOutcome['steps'] = [];
  return runOperations(stored.operations, steps, async (op, started) => {
    const vmid = op.vmid as number;
    const pool = op.pool as string;
    if (op.op === 'join-pool') {
      const from = (op.from as string | null | undefined) ?? null;
      const now = await poolNow(port, vmid, from === null ? [pool] : [pool, from]);
      if (now === pool) return { status: 'unchanged', steps };
      if (now !== from) {
        return {
          status: 'conflict',
          steps,
          conflict: [`pool of guest ${vmid}: reviewed ${quoted(from)} → '${pool}', now ${quoted(now)}`],
        };
      }
      await port.updatePool(pool, { vms: [vmid], ...(from !== null ? { allowMove: true } : {}) });
      const after = await port.readPool(pool);
      if (!after?.vmids.includes(vmid))
        return { status: 'failed', steps, error: `guest ${vmid} is not a member of pool '${pool}' after the update` };
      steps.push({
        op: 'join-pool',
        detail: from === null ? `guest ${vmid} → '${pool}'` : `guest ${vmid} '${from}' → '${pool}'`,
        ms: Date.now() - started,
      });
    } else if (op.op === 'leave-pool') {
      const now = await poolNow(port, vmid, [pool]);
      if (now === null) return { status: 'unchanged', steps };
      if (now !== pool) return { status: 'conflict', steps, conflict: [`pool of guest ${vmid}: reviewed '${pool}' → none, now '${now}'`] };
      await port.updatePool(pool, { vms: [vmid], delete: true });
      const after = await port.readPool(pool);
      if (after?.vmids.includes(vmid))
        return { status: 'failed', steps, error: `guest ${vmid} is still a member of pool '${pool}' after the update` };
      steps.push({ op: 'leave-pool', detail: `guest ${vmid} leaves '${pool}'`, ms: Date.now() - started });
    } else {
      return { status: 'failed', steps, error: `unknown pool-member operation '${op.op}'` };
    }
    return undefined;
  });
}

export const poolMemberKind: ObjectKind<PoolPort, MemberObserved> = {
  name: POOL_MEMBER_KIND,
  documents: [],
  guestKeys: [
    {
      key: 'pool',
      schema: PoolKey,
      description: 'the resource pool the guest is a member of (null: none); left out, membership is not managed',
      refersTo: 'pool',
    },
  ],
  phase: 'guest-parts',
  hasNode: false,
  operations: MEMBER_OPERATIONS,
  simRoutes: ['pool'],
  testFactory: () => ({
    yaml: [
      ...SAMPLE_CLUSTER,
      'kind: Pool',
      'name: web',
      'cluster: lab',
      '---',
      'kind: VM',
      'name: web-01',
      'cluster: lab',
      'node: pve-01',
      'pool: web',
      'config: { memory: 2048, cores: 2 }',
      '',
    ].join('\n'),
  }),
  load() {
    throw new Error('the pool-member kind has no document: a guest writes its pool as pool:');
  },
  validate,
  observe,
  plan,
  checkStored,
  label: (stored) => `pool membership of ${stored.name} (${String(stored.payload.vmid)})`,
  // pve-manager `API2/Pool.pm` `update_pool`: Pool.Allocate on the pool, and `check_perm_modify` on
  // the guest (VM.Allocate, which apply needs anyway); reading membership needs Pool.Audit on the pool.
  requiredPrivileges: ({ guests }, mode) =>
    [...new Set(guests.filter(managed).map(wanted))]
      .filter((pool): pool is string => pool !== null)
      .sort()
      .map((pool) =>
        mode === 'read'
          ? { path: `/pool/${pool}`, privilege: 'Pool.Audit', why: "to read guests' pool membership" }
          : { path: `/pool/${pool}`, privilege: 'Pool.Allocate', why: 'to add guests to pools and take them out' },
      ),
  describe,
  execute: (stored, port) => execute(stored, port),
};
