/**
 * The pool kind's handlers: `GET /pools` and `GET /pools/{poolid}` (pve-manager `API2/Pool.pm`,
 * `index` and `read_pool`), and whether a token sees a guest's pool in `/cluster/resources`.
 * What a token sees follows the same privileges as everywhere else (docs/proxmox-behaviour.md).
 */
import { canSeeGuest, hasPrivilege } from '../../auth.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
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
