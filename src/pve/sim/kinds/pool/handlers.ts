/**
 * The pool kind's handlers (pve-manager `API2/Pool.pm`): the reads `GET /pools` and
 * `GET /pools/{poolid}` (`index`, `read_pool`), the synchronous writes `POST /pools`,
 * `PUT /pools` and `DELETE /pools` with their deprecated `/pools/{poolid}` forms (`create_pool`,
 * `update_pool`, `delete_pool`), and whether a token sees a guest's pool in `/cluster/resources`.
 * What a token sees follows the same privileges as everywhere else (docs/proxmox-behaviour.md).
 */
import { splitList } from '../../../../core/proxmox-params.js';
import { canSeeGuest, hasAnyPrivilege, hasPrivilege } from '../../auth.js';
import { flag, param, type HandlerResult, type RequestContext } from '../../context.js';
import { ApiError, DieError, PermissionError } from '../../errors.js';
import { requirePrivilege } from '../../permissions.js';
import type { SimPool } from '../../simulator.js';
import { contentString } from '../storage/handlers.js';

function poolEntry(pool: SimPool): Record<string, unknown> {
  return { poolid: pool.poolid, ...(pool.comment !== undefined ? { comment: pool.comment } : {}) };
}

/** The members of a pool (`extract_vm_stats` for guests, `extract_storage_stats` for storages). */
function poolMembers(ctx: RequestContext, pool: SimPool, type: string | undefined): Record<string, unknown>[] {
  const members: Record<string, unknown>[] = [];
  for (const vmid of [...pool.vmids].map(String).sort()) {
    const guest = ctx.sim.guests.get(Number(vmid));
    if (!guest || (type !== undefined && type !== guest.type)) continue;
    const s = guest.summary();
    members.push({
      id: `${guest.type}/${guest.vmid}`,
      vmid: guest.vmid,
      node: guest.node,
      type: guest.type,
      status: guest.running ? 'running' : 'stopped',
      name: s.name,
      template: s.template ? 1 : 0,
      uptime: guest.uptime(),
      maxcpu: s.cpus,
      maxmem: s.maxmem,
      maxdisk: s.maxdisk,
    });
  }
  if (type === undefined || type === 'storage') {
    for (const id of [...pool.storage].sort()) {
      const storage = ctx.sim.volumes.storage(id);
      if (!storage) continue;
      const node = ctx.sim.nodes[0] as string;
      members.push({
        id: `storage/${node}/${id}`,
        storage: id,
        node,
        type: 'storage',
        plugintype: storage.type,
        status: 'available',
        shared: storage.shared ? 1 : 0,
        content: contentString(storage),
        maxdisk: storage.total,
        disk: ctx.sim.volumes.used(id),
      });
    }
  }
  return members;
}

/**
 * `GET /pools`: pools the token holds Pool.Audit on; with `poolid`, that pool and its members
 * for anyone (Proxmox checks Pool.Audit there with `noerr` and ignores the answer), an unknown
 * one dies with `pool '<id>' does not exist`.
 */
export function listPools(ctx: RequestContext): HandlerResult {
  const poolid = ctx.params.poolid;
  if (poolid !== undefined) return { data: [readPoolData(ctx, poolid)] };
  const data: Record<string, unknown>[] = [];
  for (const id of [...ctx.sim.pools.keys()].sort()) {
    if (!hasPrivilege(ctx.principal, `/pool/${id}`, 'Pool.Audit')) continue;
    data.push(poolEntry(ctx.sim.pools.get(id) as SimPool));
  }
  return { data };
}

function readPoolData(ctx: RequestContext, poolid: string): Record<string, unknown> {
  const pool = ctx.sim.pools.get(poolid);
  if (!pool) throw new DieError(`pool '${poolid}' does not exist\n`);
  return { members: poolMembers(ctx, pool, ctx.params.type), ...poolEntry(pool) };
}

/** `GET /pools/{poolid}` (deprecated form): Pool.Audit is checked before the handler. */
export function readPool(ctx: RequestContext): HandlerResult {
  return { data: readPoolData(ctx, param(ctx, 'poolid')) };
}

/** Whether the principal sees a guest's `pool` in `/cluster/resources` (Pool.Audit on it). */
export function poolVisible(ctx: RequestContext, vmid: number): string | undefined {
  const pool = ctx.sim.poolOf(vmid);
  if (pool === undefined || !canSeeGuest(ctx.principal, vmid)) return undefined;
  return hasPrivilege(ctx.principal, `/pool/${pool}`, 'Pool.Audit') ? pool : undefined;
}

/**
 * `lock_user_config($code, $errmsg)` (pve-access-control `AccessControl.pm`): the change runs
 * under the cluster-wide `user.cfg` lock and is written once at its end, so a refusal half-way
 * writes nothing; a refusal comes back as a plain 500 `<errmsg>: <why>`, a permission exception
 * inside included (`403 Permission check failed (…)` stringified into the text). Handlers here
 * are synchronous, so the lock is held simply by not yielding.
 */
function underUserConfigLock<T>(errmsg: string, code: () => T): T {
  try {
    return code();
  } catch (err) {
    if (err instanceof PermissionError) throw new DieError(`${errmsg}: ${err.status} ${err.message}`);
    if (err instanceof ApiError) throw new DieError(`${errmsg}: ${err.message}`);
    throw err;
  }
}

/** `check_perm_modify` (pve-access-control `RPCEnvironment.pm`): Permissions.Modify or the path's allocate privilege. */
function requirePermModify(ctx: RequestContext, path: string, allocate: string): void {
  const privileges = ['Permissions.Modify', allocate];
  if (!hasAnyPrivilege(ctx.principal, path, privileges)) throw new PermissionError(`${path}, ${privileges.join('|')}`);
}

/** `POST /pools` (`create_pool`): synchronous, no task. */
export function createPool(ctx: RequestContext): HandlerResult {
  const poolid = param(ctx, 'poolid');
  underUserConfigLock('create pool failed', () => {
    if (ctx.sim.pools.has(poolid)) throw new DieError(`pool '${poolid}' already exists`);
    const nested = /^(.*)\/([^/]+)$/.exec(poolid);
    if (nested) {
      const parent = nested[1] as string;
      if (!ctx.sim.pools.has(parent)) throw new DieError(`parent '${parent}' of pool '${poolid}' does not exist`);
      if (!/^[A-Za-z]/.test(nested[2] as string)) throw new DieError('pool name must start with a letter');
    } else if (!/^[A-Za-z]/.test(poolid)) {
      throw new DieError('pool name must start with a letter');
    }
    const comment = ctx.params.comment;
    // `if $param->{comment}`: an empty comment (or `0`) is not stored.
    ctx.sim.pools.set(poolid, { poolid, ...(comment && comment !== '0' ? { comment } : {}), vmids: new Set(), storage: new Set() });
  });
  return { data: null };
}

/** `PUT /pools` (`update_pool`) and its deprecated `PUT /pools/{poolid}`: comment, guests, storages. */
export function updatePool(ctx: RequestContext): HandlerResult {
  const poolid = param(ctx, 'poolid');
  underUserConfigLock('update pools failed', () => {
    const pool = ctx.sim.pools.get(poolid);
    if (!pool) throw new DieError(`pool '${poolid}' does not exist`);
    // Worked on copies and written at the end, like `cfs_write_file` after the loop.
    const comment = ctx.params.comment;
    const vmids = new Set(pool.vmids);
    const storage = new Set(pool.storage);
    const moved = new Map<number, string>();
    const remove = flag(ctx, 'delete');
    if (ctx.params.vms !== undefined) {
      for (const item of splitList(ctx.params.vms)) {
        const vmid = Number(item);
        requirePermModify(ctx, `/vms/${item}`, 'VM.Allocate');
        if (remove) {
          if (!vmids.has(vmid)) throw new DieError(`VM ${item} is not a pool member`);
          vmids.delete(vmid);
        } else {
          if (vmids.has(vmid)) throw new DieError(`VM ${item} is already a pool member`);
          const existing = moved.get(vmid) ?? ctx.sim.poolOf(vmid);
          if (existing !== undefined) {
            if (!flag(ctx, 'allow-move'))
              throw new DieError(`VM ${item} belongs already to pool '${existing}' and 'allow-move' is not set`);
            requirePrivilege(ctx.principal, `/pool/${existing}`, 'Pool.Allocate');
            moved.set(vmid, existing);
          }
          vmids.add(vmid);
        }
      }
    }
    if (ctx.params.storage !== undefined) {
      for (const id of splitList(ctx.params.storage)) {
        requirePermModify(ctx, `/storage/${id}`, 'Datastore.Allocate');
        if (remove) {
          if (!storage.has(id)) throw new DieError(`Storage '${id}' is not a pool member`);
          storage.delete(id);
        } else {
          if (storage.has(id)) throw new DieError(`Storage '${id}' is already a pool member`);
          storage.add(id);
        }
      }
    }
    if (comment !== undefined) {
      if (comment === '') delete pool.comment;
      else pool.comment = comment;
    }
    for (const [vmid, from] of moved) ctx.sim.pools.get(from)?.vmids.delete(vmid);
    const touched = new Set([...pool.vmids, ...vmids].filter((v) => pool.vmids.has(v) !== vmids.has(v)));
    pool.vmids = vmids;
    pool.storage = storage;
    for (const vmid of touched) ctx.sim.guests.get(vmid)?.touch();
  });
  return { data: null };
}

/** `DELETE /pools?poolid=` (`delete_pool`) and its deprecated `DELETE /pools/{poolid}`: only an empty pool. */
export function deletePool(ctx: RequestContext): HandlerResult {
  const poolid = param(ctx, 'poolid');
  underUserConfigLock('delete pool failed', () => {
    const pool = ctx.sim.pools.get(poolid);
    if (!pool) throw new DieError(`pool '${poolid}' does not exist`);
    // Perl's `sort keys`: string order, VMIDs included.
    for (const sub of [...ctx.sim.pools.keys()].filter((id) => /^(.*)\/[^/]+$/.exec(id)?.[1] === poolid).sort()) {
      throw new DieError(`pool '${poolid}' is not empty (contains pool '${sub}')`);
    }
    for (const vmid of [...pool.vmids].map(String).sort()) {
      if (!ctx.sim.guests.has(Number(vmid))) continue; // ignore destroyed guests
      throw new DieError(`pool '${poolid}' is not empty (contains VM ${vmid})`);
    }
    for (const id of [...pool.storage].sort()) {
      if (!ctx.sim.volumes.storage(id)) continue;
      throw new DieError(`pool '${poolid}' is not empty (contains storage '${id}')`);
    }
    ctx.sim.pools.delete(poolid);
  });
  return { data: null };
}
